package control

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"freelane/backend/config"
)

// sent records which keys a decoded ProviderInput carried, by their JSON
// names: an edit changes only the fields the client sent, so it must be
// able to tell a field left out from one sent as zero.
type sent struct {
	keys     map[string]bool
	timeouts map[string]bool
	// models holds the keys of each entry of "models", by position.
	models []map[string]bool
}

var (
	providerInputKeys = jsonNames(reflect.TypeFor[ProviderInput]())
	modelSpecKeys     = jsonNames(reflect.TypeFor[ModelSpec]())
	timeoutsKeys      = jsonNames(reflect.TypeFor[Timeouts]())
)

// jsonNames lists the JSON names of a struct type's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// keySet maps the keys of a JSON object to the field names they decode
// into. encoding/json matches keys to fields ignoring case, so a key is
// matched the same way here; keys that name no field cannot occur, since
// the strict decode has already refused them.
func keySet(obj map[string]json.RawMessage, names []string) map[string]bool {
	out := make(map[string]bool, len(obj))
	for k := range obj {
		for _, n := range names {
			if strings.EqualFold(k, n) {
				out[n] = true
				break
			}
		}
	}
	return out
}

// rawField returns the value of the key that decodes into the field name.
func rawField(obj map[string]json.RawMessage, name string) json.RawMessage {
	if v, ok := obj[name]; ok {
		return v
	}
	for k, v := range obj {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// UnmarshalJSON decodes an input strictly, refusing unknown keys as every
// admin body does (a method of its own does not inherit the caller's
// decoder settings), and records which keys it carried.
func (in *ProviderInput) UnmarshalJSON(b []byte) error {
	type plain ProviderInput // the same fields without this method
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	s := &sent{}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return fmt.Errorf("reading the provider's keys: %w", err)
	}
	s.keys = keySet(top, providerInputKeys)
	if raw := rawField(top, "timeouts"); raw != nil {
		var t map[string]json.RawMessage
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Errorf("reading the keys of timeouts: %w", err)
		}
		s.timeouts = keySet(t, timeoutsKeys)
	}
	if raw := rawField(top, "models"); raw != nil {
		var ms []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &ms); err != nil {
			return fmt.Errorf("reading the keys of models: %w", err)
		}
		for _, m := range ms {
			s.models = append(s.models, keySet(m, modelSpecKeys))
		}
	}
	*in = ProviderInput(p)
	in.sent = s
	return nil
}

// has reports whether the input carries the field with the JSON name key.
// An input built in Go rather than decoded carries every field.
func (in *ProviderInput) has(key string) bool { return in.sent == nil || in.sent.keys[key] }

// hasTimeout reports whether the input carries the timeout key.
func (in *ProviderInput) hasTimeout(key string) bool {
	return in.sent == nil || in.sent.timeouts[key]
}

// hasModelField reports whether the i-th model of the input carries key.
func (in *ProviderInput) hasModelField(i int, key string) bool {
	return in.sent == nil || (i < len(in.sent.models) && in.sent.models[i][key])
}

// boolSetting returns what to store for an optional bool setting (probe,
// stream_usage) stored as old, which currently means means, when a client
// sends v (nil for null). Null goes back to the default. A value that means
// what old already means keeps old as it is, so writing back a view, which
// shows the meaning rather than whether the setting is explicit, changes
// nothing. On an add (create) there is no stored setting to keep, and a
// value sent is stored as given.
func boolSetting(old *bool, means bool, v *bool, create bool) *bool {
	switch {
	case v == nil:
		return nil
	case *v == means && !create:
		return old
	default:
		b := *v
		return &b
	}
}

// mergeLimits returns the limits to store for limits stored as old when a
// client sends in: nil keeps old, and so does a value that shows as old
// does (an explicit "daily 00:00 UTC" or an empty limits block stays as
// stored); anything else replaces it, all zero meaning none.
func mergeLimits(old *config.Limits, in *LimitsJSON) *config.Limits {
	if in == nil || limitsJSON(old) == *in {
		return old
	}
	return toLimits(in)
}

// mergePrice returns the price to store for a price stored as old when a
// client sends in: nil keeps old, a value equal to old keeps it as stored,
// and anything else replaces it, zero for both meaning free (nil).
func mergePrice(old *config.Price, in *PriceJSON) *config.Price {
	if in == nil {
		return old
	}
	if p := priceJSON(old); p != nil && *p == *in {
		return old
	}
	if *in == (PriceJSON{}) {
		return nil
	}
	return &config.Price{Input: in.Input, Output: in.Output, CacheRead: in.CacheRead, CacheWrite: in.CacheWrite}
}
