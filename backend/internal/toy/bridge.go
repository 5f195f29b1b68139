package toy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/openai"
	"freelane/backend/sse"
)

// Bridge is a toy upstream for tests: it serves POST /talk by translating
// each request to OpenAI's chat completions, sending it to an OpenAI-style
// server at base (the fake vendor, whose scripted behaviours then apply),
// and translating what comes back, event by event, with the toy codec.
// Statuses and headers pass through, a broken connection breaks the toy
// connection too, and a stream without its end marker ends without fin, so
// that every behaviour of the fake vendor reaches the toy's client in the
// toy's own form.
func Bridge(base string, client *http.Client) http.Handler {
	if client == nil {
		client = &http.Client{}
	}
	return &bridge{base: strings.TrimRight(base, "/"), http: client}
}

type bridge struct {
	base string
	http *http.Client
}

func (b *bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/talk" {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	req, err := Codec.ParseRequest(llm.Chat, body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(Codec.EncodeError(protocol.ErrorInfo{Status: http.StatusBadRequest, Message: err.Error()}))
		return
	}
	conv, _ := req.Conversation()
	out, err := openai.Codec.EncodeRequest(conv, req.Model, llm.Edits{AddUsage: req.Stream})
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	up, err := http.NewRequestWithContext(r.Context(), http.MethodPost, b.base+"/chat/completions", bytes.NewReader(out))
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	openai.Codec.Header(up.Header, r.Header.Get(KeyHeader))
	resp, err := b.http.Do(up)
	if err != nil {
		// The vendor's connection broke or never answered: so does this one.
		panic(http.ErrAbortHandler)
	}
	defer func() { _ = resp.Body.Close() }()
	for k, v := range resp.Header {
		if k != "Content-Length" && k != "Content-Type" {
			w.Header()[k] = v
		}
	}
	if resp.StatusCode/100 != 2 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		info, ok := openai.Codec.DecodeError(raw)
		if !ok {
			info = protocol.ErrorInfo{Message: string(raw)}
		}
		info.Status = resp.StatusCode
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(Codec.EncodeError(info))
		return
	}
	if !req.Stream {
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		a, err := openai.Codec.DecodeResponse(raw)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"out":`))
			return
		}
		enc, _ := Codec.EncodeResponse(a, protocol.ResponseOptions{ID: a.ID, Model: a.Model})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(enc)
		return
	}
	b.stream(w, resp)
}

func (b *bridge) stream(w http.ResponseWriter, resp *http.Response) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	rd := sse.NewReader(resp.Body, 1<<20)
	dec := openai.Codec.NewStreamDecoder()
	enc := Codec.NewStreamEncoder(protocol.ResponseOptions{})
	var deltas []llm.Delta
	var evs []llm.Event
	write := func(data []byte) {
		_, _ = w.Write([]byte("data: "))
		_, _ = w.Write(data)
		_, _ = w.Write([]byte("\n\n"))
		_ = rc.Flush()
	}
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			// The vendor ended without its end marker: so does the toy.
			return
		}
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		ds, end, err := dec.Decode(deltas[:0], ev.Name, ev.Data)
		deltas = ds
		var le *llm.Error
		switch {
		case errors.Is(err, protocol.ErrMalformed):
			write([]byte(`{"say":`))
			continue
		case errors.As(err, &le):
			status := http.StatusInternalServerError
			if le.Class == llm.RateLimited {
				status = http.StatusTooManyRequests
			}
			write(Codec.EncodeError(protocol.ErrorInfo{Status: status, Code: le.Code, Message: le.Message}))
			return
		case err != nil:
			panic(http.ErrAbortHandler)
		}
		evs = evs[:0]
		for _, d := range deltas {
			evs = enc.Encode(evs, d)
		}
		if end {
			evs = enc.End(evs)
		}
		for _, e := range evs {
			write(e.Data)
		}
		if end {
			_, _ = w.Write(Codec.StreamEnd())
			_ = rc.Flush()
			return
		}
	}
}
