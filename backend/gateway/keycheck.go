package gateway

import (
	"context"
	"errors"
	"fmt"

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
		return &llm.Error{Class: llm.Credential, Message: fmt.Sprintf("the model list refused the key: %v", err)}
	case !errors.Is(err, modellist.ErrNoList) || len(p.Models) == 0:
		return &llm.Error{Class: llm.Transient, Message: fmt.Sprintf("the model list could not be read: %v", err)}
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
	return &llm.Error{Class: llm.Transient, Message: err.Error()}
}

// rearmReplacedKeys forgets what the breakers learned under a key the
// configuration replaced: a refusal or failures of the old key say
// nothing about the new one, which serves from the next request on.
func (g *Gateway) rearmReplacedKeys(old, next *config.Config) {
	if old == nil {
		return
	}
	for _, p := range next.Providers {
		was, ok := old.Provider(p.Name)
		if !ok || was.Pooled() || p.Pooled() || was.APIKey == p.APIKey || p.APIKey == "" {
			// Keys of a pool are labelled by what they are: a new key has
			// a new label and starts with no history.
			continue
		}
		g.gate.KeyReplaced(llm.KeyID{Provider: p.Name}, "the key was replaced")
	}
}

// keyOffWords says, for the dashboard, why a key is off and what brings
// it back.
func keyOffWords(st breaker.Status) string {
	why := "the provider refused the key (" + st.KeyOffWhy + ")"
	if st.KeyChecks > 0 {
		why += fmt.Sprintf("; %d later %s found it still refused", st.KeyChecks, plural(st.KeyChecks, "check", "checks"))
	}
	return why + "; it is checked again with the provider's model list and used as soon as a check passes, or at once when you replace the key"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
