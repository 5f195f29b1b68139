package anthropic

import (
	"freelane/backend/protocol"
	"freelane/backend/upstream"
)

var (
	_ protocol.Codec = Codec
	_ upstream.Wire  = Codec
)
