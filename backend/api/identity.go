package api

import "net/http"

// Identities of callers that no account tells apart.
const (
	// identityToken is every caller that presented the configured inbound
	// token and is not a program of a known account of this machine: the
	// token is one secret for all its holders, so they are one caller.
	identityToken = "token"
	// identityAnonymous is every other caller that nothing tells apart:
	// loopback callers on a system that does not say who owns a socket.
	identityAnonymous = "anonymous"
)

// callerIdentity names who made a request, for what FreeLane keeps on a
// caller's behalf: a stored answer is read back and continued only by a
// caller of the identity that stored it. It is the one place that
// decides who a caller is; everything that files or finds something by
// caller asks it.
//
// Its contract: the identity is
//   - stable: the same caller gets the same string on every request and
//     across restarts, since it is stored with what the caller created;
//   - not secret: it is stored in plain text and may be logged, so it is
//     never a token or a key, nor made from one;
//   - never empty, so nothing stored without an owner matches a caller;
//   - one per caller that must not see another's answers: two callers get
//     the same identity only when FreeLane cannot tell them apart.
//
// A program of a known account of this machine is that account ("uid:N"),
// whether or not it sent the inbound token: the kernel's word is narrower
// than a token that several people may hold. A caller no account names
// (one on the network, or any loopback caller where the system does not
// say who owns a socket) is identityToken when it presented the inbound
// token, and otherwise its address ("net:IP") or identityAnonymous.
func (s *Server) callerIdentity(r *http.Request) string {
	c := callerOf(r)
	if (c.Kind == CallerSelf || c.Kind == CallerOtherAccount) && c.UIDKnown {
		return c.Identity()
	}
	if s.o.Token.Set() && s.o.Token.Match(s.presentedToken(r)) {
		return identityToken
	}
	if c.Kind == CallerNetwork {
		return c.Identity()
	}
	return identityAnonymous
}
