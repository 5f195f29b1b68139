package llm

import (
	"errors"
	"fmt"
	"strings"
)

// BackendID names one backend: a model of a provider, called with one of
// that provider's keys. It is a comparable value, so it keys maps on the
// request path without building a string.
//
// Key is a stable label of the key, not the key itself; it is empty while
// a provider has one key (or none), which is every provider until key
// pools arrive.
type BackendID struct {
	Provider string
	Key      string
	Model    string
}

// KeyID names one key of one provider: the part of a BackendID that state
// kept per key (a key refused, cooling after a rate limit, used up until a
// reset) is kept under.
type KeyID struct {
	Provider string
	Key      string
}

// ErrBadBackendID is wrapped by every error ParseBackendID returns.
var ErrBadBackendID = errors.New("not a backend reference")

// String is the one text form of a backend, as chains, logs, rows and the
// dashboard show it: "provider/model", or "provider@key/model" for a key
// other than the provider's only one. Provider names and key labels never
// hold '/' or '@', so ParseBackendID reads it back whatever the model id
// holds.
func (id BackendID) String() string {
	if id.Key == "" {
		return id.Provider + "/" + id.Model
	}
	return id.Provider + "@" + id.Key + "/" + id.Model
}

// KeyID is the key this backend is called with.
func (id BackendID) KeyID() KeyID { return KeyID{Provider: id.Provider, Key: id.Key} }

// IsZero reports whether id names nothing.
func (id BackendID) IsZero() bool { return id == BackendID{} }

// String is "provider" or "provider@key".
func (k KeyID) String() string {
	if k.Key == "" {
		return k.Provider
	}
	return k.Provider + "@" + k.Key
}

// ParseBackendID reads the text form String writes. The model part may hold
// '/' ("ollama/library/llama3.2:3b" is the model "library/llama3.2:3b").
func ParseBackendID(s string) (BackendID, error) {
	id, ok := CutBackendID(s)
	if !ok {
		return BackendID{}, fmt.Errorf("%w: %q must be \"provider/model\" or \"provider@key/model\"", ErrBadBackendID, s)
	}
	return id, nil
}

// CutBackendID is ParseBackendID for the request path, where most names a
// client sends are chains or bare model ids: it reports failure without
// building an error.
func CutBackendID(s string) (BackendID, bool) {
	head, model, ok := strings.Cut(s, "/")
	if !ok || head == "" || model == "" {
		return BackendID{}, false
	}
	provider, key, keyed := strings.Cut(head, "@")
	if provider == "" || (keyed && key == "") || strings.Contains(key, "@") {
		return BackendID{}, false
	}
	return BackendID{Provider: provider, Key: key, Model: model}, true
}

// MarshalText writes String, so a BackendID is a plain string in JSON.
func (id BackendID) MarshalText() ([]byte, error) {
	if id.IsZero() {
		return nil, nil
	}
	return []byte(id.String()), nil
}

// UnmarshalText reads what MarshalText wrote; an empty text is the zero ID.
func (id *BackendID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = BackendID{}
		return nil
	}
	v, err := ParseBackendID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}
