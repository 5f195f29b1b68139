package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/responses"
	"freelane/backend/router"
	"freelane/backend/store"
)

// ResponseStore keeps the Responses API answers clients ask to store, for
// previous_response_id and GET /v1/responses/{id}. Put must not block on
// disk: it runs on the request path. Get finds a response only for the
// owner it was stored for (the caller's identity, callerIdentity).
type ResponseStore interface {
	Put(r store.StoredResponse) error
	Get(ctx context.Context, id, owner string) (store.StoredResponse, bool, error)
}

// Redactor removes the configured secrets from text FreeLane keeps: an
// upstream may echo a key into its answer, and a client may paste one into
// its input. Bytes returns b itself when it holds none.
type Redactor interface {
	Bytes(b []byte) []byte
}

// Response ids are FreeLane's: each request gets one minted here
// (responses.NewResponseID), which replaces whatever id the answer came
// with, in the whole body and in every stream event that carries it, on
// every path (translated from another dialect, or relayed from an upstream
// of this one). What is stored is filed under it. No upstream id is kept
// or sent anywhere: FreeLane keeps the conversation itself, and a request
// naming a previous_response_id is sent upstream as the whole conversation.

// responsesCreate serves POST /v1/responses: the request, continued from
// the stored conversation it names, goes through the router like any other
// chat request, and the answer is stored when the client asks.
func (s *Server) responsesCreate(w http.ResponseWriter, r *http.Request) {
	held, ok := s.requestBody(w, r)
	if !ok {
		return
	}
	defer held.release()
	req, err := responses.Codec.ParseRequest(llm.Chat, held.data)
	if err != nil {
		writeBadRequest(w, responses.Codec, err)
		return
	}
	src, _ := responses.SourceOf(req)
	owner := s.callerIdentity(r)
	var history []byte
	if prev := src.PreviousResponseID(); prev != "" {
		if req, history, ok = s.continued(w, r, req, prev, owner); !ok {
			return
		}
	}
	id := responses.NewResponseID()
	var keep *keeper
	if src.Store() && s.o.Responses != nil {
		keep = &keeper{s: s, id: id, owner: owner, history: history, input: src.InputItems()}
	}
	if src.CompactionTriggered() {
		s.compactionTurn(w, r, req, id, keep)
		return
	}
	if req.Stream {
		sink := &responsesSink{sseSink: sseSink{w: w, rc: http.NewResponseController(w), codec: responses.Codec},
			id: id, keep: keep, st: responses.FailState{ID: id}}
		if f := s.o.Router.Stream(r.Context(), req, sink); f != nil {
			s.fail(w, responses.Codec, f)
		}
		return
	}
	res, f := s.o.Router.Complete(r.Context(), req)
	if f != nil {
		s.fail(w, responses.Codec, f)
		return
	}
	body := responses.SetID(res.Response.Body, id)
	// Stored first: a client may send its next turn, naming this
	// response, the moment it has read the answer.
	keep.answer(body)
	writeAnswer(w, res, body)
}

// writeAnswer writes a routed answer with FreeLane's headers.
func writeAnswer(w http.ResponseWriter, res *router.Result, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-FreeLane-Request-Id", res.ID)
	h.Set("X-FreeLane-Backend", res.Backend.Name())
	h.Set("X-FreeLane-Attempts", router.AttemptsHeader(res.Attempts))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// continued finds the stored conversation a request continues and puts it
// before the request's input, or answers 404 as OpenAI does for an id it
// does not know. A response stored by another caller (owner) is answered
// the same, so its existence is not told.
func (s *Server) continued(w http.ResponseWriter, r *http.Request, req *llm.Request, id, owner string) (*llm.Request, []byte, bool) {
	var st store.StoredResponse
	found := false
	if s.o.Responses != nil {
		var err error
		st, found, err = s.o.Responses.Get(r.Context(), id, owner)
		if err != nil {
			s.o.Logger.Error("reading a stored response failed", "err", err)
			writeError(w, responses.Codec, protocol.ErrorInfo{Status: http.StatusInternalServerError, Type: "server_error",
				Code: "store_failed", Message: "the stored conversation could not be read; send the whole conversation instead of previous_response_id"})
			return nil, nil, false
		}
	}
	if !found {
		writeError(w, responses.Codec, protocol.ErrorInfo{Status: http.StatusNotFound, Type: "invalid_request_error",
			Code: "previous_response_not_found", Param: "previous_response_id",
			Message: fmt.Sprintf("Previous response with id '%s' not found.", id)})
		return nil, nil, false
	}
	out, err := responses.WithHistory(req, st.Items)
	if err != nil {
		writeBadRequest(w, responses.Codec, err)
		return nil, nil, false
	}
	return out, st.Items, true
}

// responsesSocket answers a client that asks for the Responses API over a
// WebSocket (Codex does, when it takes FreeLane for OpenAI itself) with 426:
// FreeLane serves it over HTTP only, and the status tells the client to use
// that at once rather than retry the upgrade.
func (s *Server) responsesSocket(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		s.unknownEndpoint(w, r)
		return
	}
	writeError(w, responses.Codec, protocol.ErrorInfo{Status: http.StatusUpgradeRequired, Type: "invalid_request_error",
		Code: "websocket_not_supported", Message: "FreeLane serves the Responses API over HTTP only: POST /v1/responses, streamed as server-sent events"})
}

