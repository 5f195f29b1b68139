package gateway

import (
	"cmp"

	"freelane/backend/config"
	"freelane/backend/defaults"
)

// bodyLogBytes is what body logging keeps of each body under rl, 0 when
// it is off.
func bodyLogBytes(rl config.RequestLog) int {
	if !rl.Bodies {
		return 0
	}
	return cmp.Or(rl.MaxBodyKB, defaults.RequestLogBodyKB) << 10
}
