// Package redact removes configured secrets (API keys and secret header
// values) from text that came from an upstream, before that text is cut to
// a message length, shown to a client, logged or stored. A hostile or
// careless upstream can echo the key it was sent; everything FreeLane
// derives from an upstream's answer therefore passes through one Redactor
// that knows every secret currently configured.
package redact

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
)

// MinLen is the shortest secret used as a pattern. Shorter ones are too
// likely to occur in ordinary text: a test key "k" would otherwise turn
// every "k" of a message into a marker, which mangles the message without
// protecting anything worth protecting.
const MinLen = 8

// Replacement texts, by kind of secret.
const (
	KeyMarker    = "[redacted key]"
	SecretMarker = "[redacted]"
)

// Secret is one value to remove and what to put in its place.
type Secret struct {
	Value  string
	Marker string
}

// Key is a secret that is an API key.
func Key(v string) Secret { return Secret{Value: v, Marker: KeyMarker} }

// Header is a secret that is the value of a configured request header.
func Header(v string) Secret { return Secret{Value: v, Marker: SecretMarker} }

// Redactor replaces the secrets it knows. The set is replaced as a whole
// by Set, after every configuration change, while requests redact
// concurrently; the zero value and a nil Redactor know no secret.
type Redactor struct {
	p atomic.Pointer[patterns]
}

type patterns struct {
	r *strings.Replacer
	// values are the secrets, longest first. Text that holds none of them,
	// which is nearly all text, is found so with one strings.Index per
	// secret, which allocates nothing and is faster than the replacer.
	values []string
	raw    [][]byte
}

// New returns a Redactor that knows secrets.
func New(secrets ...Secret) *Redactor {
	r := &Redactor{}
	r.Set(secrets)
	return r
}

// Set replaces the known secrets. Values shorter than MinLen are ignored,
// and when one secret contains another the longer one is replaced whole.
func (r *Redactor) Set(secrets []Secret) {
	seen := map[string]bool{}
	var use []Secret
	for _, s := range secrets {
		if len(s.Value) < MinLen || seen[s.Value] {
			continue
		}
		seen[s.Value] = true
		use = append(use, s)
	}
	if len(use) == 0 {
		r.p.Store(nil)
		return
	}
	// strings.Replacer tries the pairs in argument order at each position,
	// so the longest secret must come first.
	slices.SortFunc(use, func(a, b Secret) int {
		return cmp.Or(cmp.Compare(len(b.Value), len(a.Value)), strings.Compare(a.Value, b.Value))
	})
	p := &patterns{}
	pairs := make([]string, 0, 2*len(use))
	for _, s := range use {
		pairs = append(pairs, s.Value, s.Marker)
		p.values = append(p.values, s.Value)
		p.raw = append(p.raw, []byte(s.Value))
	}
	p.r = strings.NewReplacer(pairs...)
	r.p.Store(p)
}

func (r *Redactor) patterns() *patterns {
	if r == nil {
		return nil
	}
	return r.p.Load()
}

// maybe reports whether s contains a secret.
func (p *patterns) maybe(s string) bool {
	for _, v := range p.values {
		if strings.Contains(s, v) {
			return true
		}
	}
	return false
}

func (p *patterns) maybeBytes(b []byte) bool {
	for _, v := range p.raw {
		if bytes.Contains(b, v) {
			return true
		}
	}
	return false
}

// String returns s with every known secret replaced by its marker.
func (r *Redactor) String(s string) string {
	p := r.patterns()
	if p == nil || !p.maybe(s) {
		return s
	}
	return p.r.Replace(s)
}

// Bytes returns b with every known secret replaced, also inside JSON
// strings that spell it with escapes ("\u0073k-..."), which a client's JSON
// parser would turn back into the secret. It returns b itself when nothing
// was replaced.
func (r *Redactor) Bytes(b []byte) []byte {
	p := r.patterns()
	if p == nil || len(b) == 0 {
		return b
	}
	out := b
	if p.maybeBytes(b) {
		out = []byte(p.r.Replace(string(b)))
	}
	if bytes.IndexByte(out, '\\') >= 0 {
		if j, ok := redactJSON(p, out); ok {
			out = j
		}
	}
	return out
}

// redactJSON decodes a JSON document, redacts its strings (keys included)
// and encodes it again, reporting whether anything changed. Only escaped
// text can still hold a secret here, which is rare, so the cost of a
// decode and encode is only paid on error bodies that have escapes.
func redactJSON(p *patterns, b []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil, false
	}
	changed := false
	v = walk(p, v, &changed)
	if !changed {
		return nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return nil, false
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), true
}

func walk(p *patterns, v any, changed *bool) any {
	switch x := v.(type) {
	case string:
		if t := p.r.Replace(x); t != x {
			*changed = true
			return t
		}
	case []any:
		for i := range x {
			x[i] = walk(p, x[i], changed)
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if t := p.r.Replace(k); t != k {
				*changed = true
				k = t
			}
			out[k] = walk(p, e, changed)
		}
		return out
	}
	return v
}
