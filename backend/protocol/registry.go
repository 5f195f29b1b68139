package protocol

import (
	"fmt"
	"slices"

	"freelane/backend/llm"
)

// Dialect is one wire format as the rest of FreeLane sees it. Its package
// provides it as a single value; everything vendor-specific that code
// outside backend/protocol needs (how answers are converted, and the parts
// added beside the codec) is reached through it, so that adding a dialect
// is a package and one line in the composition root's registry.
//
// To add one: write a package under backend/protocol with a Codec (both
// directions: requests, answers, streams, errors), an Inbound if clients
// speak it (its routes under a path prefix and the header its clients send
// their key in; every other field may stay zero), an Outbound and a Kind
// if upstreams speak it (the wire's paths, headers, error classification
// and answer check; a model-list reader and rate-limit headers are
// optional), and add its Dialect to backend/dialects. backend/internal/toy
// is a complete small example; the conformance table in backend/upstream
// runs every registered dialect as a client of every upstream dialect and
// as an upstream for every client, relayed and translated, streamed and
// not, and backend/gateway's toy test serves a toy client through the
// real server.
type Dialect struct {
	// Codec converts requests, answers, streams and errors both ways.
	Codec Codec
	// Kind is the provider kind a configuration names for upstreams of
	// this dialect ("openai", "anthropic"); empty when no upstream is
	// configured to speak it.
	Kind string
	// Inbound is how the dialect's clients call FreeLane; nil for a
	// dialect spoken only by upstreams.
	Inbound *Inbound
	// Outbound is how upstreams of this dialect are called: their wire,
	// model list and rate-limit headers. A dialect with a Kind needs its
	// Wire.
	Outbound Outbound
}

// Name is the dialect's name in the neutral model.
func (d Dialect) Name() llm.Dialect { return d.Codec.Dialect() }

// Registry holds the dialects FreeLane speaks. It is built once, by the
// composition root, and read concurrently afterwards.
type Registry struct {
	all    []Dialect
	byName map[llm.Dialect]int
	byKind map[string]int
}

// NewRegistry returns a registry of the dialects, in the order given: the
// order in which a request's dialect is looked for where several could
// claim it. Two dialects with the same name or provider kind are a
// programming error and panic.
func NewRegistry(ds ...Dialect) *Registry {
	r := &Registry{byName: map[llm.Dialect]int{}, byKind: map[string]int{}}
	for _, d := range ds {
		if d.Codec == nil {
			panic("protocol: a dialect without a codec")
		}
		if _, dup := r.byName[d.Name()]; dup {
			panic(fmt.Sprintf("protocol: dialect %q registered twice", d.Name()))
		}
		r.byName[d.Name()] = len(r.all)
		if d.Kind != "" {
			if d.Outbound.Wire == nil {
				panic(fmt.Sprintf("protocol: provider kind %q without an outbound wire", d.Kind))
			}
			if _, dup := r.byKind[d.Kind]; dup {
				panic(fmt.Sprintf("protocol: provider kind %q registered twice", d.Kind))
			}
			r.byKind[d.Kind] = len(r.all)
		}
		r.all = append(r.all, d)
	}
	return r
}

// Dialects lists the registered dialects in registration order. The slice
// is the caller's.
func (r *Registry) Dialects() []Dialect { return slices.Clone(r.all) }

// Lookup finds a dialect by its name.
func (r *Registry) Lookup(name llm.Dialect) (Dialect, bool) {
	i, ok := r.byName[name]
	if !ok {
		return Dialect{}, false
	}
	return r.all[i], true
}

// Codec finds a dialect's codec by its name; ok is false for a dialect
// that is not registered.
func (r *Registry) Codec(name llm.Dialect) (c Codec, ok bool) {
	d, ok := r.Lookup(name)
	return d.Codec, ok
}

// ByKind finds the dialect upstreams of a provider kind speak.
func (r *Registry) ByKind(kind string) (Dialect, bool) {
	i, ok := r.byKind[kind]
	if !ok {
		return Dialect{}, false
	}
	return r.all[i], true
}

// Kinds lists the provider kinds, in registration order.
func (r *Registry) Kinds() []string {
	var out []string
	for _, d := range r.all {
		if d.Kind != "" {
			out = append(out, d.Kind)
		}
	}
	return out
}

// Request is a request FreeLane makes itself (a probe, a key check, a
// route test) in the named dialect: the conversation written by the
// dialect's own encoder and parsed back, so that it travels as a client's
// request of that dialect would, relayed to upstreams of the same dialect
// and translated for the rest.
func (r *Registry) Request(name llm.Dialect, c *llm.Conversation, model string) (*llm.Request, error) {
	codec, ok := r.Codec(name)
	if !ok {
		return nil, fmt.Errorf("protocol: no dialect %q", name)
	}
	body, err := codec.EncodeRequest(c, model, llm.Edits{})
	if err != nil {
		return nil, fmt.Errorf("protocol: writing a %s request: %w", name, err)
	}
	req, err := codec.ParseRequest(llm.Chat, body)
	if err != nil {
		return nil, fmt.Errorf("protocol: reading back a %s request: %w", name, err)
	}
	if req.Model == "" {
		// A dialect that names the model in the path, not the body.
		req.Model = model
	}
	return req, nil
}

// AskOK is the cheapest useful question, asked by probes and key checks:
// a few tokens of output.
func AskOK() *llm.Conversation {
	zero := 0.0
	return &llm.Conversation{
		Messages:    []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "Reply with the word OK."}}}},
		MaxOutput:   5,
		Temperature: &zero,
	}
}