// responsesGet serves GET /v1/responses/{id}: a stored response as the
// client got it (with the configured secrets redacted), to the caller that
// created it; to anyone else it is an unknown id.
func (s *Server) responsesGet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if len(id) > responses.MaxIDLength {
		writeError(w, responses.Codec, protocol.ErrorInfo{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Code: "invalid_request", Param: "response_id", Message: fmt.Sprintf("response ids have at most %d bytes", responses.MaxIDLength)})
		return
	}
	var st store.StoredResponse
	found := false
	if s.o.Responses != nil {
		var err error
		if st, found, err = s.o.Responses.Get(r.Context(), id, s.callerIdentity(r)); err != nil {
			s.o.Logger.Error("reading a stored response failed", "err", err)
			writeError(w, responses.Codec, protocol.ErrorInfo{Status: http.StatusInternalServerError, Type: "server_error",
				Code: "store_failed", Message: "the stored response could not be read"})
			return
		}
	}
	if !found {
		writeError(w, responses.Codec, protocol.ErrorInfo{Status: http.StatusNotFound, Type: "invalid_request_error",
			Code: "response_not_found", Message: fmt.Sprintf("Response with id '%s' not found.", id)})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(st.Response)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(st.Response)
}

// responsesCompact serves POST /v1/responses/compact, Codex's compaction:
// no backend has such an endpoint, so a summary of the conversation is
// asked of the chain like any answer, and the client gets its user messages
// and one compaction item holding the summary, which it sends back as the
// start of its next turns.
func (s *Server) responsesCompact(w http.ResponseWriter, r *http.Request) {
	held, ok := s.requestBody(w, r)
	if !ok {
		return
	}
	defer held.release()
	req, err := responses.ParseCompact(held.data)
	if err != nil {
		writeBadRequest(w, responses.Codec, err)
		return
	}
	src, _ := responses.SourceOf(req)
	if prev := src.PreviousResponseID(); prev != "" {
		if req, _, ok = s.continued(w, r, req, prev, s.callerIdentity(r)); !ok {
			return
		}
	}
	sum, err := responses.CompactRequest(req)
	if err != nil {
		writeBadRequest(w, responses.Codec, err)
		return
	}
	res, f := s.o.Router.Complete(r.Context(), sum)
	if f != nil {
		s.fail(w, responses.Codec, f)
		return
	}
	body, err := responses.CompactAnswer(req, res.Response.Body, s.o.Clock.Now().Unix())
	if err != nil {
		writeError(w, responses.Codec, protocol.ErrorInfo{Status: http.StatusBadGateway, Type: "upstream_error",
			Code: "compaction_failed", Message: err.Error()})
		return
	}
	writeAnswer(w, res, body)
}

// compactionTurn answers a turn whose input ends with a compaction_trigger
// item, Codex's newer way to compact: the summary is asked of the chain as
// for /v1/responses/compact, and the answer, streamed or whole, has the one
// compaction item Codex expects.
func (s *Server) compactionTurn(w http.ResponseWriter, r *http.Request, req *llm.Request, id string, keep *keeper) {
	sum, err := responses.CompactRequest(req)
	if err != nil {
		writeBadRequest(w, responses.Codec, err)
		return
	}
	res, f := s.o.Router.Complete(r.Context(), sum)
	if f != nil {
		s.fail(w, responses.Codec, f)
		return
	}
	body, events, err := responses.CompactionTurn(res.Response.Body, protocol.ResponseOptions{ID: id, Model: req.Model, Created: s.o.Clock.Now().Unix()})
	if err != nil {
		writeError(w, responses.Codec, protocol.ErrorInfo{Status: http.StatusBadGateway, Type: "upstream_error",
			Code: "compaction_failed", Message: err.Error()})
		return
	}
	keep.answer(body)
	if !req.Stream {
		writeAnswer(w, res, body)
		return
	}
	sink := &sseSink{w: w, rc: http.NewResponseController(w), codec: responses.Codec}
	if err := sink.Commit(res.ID, res.Backend, res.Attempts); err != nil {
		return
	}
	for i, ev := range events {
		if err := sink.Send(ev, i == len(events)-1); err != nil {
			return
		}
	}
}

