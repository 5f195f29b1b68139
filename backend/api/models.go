package api

import (
	"net/http"
	"strconv"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// The model lists come in each dialect's shape, written by the dialect
// from what the routing table offers. Agents read them to fill their model
// pickers, and some keep only names in their vendor's style, so a dialect
// may list every chain first under a vendor-style name as well
// (Inbound.ChainPrefix), which the router routes to the chain.

// offered is what the routing table offers, for the model lists.
func (s *Server) offered() protocol.Models {
	t := s.o.Router.Table()
	m := protocol.Models{Chains: t.Chains()}
	for _, b := range t.Backends() {
		m.Backends = append(m.Backends, protocol.ModelBackend{Name: b.Name(), Provider: b.ID.Provider, Context: b.Context})
	}
	return m
}

// listModels answers a model list route of dialect d, in the shape of the
// dialect that claims the request: the model list is one path for several
// vendors, told apart by the client's headers.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request, d protocol.Dialect) {
	d = s.answering(r, d, func(in *protocol.Inbound) bool { return in.ListModels != nil })
	writeBody(w, http.StatusOK, d.Inbound.ListModels(s.offered()))
}

// describeModel answers a route of dialect d that describes the model its
// path names, chosen as listModels chooses.
func (s *Server) describeModel(w http.ResponseWriter, r *http.Request, d protocol.Dialect) {
	d = s.answering(r, d, func(in *protocol.Inbound) bool { return in.DescribeModel != nil })
	id := r.PathValue("model")
	if len(id) > llm.MaxModelName {
		e := llm.ModelTooLong(len(id))
		writeIn(w, d, "invalid_request_error", protocol.ErrorInfo{Status: http.StatusBadRequest, Code: e.Code, Message: e.Message, Param: e.Param})
		return
	}
	body, err := d.Inbound.DescribeModel(s.offered(), id)
	if err != nil {
		writeIn(w, d, "invalid_request_error", protocol.RequestError(err))
		return
	}
	writeBody(w, http.StatusOK, body)
}

// writeBody writes a JSON answer.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
