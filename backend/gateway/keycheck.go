package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"freelane/backend/breaker"
	"freelane/backend/config"
	"freelane/backend/llm"
	"freelane/backend/modellist"
)

// checkKey asks a provider whether a key it refused is taken now. The
// model list is read first, since it costs nothing; a provider without
// one gets the test request, a few tokens. Only a refusal keeps the key
// off: an unreachable or busy provider says nothing about the key.
func (g *Gateway) checkKey(ctx context.Context, k llm.KeyID) *llm.Error {
	g.mu.Lock()
	p, _ := g.cfg.Provider(k.Provider)
	c := g.keyClients[k]
	g.mu.Unlock()
	if p == nil || c == nil {
		// The provider was removed or lost the key since: nothing is left
		// to check, and its backends route nowhere.
		return nil
	}
	// A key of a pool is checked with that key alone; a provider with one
	// key has it under the empty label, wherever the config gives it.
	keyed := *p
	for i, pk := range p.Pool() {
		if pk.Label == k.Key || (k.Key == "" && i == 0) {
			keyed.APIKey = pk.Key
			break
		}
	}
	_, err := g.pool.ReadList(ctx, keyed)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, modellist.ErrKeyRejected):
		return &llm.Error{Class: llm.Credential, Message: statusWords(err)}
	case !errors.Is(err, modellist.ErrNoList) || len(p.Models) == 0:
		f := g.judge(*p, err)
		why := "its model list could not be read"
		if f != nil {
			why += ": " + f.why
		}
		return &llm.Error{Class: llm.Transient, Message: why}
	}
	_, err = c.Complete(ctx, testRequest, p.Models[0].ID)
	var le *llm.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &le) && le.Class == llm.RateLimited:
		// Busy is an answer: the key was read.
		return nil
	case errors.As(err, &le):
		return le
	}
	return &llm.Error{Class: llm.Transient, Message: unreachableWords(err)}
}

// rearmReplacedKeys forgets what the breakers learned under a key the
// configuration replaced: a refusal or failures of the old key say
// nothing about the new one, which serves from the next request on.
func (g *Gateway) rearmReplacedKeys(old, next *config.Config) {
	if old == nil {
		return
	}
	for _, p := range old.Providers {
		// A key added without being tried is forgotten with its provider.
		if _, ok := next.Provider(p.Name); !ok {
			g.feed.unchecked.forget(p.Name)
		}
	}
	for _, p := range next.Providers {
		was, ok := old.Provider(p.Name)
		if !ok || was.Pooled() || p.Pooled() || was.APIKey == p.APIKey || p.APIKey == "" {
			// Keys of a pool are labelled by what they are: a new key has
			// a new label and starts with no history.
			continue
		}
		g.gate.KeyReplaced(llm.KeyID{Provider: p.Name}, "the key was replaced")
		g.feed.unchecked.forget(p.Name)
	}
}

// keyOffWords says, for the dashboard, why a key is off and what brings
// it back, in sentences; the dashboard adds when the next check is.
func keyOffWords(st breaker.Status) string {
	why := "The provider refused the key"
	if w := answerWords(st.KeyOffWhy); w != "" {
		why += ": " + w
	}
	why += "."
	if st.KeyChecks > 0 {
		why += fmt.Sprintf(" %d later %s found it still refused.", st.KeyChecks, plural(st.KeyChecks, "check", "checks"))
	}
	return why + " Replace the key under Providers & keys, or wait: FreeLane checks it again and uses it as soon as a check passes."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// httpAnswer matches an upstream's answer as llm.ClassifyResponse words
// it: "HTTP 401: Incorrect API key provided".
var httpAnswer = regexp.MustCompile(`HTTP (\d{3}):\s*`)

// answerWords rewrites what the router and the breaker record of an
// answer ("HTTP 503: overloaded", "credential: HTTP 401:") for a
// sentence: "HTTP 503 (overloaded)", "HTTP 401 (Unauthorized)". Text
// without such an answer is only trimmed.
func answerWords(s string) string {
	s = strings.TrimSpace(s)
	for _, c := range []string{"credential", "transient", "rate_limited", "gone", "caller", "too_long", "soft"} {
		// An llm.Error printed whole carries its class first.
		s = strings.TrimPrefix(s, c+": ")
	}
	loc := httpAnswer.FindStringSubmatchIndex(s)
	if loc == nil {
		return strings.TrimRight(s, " :;,.")
	}
	code, _ := strconv.Atoi(s[loc[2]:loc[3]])
	head, rest := s[:loc[0]], strings.TrimRight(strings.TrimSpace(s[loc[1]:]), " :;,.")
	if rest == "" {
		rest = http.StatusText(code)
	}
	if rest == "" {
		return head + fmt.Sprintf("HTTP %d", code)
	}
	return head + fmt.Sprintf("HTTP %d (%s)", code, rest)
}

// plainWord matches a reason that starts with a word of prose rather than
// a name: lower-case letters followed by a space.
var plainWord = regexp.MustCompile(`^[a-z]+ `)

// sentence makes a status reason a sentence for the dashboard: its answers
// worded as answerWords does, a capital first letter and a full stop.
func sentence(s string) string {
	s = answerWords(s)
	if s == "" {
		return ""
	}
	if m := plainWord.FindStringSubmatch(s); m != nil {
		// A name (a backend "b/mb", a provider "b: ...") keeps its case.
		r, n := utf8.DecodeRuneInString(s)
		s = string(unicode.ToUpper(r)) + s[n:]
	}
	if last := s[len(s)-1]; last != '.' && last != '!' && last != '?' {
		s += "."
	}
	return s
}
