package responses

import "freelane/backend/protocol"

// Dialect is this wire format's entry in FreeLane's registry of dialects.
// No provider kind speaks it upstream; clients do.
var Dialect = protocol.Dialect{
	Codec:   Codec,
	Inbound: inbound,
}
