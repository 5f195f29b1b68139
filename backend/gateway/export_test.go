package gateway

// CheckCredits runs the housekeeping loop's credit check now, so tests can
// move the clock past an expiry without waiting for the loop's ticker.
func (g *Gateway) CheckCredits() { g.checkCredits() }
