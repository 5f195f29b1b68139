package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// inbound is how clients of the Responses API (Codex, the OpenAI SDKs'
// responses) call FreeLane. Its routes are served by this package's own
// handlers: FreeLane keeps the conversations clients continue by
// previous_response_id, and answers Codex's compaction.
var inbound = &protocol.Inbound{
	Prefixes: []string{"/v1/"},
	Routes: []protocol.Route{
		{Pattern: "POST /v1/responses", Serve: create, Listed: "/v1/responses"},
		{Pattern: "POST /v1/responses/compact", Serve: compact},
		{Pattern: "GET /v1/responses/{id}", Serve: get},
		// A refusal that routes nothing, so it is given while paused too.
		{Pattern: "GET /v1/responses", Serve: socket, WhilePaused: true},
	},
	Claims:     claims,
	KeyHeaders: []protocol.KeyHeader{{Name: "Authorization", Scheme: "Bearer"}},
	ErrorTypes: true,
}

// claims reports whether r is a call of the Responses API, by its path.
func claims(r *http.Request) bool {
	p := r.URL.Path
	return p == "/v1/responses" || strings.HasPrefix(p, "/v1/responses/")
}

// Response ids are FreeLane's: each request gets one minted here
// (NewResponseID), which replaces whatever id the answer came with, in the
// whole body and in every stream event that carries it, on every path
// (translated from another dialect, or relayed from an upstream of this
// one). What is stored is filed under it. No upstream id is kept or sent
// anywhere: FreeLane keeps the conversation itself, and a request naming a
// previous_response_id is sent upstream as the whole conversation.

// create serves POST /v1/responses: the request, continued from the stored
// conversation it names, is routed like any other chat request, and the
// answer is stored when the client asks.
func create(h protocol.Host, w http.ResponseWriter, r *http.Request) {
	body, release, ok := h.Body(w, r)
	if !ok {
		return
	}
	defer release()
	req, err := Codec.ParseRequest(llm.Chat, body)
	if err != nil {
		protocol.WriteError(w, Codec, protocol.RequestError(err))
		return
	}
	src, _ := SourceOf(req)
	owner := h.Caller(r)
	var history []byte
	if prev := src.PreviousResponseID(); prev != "" {
		if req, history, ok = continued(h, w, r, req, prev, owner); !ok {
			return
		}
	}
	id := NewResponseID()
	var keep *keeper
	if store := h.Answers(); src.Store() && store != nil {
		keep = &keeper{store: store, id: id, owner: owner, history: history, input: src.InputItems()}
	}
	if src.CompactionTriggered() {
		compactionTurn(h, w, r, req, id, keep)
		return
	}
	if req.Stream {
		h.Stream(w, r, req, &relay{id: id, keep: keep, st: FailState{ID: id}})
		return
	}
	a, ok := h.Complete(w, r, req)
	if !ok {
		return
	}
	out := SetID(a.Body(), id)
	// Stored first: a client may send its next turn, naming this
	// response, the moment it has read the answer.
	keep.answer(out)
	a.Reply(w, out)
}

// continued finds the stored conversation a request continues and puts it
// before the request's input, or answers 404 as OpenAI does for an id it
// does not know. A response stored by another caller (owner) is answered
// the same, so its existence is not told.
func continued(h protocol.Host, w http.ResponseWriter, r *http.Request, req *llm.Request, id, owner string) (*llm.Request, []byte, bool) {
	var st protocol.StoredAnswer
	found := false
	if store := h.Answers(); store != nil {
		var err error
		if st, found, err = store.Get(r.Context(), id, owner); err != nil {
			protocol.WriteError(w, Codec, protocol.ErrorInfo{Status: http.StatusInternalServerError, Type: "server_error",
				Code: "store_failed", Message: "the stored conversation could not be read; send the whole conversation instead of previous_response_id"})
			return nil, nil, false
		}
	}
	if !found {
		protocol.WriteError(w, Codec, protocol.ErrorInfo{Status: http.StatusNotFound, Type: "invalid_request_error",
			Code: "previous_response_not_found", Param: "previous_response_id",
			Message: fmt.Sprintf("Previous response with id '%s' not found.", id)})
		return nil, nil, false
	}
	out, err := WithHistory(req, st.Items)
	if err != nil {
		protocol.WriteError(w, Codec, protocol.RequestError(err))
		return nil, nil, false
	}
	return out, st.Items, true
}

// socket answers a client that asks for the Responses API over a
// WebSocket (Codex does, when it takes FreeLane for OpenAI itself) with
// 426: FreeLane serves it over HTTP only, and the status tells the client
// to use that at once rather than retry the upgrade.
func socket(h protocol.Host, w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		h.NotFound(w, r)
		return
	}
	protocol.WriteError(w, Codec, protocol.ErrorInfo{Status: http.StatusUpgradeRequired, Type: "invalid_request_error",
		Code: "websocket_not_supported", Message: "FreeLane serves the Responses API over HTTP only: POST /v1/responses, streamed as server-sent events"})
}

