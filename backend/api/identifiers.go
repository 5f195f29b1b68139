package api

import (
	"fmt"
	"net/http"
	"strings"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// ConversationHeader names the conversation a request belongs to, for
// tools that send no session of their own. It is spelled like
// SessionHeader, the dashboard's session token, but lives on the other
// plane: on the inference routes it only ever names a conversation and
// admits nobody, and on /api it is only ever the dashboard's token.
const ConversationHeader = "X-FreeLane-Session"

// codexSessionHeaders are the headers Codex CLI names its conversation
// in (session_id; conversation_id in earlier versions).
var codexSessionHeaders = []string{"Session_id", "Conversation_id"}

// identify turns the identifiers a caller sent into the request's
// pseudonyms: Session from ConversationHeader, else from the session the
// dialect found in the body (Claude Code's metadata.user_id session part,
// a prompt_cache_key), else from Codex's session header; User from the
// end-user id of the body. The raw values are cleared, so nothing after
// this reads, logs or sends them. An over-long ConversationHeader is
// refused with a 400 in d's dialect (ok false, the answer written); an
// over-long value in the body or in Codex's header is ignored.
func (s *Server) identify(w http.ResponseWriter, r *http.Request, d protocol.Dialect, req *llm.Request) bool {
	raw := strings.TrimSpace(r.Header.Get(ConversationHeader))
	if len(raw) > llm.MaxIdentifier {
		writeIn(w, d, "invalid_request_error", protocol.ErrorInfo{Status: http.StatusBadRequest, Code: "invalid_session",
			Message: fmt.Sprintf("%s is too long (%d bytes): name the conversation in at most %d bytes, e.g. a UUID", ConversationHeader, len(raw), llm.MaxIdentifier)})
		return false
	}
	if raw == "" {
		raw = req.ClientSession
	}
	for _, h := range codexSessionHeaders {
		if raw != "" {
			break
		}
		if v := strings.TrimSpace(r.Header.Get(h)); len(v) <= llm.MaxIdentifier {
			raw = v
		}
	}
	req.Session = s.o.Pseudonyms.Session(raw)
	req.User = s.o.Pseudonyms.User(req.ClientUser)
	req.ClientSession, req.ClientUser = "", ""
	return true
}
