package gemini

import "freelane/backend/protocol"

// Dialect is this wire format's entry in FreeLane's registry of dialects.
// Upstreams of provider kind "gemini" speak it.
var Dialect = protocol.Dialect{
	Codec:    Codec,
	Inbound:  inbound,
	Kind:     "gemini",
	Outbound: outbound,
}
