package anthropic

import (
	"freelane/backend/protocol"
)

var (
	_ protocol.Codec = Codec
	_ protocol.Wire  = Codec
)
