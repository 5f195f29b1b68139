package anthropic

import "freelane/backend/protocol"

// Dialect is this wire format's entry in FreeLane's registry of dialects.
// Upstreams of provider kind "anthropic" speak it.
var Dialect = protocol.Dialect{
	Codec:    Codec,
	Inbound:  inbound,
	Kind:     "anthropic",
	Outbound: outbound,
}
