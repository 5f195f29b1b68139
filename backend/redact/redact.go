// Package redact removes configured secrets (API keys and secret header
// values) from text that came from an upstream, before that text is cut to
// a message length, shown to a client, logged or stored. A hostile or
// careless upstream can echo the key it was sent; everything FreeLane
// derives from an upstream's answer therefore passes through one Redactor
// that knows every secret currently configured.
//
// A copy is found however it is spelled: in any letter case, with any of
// its bytes written as a URL escape (%2D, %2d) or a JSON escape (\u002d,
// \/), either of them escaped once more (%252D, \\u002d), with '+' for a
// space, and in base64 (standard or URL alphabet,
// padded or not, at any of the three byte alignments, so a key inside the
// base64 of "user:KEY" is found too). For a secret of 16 characters or
// more, any run of 16 of its consecutive characters counts as a copy;
// shorter secrets count only whole.
//
// How: the text is decoded (escapes undone) and folded (lower case, the
// two base64 alphabets made one) as it is read, and every few bytes the
// last 8 folded bytes are looked up in a bit set of the 8-byte grams of
// the secrets and of their base64 forms. Text with no candidate costs that
// one pass and allocates nothing. A candidate is confirmed by comparison
// and grown to the longest matching run, and each run's original bytes,
// escapes included, are replaced by the marker.
package redact

import (
	"cmp"
	"encoding/base64"
	"slices"
	"sync/atomic"
	"unsafe"
)

// MinLen is the shortest secret used as a pattern. Shorter ones are too
// likely to occur in ordinary text: a test key "k" would otherwise turn
// every "k" of a message into a marker, which mangles the message without
// protecting anything worth protecting.
const MinLen = 8

// RunLen is the shortest run of a longer secret's characters that counts
// as a copy of it. Sixteen characters of a random key are more than any
// ordinary text shares with it by chance, and fewer than an upstream
// would leave when it shows a key cut short.
const RunLen = 16

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

// New returns a Redactor that knows secrets.
func New(secrets ...Secret) *Redactor {
	r := &Redactor{}
	r.Set(secrets)
	return r
}

// Set replaces the known secrets. Values shorter than MinLen are ignored;
// when one secret contains another, the longer one is replaced whole.
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
	// A stable order makes the patterns, and so the work done on a given
	// text, the same whatever order the configuration listed them in.
	slices.SortFunc(use, func(a, b Secret) int { return cmp.Compare(a.Value, b.Value) })
	r.p.Store(compile(use))
}

// Covers reports whether r knows every secret o knows, so that redacting
// with o after r would change nothing.
func (r *Redactor) Covers(o *Redactor) bool {
	q := o.patterns()
	if q == nil {
		return true
	}
	p := r.patterns()
	if p == nil {
		return false
	}
	// The answer holds until either set changes, and a client asks it for
	// every text it redacts, so the last set found covered is kept.
	if p.covers.Load() == q {
		return true
	}
	for _, s := range q.secrets {
		if _, ok := p.index[s.Value]; !ok {
			return false
		}
	}
	p.covers.Store(q)
	return true
}

func (r *Redactor) patterns() *patterns {
	if r == nil {
		return nil
	}
	return r.p.Load()
}

// String returns s with every copy of a known secret replaced by its
// marker. It returns s itself when there is none.
func (r *Redactor) String(s string) string {
	p := r.patterns()
	if p == nil || !candidate(p, s) {
		return s
	}
	spans := p.find(s)
	if spans == nil {
		return s
	}
	return string(p.replace(s, spans))
}

// Bytes returns b with every copy of a known secret replaced by its
// marker: inside JSON strings too, where the replaced span covers whole
// escapes, so the document stays valid JSON. It returns b itself when
// there is no copy, and a new slice otherwise; b is never changed.
func (r *Redactor) Bytes(b []byte) []byte {
	p := r.patterns()
	// The scan reads b as a string in place: it neither keeps nor changes
	// it, and a copy would cost the allocation the scan avoids.
	s := unsafe.String(unsafe.SliceData(b), len(b))
	if p == nil || !candidate(p, s) {
		return b
	}
	spans := p.find(s)
	if spans == nil {
		return b
	}
	return p.replace(s, spans)
}

// kind says how a pattern's text compares with decoded text.
type kind uint8

const (
	// plain patterns are a secret as it is, compared without letter case,
	// with '+' standing for a space.
	plain kind = iota
	// b64 patterns are the characters of a secret's base64 encoding that
	// depend on the secret's bytes only, compared exactly, with the URL
	// alphabet's '-' and '_' standing for '+' and '/'.
	b64
)

