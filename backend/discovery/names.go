package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxContext is the largest context window, in tokens, a server's claim is
// believed up to; a larger claim is cut to it. 10 Mi tokens is above the
// longest window any published model offers (10 million tokens), and far
// above what a local server can hold: a KV cache of that length needs
// hundreds of gigabytes. A window counts when the router looks for a
// backend whose context is larger after a prompt was too long, so an
// absurd claim would draw every long prompt.
const MaxContext = 10 << 20

// MaxParamsB is the largest model size, in billions of parameters, a
// server's claim is believed up to; larger claims are treated as unknown.
const MaxParamsB = 100_000

// ValidID reports whether a model name a server listed may be kept, by the
// rules a model id in the configuration follows: not empty, no space at
// either end, at most MaxID bytes, so that "provider/id" stays within the
// 256 bytes a request's model name may have, and no "${" (a configuration
// reference, which a chain could not name). Beyond those rules it must be
// valid UTF-8 made only of printable characters and spaces: no control,
// format (such as right-to-left overrides), private-use or unassigned
// characters, so that nothing a server sends can break a log line or pass
// for another name on the dashboard.
func ValidID(id string) bool {
	if id == "" || len(id) > MaxID || !utf8.ValidString(id) || strings.TrimSpace(id) != id || strings.Contains(id, "${") {
		return false
	}
	for _, r := range id {
		if !unicode.IsGraphic(r) {
			return false
		}
	}
	return true
}

// sampleRunes is how much of a refused name Sample keeps.
const sampleRunes = 40

// Sample makes a name a server sent safe to log or show: at most a few
// dozen characters, quoted, with control and non-ASCII characters
// escaped, and its full length in bytes when it was cut.
func Sample(s string) string {
	cut := s
	n := 0
	for i := range s {
		if n == sampleRunes {
			cut = s[:i]
			break
		}
		n++
	}
	q := strconv.QuoteToASCII(cut)
	if len(cut) < len(s) {
		q += "… (" + strconv.Itoa(len(s)) + " bytes)"
	}
	return q
}

// tokens is a context window as a server claims it: any JSON value is
// accepted, so that one garbage field does not lose the rest of an
// answer. A whole positive number is kept, cut to MaxContext; anything
// else (negative, fractional, a string, an object) is 0, unknown.
type tokens int

// UnmarshalJSON reads a claim, never failing.
func (t *tokens) UnmarshalJSON(b []byte) error {
	*t = 0
	b = bytes.TrimSpace(b)
	if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !isRange(err) {
		return nil
	}
	*t = tokens(contextOf(f))
	return nil
}

// isRange reports whether ParseFloat failed only because the number is
// out of range; it then returns ±Inf, which contextOf cuts.
func isRange(err error) bool {
	var ne *strconv.NumError
	return errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange)
}

// contextOf is a claimed window made plausible: 0 when it is not a whole
// positive number, MaxContext at most.
func contextOf(f float64) int {
	if math.IsNaN(f) || f < 1 || f != math.Trunc(f) {
		return 0
	}
	if f > MaxContext {
		return MaxContext
	}
	return int(f)
}

// paramsOf is a claimed size in billions made plausible: 0 (unknown) when
// it is not a positive finite number up to MaxParamsB.
func paramsOf(f float64) float64 {
	if math.IsNaN(f) || f <= 0 || f > MaxParamsB {
		return 0
	}
	return f
}

// rawTokens reads a window from a raw JSON value, such as an entry of
// Ollama's model_info.
func rawTokens(raw json.RawMessage) int {
	var t tokens
	_ = t.UnmarshalJSON(raw)
	return int(t)
}
