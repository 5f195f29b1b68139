// Package dialects is the composition of every wire format FreeLane
// speaks. Each dialect is a package under backend/protocol that provides
// one protocol.Dialect value; this package lists them, and the rest of
// FreeLane finds a dialect's behaviour only through the registry it
// returns. Adding a dialect is its package and one line below.
package dialects

import (
	"sync"

	"freelane/backend/protocol"
	"freelane/backend/protocol/anthropic"
	"freelane/backend/protocol/gemini"
	"freelane/backend/protocol/openai"
	"freelane/backend/protocol/responses"
)

// Registry returns the registry of every dialect. It is built once and
// shared: a registry is read-only after it is made.
func Registry() *protocol.Registry { return registry() }

var registry = sync.OnceValue(func() *protocol.Registry {
	return protocol.NewRegistry(
		openai.Dialect,
		responses.Dialect,
		anthropic.Dialect,
		gemini.Dialect,
	)
})
