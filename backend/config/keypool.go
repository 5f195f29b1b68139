package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// MaxPoolKeys is the most keys one provider may hold (api_key and
// api_keys together).
const MaxPoolKeys = 16

// PoolKey is one key of a provider's pool with its label.
type PoolKey struct {
	// Label names the key in backend names, logs and the dashboard. It is
	// derived from a hash of the key, so it stays the same while the key
	// does, and it is neither the key nor a part of it.
	Label string
	// Key is the secret itself.
	Key string
}

// Pool is the provider's keys in the order they are tried: api_key
// first, then api_keys, each given once, empty ones left out.
func (p *Provider) Pool() []PoolKey {
	var out []PoolKey
	seen := map[string]bool{}
	add := func(k string) {
		if k == "" || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, PoolKey{Key: k})
	}
	add(p.APIKey)
	for _, k := range p.APIKeys {
		add(k)
	}
	labels := map[string]bool{}
	for i := range out {
		l := KeyLabel(out[i].Key)
		if labels[l] {
			// Two keys whose hashes begin alike still get distinct labels.
			l += "-" + strconv.Itoa(i+1)
		}
		labels[l] = true
		out[i].Label = l
	}
	return out
}

// Pooled reports whether the provider holds more than one key, so that
// its backends are named by key.
func (p *Provider) Pooled() bool { return len(p.Pool()) > 1 }

// KeyLabel is the label of a key: "k" and eight hex digits of a salted
// SHA-256 of it. The salt keeps the label from being a plain hash that
// could be matched against hashes published elsewhere.
func KeyLabel(key string) string {
	sum := sha256.Sum256([]byte("freelane key label\x00" + key))
	return "k" + hex.EncodeToString(sum[:4])
}
