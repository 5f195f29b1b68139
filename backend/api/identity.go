package api

import "net/http"

// The identities callerIdentity gives today.
const (
	// identityToken is every caller that presented the configured inbound
	// token: the token is one secret for all its holders, so they are one
	// caller.
	identityToken = "token"
	// identityAnonymous is every caller when no token is configured: any
	// program of this machine may then call /v1, and nothing tells them
	// apart.
	identityAnonymous = "anonymous"
)

// callerIdentity names who made a request, for what FreeLane keeps on a
// caller's behalf: a stored Responses API answer is read (GET
// /v1/responses/{id}) and continued (previous_response_id, compaction)
// only by a caller of the identity that stored it. It is the one place that
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
// It is a method because it needs the server's configured token. Today it
// is identityToken for a request that presented the inbound token and
// identityAnonymous otherwise (the /v1 guard has already refused a request
// without the token when one is set).
func (s *Server) callerIdentity(r *http.Request) string {
	if s.o.Token.Set() && s.o.Token.Match(presentedToken(r)) {
		return identityToken
	}
	return identityAnonymous
}