// get serves GET /v1/responses/{id}: a stored response as the client got
// it (with the configured secrets redacted), to the caller that created
// it; to anyone else it is an unknown id.
func get(h protocol.Host, w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if len(id) > MaxIDLength {
		protocol.WriteError(w, Codec, protocol.ErrorInfo{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Code: "invalid_request", Param: "response_id", Message: fmt.Sprintf("response ids have at most %d bytes", MaxIDLength)})
		return
	}
	var st protocol.StoredAnswer
	found := false
	if store := h.Answers(); store != nil {
		var err error
		if st, found, err = store.Get(r.Context(), id, h.Caller(r)); err != nil {
			protocol.WriteError(w, Codec, protocol.ErrorInfo{Status: http.StatusInternalServerError, Type: "server_error",
				Code: "store_failed", Message: "the stored response could not be read"})
			return
		}
	}
	if !found {
		protocol.WriteError(w, Codec, protocol.ErrorInfo{Status: http.StatusNotFound, Type: "invalid_request_error",
			Code: "response_not_found", Message: fmt.Sprintf("Response with id '%s' not found.", id)})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(st.Response)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(st.Response)
}

// compact serves POST /v1/responses/compact, Codex's compaction: no
// backend has such an endpoint, so a summary of the conversation is asked
// of the chain like any answer, and the client gets its user messages and
// one compaction item holding the summary, which it sends back as the
// start of its next turns.
func compact(h protocol.Host, w http.ResponseWriter, r *http.Request) {
	body, release, ok := h.Body(w, r)
	if !ok {
		return
	}
	defer release()
	req, err := ParseCompact(body)
	if err != nil {
		protocol.WriteError(w, Codec, protocol.RequestError(err))
		return
	}
	src, _ := SourceOf(req)
	if prev := src.PreviousResponseID(); prev != "" {
		if req, _, ok = continued(h, w, r, req, prev, h.Caller(r)); !ok {
			return
		}
	}
	sum, err := CompactRequest(req)
	if err != nil {
		protocol.WriteError(w, Codec, protocol.RequestError(err))
		return
	}
	a, ok := h.Complete(w, r, sum)
	if !ok {
		return
	}
	out, err := CompactAnswer(req, a.Body(), h.Now().Unix())
	if err != nil {
		protocol.WriteError(w, Codec, protocol.ErrorInfo{Status: http.StatusBadGateway, Type: "upstream_error",
			Code: "compaction_failed", Message: err.Error()})
		return
	}
	a.Reply(w, out)
}

// compactionTurn answers a turn whose input ends with a compaction_trigger
// item, Codex's newer way to compact: the summary is asked of the chain as
// for /v1/responses/compact, and the answer, streamed or whole, has the one
// compaction item Codex expects.
func compactionTurn(h protocol.Host, w http.ResponseWriter, r *http.Request, req *llm.Request, id string, keep *keeper) {
	sum, err := CompactRequest(req)
	if err != nil {
		protocol.WriteError(w, Codec, protocol.RequestError(err))
		return
	}
	a, ok := h.Complete(w, r, sum)
	if !ok {
		return
	}
	body, events, err := CompactionTurn(a.Body(), protocol.ResponseOptions{ID: id, Model: req.Model, Created: h.Now().Unix()})
	if err != nil {
		protocol.WriteError(w, Codec, protocol.ErrorInfo{Status: http.StatusBadGateway, Type: "upstream_error",
			Code: "compaction_failed", Message: err.Error()})
		return
	}
	keep.answer(body)
	if !req.Stream {
		a.Reply(w, body)
		return
	}
	a.ReplyEvents(w, events)
}

// keeper stores a response once it is complete, under the id FreeLane
// minted for it and for the caller that asked. A nil keeper stores nothing.
type keeper struct {
	store protocol.AnswerStore
	id    string
	owner string
	// history is the stored conversation the request continued, redacted
	// with the secrets configured when it was stored.
	history []byte
	input   []byte
}

// answer stores a complete Response object, which already carries k.id
// (SetID, SetEventID). The object and the conversation are redacted first:
// an upstream may have echoed a key into its answer, and nothing holding
// one is kept.
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
	// The history was redacted when it was stored, so only this turn's
	// parts are: redacting the whole conversation again would cost every
	// turn as much as all the turns before it.
	resp = k.store.Redact(bytes.Clone(resp))
	input, output := k.store.Redact(k.input), k.store.Redact(output)
	k.store.Put(protocol.StoredAnswer{ID: k.id, Owner: k.owner, Response: resp, Items: joinArrays(k.history, input, output)})
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

// relay is the stream filter of a Responses client. It gives every event
// that carries the response FreeLane's id for it, follows the stream's
// model and sequence numbers, so a stream broken after it started ends
// with response.failed and an error event that continue it, and it stores
// the response from response.completed.
type relay struct {
	id      string
	keep    *keeper
	st      FailState
	started bool
}

// Event gives the event FreeLane's id. Only the id's bytes change, and
// only in the few events that carry the response; the deltas go out as
// they came.
func (f *relay) Event(name string, data []byte) []byte {
	data = SetEventID(name, data, f.id)
	if !f.started || f.keep != nil {
		f.watch(name, data)
	}
	f.st.Seq++
	return data
}

// watch reads the response's model and creation time from its first
// event and stores the response from its last.
func (f *relay) watch(name string, data []byte) {
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
			f.started = true
			f.st = FailState{ID: f.id, Model: ev.Response.Model, Created: ev.Response.CreatedAt, Seq: ev.SequenceNumber}
		}
	case "response.completed", "response.incomplete":
		if f.keep == nil {
			return
		}
		i := jsonscan.SkipSpace(data, 0)
		jsonscan.EachMember(data, i, func(k []byte, vs, ve int) bool {
			if string(k) == "response" {
				f.keep.answer(data[vs:ve])
				return false
			}
			return true
		})
	}
}

// Fail ends the stream as one of the Responses API breaks: a
// response.failed that continues the stream's own events, then an error.
func (f *relay) Fail(e protocol.ErrorInfo) [][]byte {
	e.Type = "server_error"
	return FailureEvents(f.st, e)
}