// pattern is one form of one secret.
type pattern struct {
	// s is the form: lower case for plain patterns, the standard alphabet
	// for b64 ones.
	s      string
	kind   kind
	secret int
	// minRun is how much of s must match: RunLen, or all of s for a short
	// secret.
	minRun int
	// lead and trail are set when a base64 character that mixes the
	// secret's first (last) bits with the neighbouring byte's comes before
	// (after) s; it is replaced with the run when the run reaches that
	// end, since it holds a few bits of the secret.
	lead, trail bool
}

// ref is where a gram occurs: in pattern pat at offset off.
type ref struct{ pat, off int32 }

// gramLen is the length of the grams looked up: eight folded bytes make
// one uint64, which is the map key itself, so a lookup never needs a
// second comparison.
const gramLen = 8

// maxRefs bounds the places kept for one gram. A random key holds each of
// its grams once; only a degenerate value ("aaaaaaaaaaaaaaaaaaaa") repeats
// one, and bounding it bounds the work a text made of that gram can cause.
const maxRefs = 16

// patterns is a compiled set of secrets; it is never changed once built,
// so requests share it without locks.
type patterns struct {
	secrets []Secret
	index   map[string]int // secrets by value
	// covers is the last set Covers found this one to hold.
	covers atomic.Pointer[patterns]
	pats   []pattern
	grams  map[uint64][]ref
	// bits is a bit set of the grams' hashes, checked before the map: it
	// answers "no" to nearly every position of ordinary text at the cost
	// of one load.
	bits  []uint64
	shift uint
	// stride is how many decoded bytes lie between two looked-up grams.
	// Every run that must be found holds at least minRun bytes, so looking
	// up every (minRun-gramLen+1)th gram finds at least one inside it.
	stride int
}

func compile(secrets []Secret) *patterns {
	p := &patterns{secrets: secrets, index: map[string]int{}, grams: map[uint64][]ref{}}
	for i, s := range secrets {
		v := s.Value
		p.index[v] = i
		p.pats = append(p.pats, pattern{s: lowerString(v), kind: plain, secret: i, minRun: min(RunLen, len(v))})
		buf := make([]byte, 2+len(v))
		for a := range 3 {
			// The secret at byte a of a three-byte group: characters
			// [lo, hi) of the encoding hold only its bits.
			copy(buf[a:], v)
			enc := base64.StdEncoding.EncodeToString(buf[:a+len(v)])
			lo, hi := (8*a+5)/6, 8*(a+len(v))/6
			core := enc[lo:hi]
			run := RunLen
			if len(v) < RunLen {
				run = len(core)
			}
			p.pats = append(p.pats, pattern{s: core, kind: b64, secret: i, minRun: run,
				lead: a > 0, trail: 8*(a+len(v))%6 != 0})
		}
	}
	p.stride = RunLen
	for i, pt := range p.pats {
		p.stride = min(p.stride, pt.minRun-gramLen+1)
		for o := 0; o+gramLen <= len(pt.s); o++ {
			g := gramOf(pt.s[o : o+gramLen])
			if rs := p.grams[g]; len(rs) < maxRefs {
				p.grams[g] = append(rs, ref{pat: int32(i), off: int32(o)})
			}
		}
	}
	// About 32 bits per gram: one position in thirty of ordinary text
	// passes the bit set and costs a map lookup.
	n := 1 << 12
	for n < 32*len(p.grams) {
		n <<= 1
	}
	p.bits = make([]uint64, n/64)
	p.shift = uint(64 - log2(n))
	for g := range p.grams {
		h := p.hash(g)
		p.bits[h>>6] |= 1 << (h & 63)
	}
	return p
}

func log2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

// hash spreads a gram over the bit set (Fibonacci hashing).
func (p *patterns) hash(g uint64) uint64 { return (g * 0x9E3779B97F4A7C15) >> p.shift }

// has reports whether g is a gram of some pattern.
func (p *patterns) has(g uint64) bool {
	h := p.hash(g)
	if p.bits[h>>6]&(1<<(h&63)) == 0 {
		return false
	}
	_, ok := p.grams[g]
	return ok
}

func gramOf(s string) uint64 {
	var g uint64
	for i := range len(s) {
		g = g<<8 | uint64(fold[s[i]])
	}
	return g
}

func lowerString(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lower[c]
	}
	return string(b)
}

// fold maps a decoded byte to its class for gram lookups: letters to lower
// case, the URL alphabet's '-' and '_' to base64's '+' and '/', and a
// space to '+', which stands for it in a URL's query. Folding only widens
// the candidates; the comparison that confirms one tells them apart.
var fold, lower, b64norm [256]byte

func init() {
	for i := range 256 {
		c := byte(i)
		lower[i], b64norm[i] = c, c
		if 'A' <= c && c <= 'Z' {
			lower[i] = c + 'a' - 'A'
		}
		fold[i] = lower[i]
	}
	fold['-'], fold[' '], fold['_'] = '+', '+', '/'
	b64norm['-'], b64norm['_'] = '+', '/'
}