// keeper stores a response once it is complete, under the id FreeLane
// minted for it and for the caller that asked. A nil keeper stores nothing.
type keeper struct {
	s     *Server
	id    string
	owner string
	// history is the stored conversation the request continued, redacted
	// with the secrets configured when it was stored.
	history []byte
	input   []byte
}

// answer stores a complete Response object, which already carries k.id
// (SetID, SetEventID). The object and the conversation pass through the
// Redactor first: an upstream may have echoed a key into its answer, and
// nothing holding one is kept.
func (k *keeper) answer(resp []byte) {
	if k == nil {
		return
	}
	i := jsonscan.SkipSpace(resp, 0)
	if i >= len(resp) || resp[i] != '{' || !json.Valid(resp) {
		return
	}
	var output []byte
	jsonscan.EachMember(resp, i, func(key []byte, vs, ve int) bool {
		if string(key) == "output" {
			output = resp[vs:ve]
		}
		return true
	})
	input := k.input
	resp = bytes.Clone(resp)
	if red := k.s.o.Redactor; red != nil {
		// The history was redacted when it was stored, so only this
		// turn's parts are: redacting the whole conversation again would
		// cost every turn as much as all the turns before it.
		resp, input, output = red.Bytes(resp), red.Bytes(input), red.Bytes(output)
	}
	items := joinArrays(k.history, input, output)
	err := k.s.o.Responses.Put(store.StoredResponse{ID: k.id, Owner: k.owner, Created: k.s.o.Clock.Now(), Response: resp, Items: items})
	if err != nil {
		// The answer reached the client; only continuing it by id is lost.
		k.s.o.Logger.Warn("response not stored", "id", k.id, "err", err)
	}
}

// joinArrays joins JSON arrays into one.
func joinArrays(arrays ...[]byte) []byte {
	n := 2
	for _, a := range arrays {
		n += len(a)
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for _, a := range arrays {
		a = bytes.TrimSpace(a)
		if len(a) < 2 || a[0] != '[' {
			continue
		}
		inner := bytes.TrimSpace(a[1 : len(a)-1])
		if len(inner) == 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, inner...)
	}
	return append(out, ']')
}

// responsesSink is the stream writer of a Responses client. It gives every
// event that carries the response FreeLane's id for it, follows the
// stream's model and sequence numbers, so a stream broken after it started
// ends with response.failed and an error event that continue it, and it
// stores the response from response.completed.
type responsesSink struct {
	sseSink
	id      string
	keep    *keeper
	st      responses.FailState
	started bool
}

func (s *responsesSink) Send(data []byte, flush bool) error {
	name := responses.Codec.EventName(data)
	// Only the id's bytes change, and only in the few events that carry
	// the response; the deltas go out as they came.
	data = responses.SetEventID(name, data, s.id)
	if !s.started || s.keep != nil {
		s.watch(name, data)
	}
	s.st.Seq++
	return s.sseSink.sendNamed(name, data, flush)
}

// watch reads the response's model and creation time from its first
// event and stores the response from its last.
func (s *responsesSink) watch(name string, data []byte) {
	switch name {
	case "response.created":
		var ev struct {
			SequenceNumber int `json:"sequence_number"`
			Response       struct {
				Model     string `json:"model"`
				CreatedAt int64  `json:"created_at"`
			} `json:"response"`
		}
		if json.Unmarshal(data, &ev) == nil {
			s.started = true
			s.st = responses.FailState{ID: s.id, Model: ev.Response.Model, Created: ev.Response.CreatedAt, Seq: ev.SequenceNumber}
		}
	case "response.completed", "response.incomplete":
		if s.keep == nil {
			return
		}
		i := jsonscan.SkipSpace(data, 0)
		jsonscan.EachMember(data, i, func(k []byte, vs, ve int) bool {
			if string(k) == "response" {
				s.keep.answer(data[vs:ve])
				return false
			}
			return true
		})
	}
}

func (s *responsesSink) Fail(e *llm.Error) {
	info := protocol.ErrorInfo{
		Status:  http.StatusBadGateway,
		Type:    "server_error",
		Code:    "stream_interrupted",
		Message: "the upstream stream failed after it had started, so the answer is incomplete: " + e.Message,
	}
	evs := responses.FailureEvents(s.st, info)
	for i, ev := range evs {
		if err := s.sseSink.Send(ev, i == len(evs)-1); err != nil {
			return
		}
	}
}
