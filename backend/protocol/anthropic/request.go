package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
)

// source is a Messages API request body, scanned just enough to route it
// and to rewrite it for an Anthropic upstream without re-encoding it.
type source struct {
	body                 []byte
	modelStart, modelEnd int
	maxTokens            int
	// budget is thinking.budget_tokens when thinking is enabled, so a
	// lowered max_tokens can keep it below the limit as Anthropic
	// requires.
	budget int
	// metaStart is the offset of the metadata object when it names the
	// end user (user_id), whose value Rewrite replaces; -1 when not.
	metaStart int
}

// ParseRequest validates a Messages API body. Like OpenAI's scanner it
// avoids reflection on the hot path: json.Valid checks the whole body and
// a scan finds the fields routing needs; only a body that is not JSON at
// all takes the decoder, which says where it breaks.
func (codec) ParseRequest(ep llm.Endpoint, body []byte) (*llm.Request, error) {
	return parseRequest(ep, body, true)
}

// ParseCountTokens validates the body of a token count request
// (/v1/messages/count_tokens), which is a Messages request without
// max_tokens.
func ParseCountTokens(body []byte) (*llm.Request, error) {
	return parseRequest(llm.Chat, body, false)
}

func parseRequest(ep llm.Endpoint, body []byte, needMax bool) (*llm.Request, error) {
	if ep != llm.Chat {
		return nil, llm.BadRequest("", "the Messages API serves chat only, not %s", ep)
	}
	if !json.Valid(body) {
		return nil, llm.BadRequest("", "request body is not valid JSON: %s", jsonscan.SyntaxError(body))
	}
	start := jsonscan.SkipSpace(body, 0)
	if body[start] != '{' {
		return nil, llm.BadRequest("", "request body must be a JSON object")
	}
	src := &source{body: body, modelStart: -1, metaStart: -1}
	r := llm.NewRequest(src)
	r.Endpoint, r.Dialect = ep, llm.DialectAnthropic
	var err error
	var messages []byte
	hasMax := false
	jsonscan.EachMember(body, start, func(key []byte, vs, ve int) bool {
		v := body[vs:ve]
		switch string(key) {
		case "model":
			r.Model, err = llm.ModelValue(v)
			src.modelStart, src.modelEnd = vs, ve
		case "max_tokens":
			hasMax = true
			r.MaxTokens = jsonscan.SmallInt(v)
			if r.MaxTokens <= 0 {
				err = llm.BadRequest("max_tokens", "max_tokens must be a positive integer (at most 999999999)")
			}
		case "messages":
			messages = v
		case "stream":
			r.Stream, err = llm.StreamValue(v)
		case "tools":
			if v[0] == '[' && len(bytes.TrimSpace(v[1:len(v)-1])) > 0 {
				r.Needs |= llm.CapTools
			}
		case "metadata":
			src.metaStart = -1
			if v[0] == '{' {
				jsonscan.EachMember(v, 0, func(k []byte, s, e int) bool {
					if string(k) == "user_id" {
						src.metaStart = vs
						r.ClientUser = llm.IdentifierValue(v[s:e])
						r.ClientSession = claudeSession(r.ClientUser)
					}
					return true
				})
			}
		case "thinking":
			src.budget = thinkingBudget(v)
			if thinkingAsked(v) {
				r.Wants |= llm.CapReasoning
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case src.modelStart < 0 || r.Model == "":
		return nil, llm.BadRequest("model", "model is required: use \"auto\", a chain name or provider/model")
	case needMax && !hasMax:
		return nil, llm.BadRequest("max_tokens", "max_tokens is required: the most tokens the answer may have")
	}
	vision, err := checkMessages(messages)
	if err != nil {
		return nil, err
	}
	if vision {
		r.Needs |= llm.CapVision
	}
	src.maxTokens = r.MaxTokens
	// Every Anthropic stream reports its usage in message_delta, so a
	// client of this dialect always wants it.
	r.WantsUsage = r.Stream
	return r, nil
}

// claudeSession is the session part of a metadata.user_id as Claude Code
// writes it: a JSON object in a string, {"device_id", "account_uuid",
// "session_id"}, or in older versions user_<hash>_account_<uuid>_session_<uuid>.
// Any other value names no session.
func claudeSession(userID string) string {
	if strings.HasPrefix(userID, "{") {
		var v struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(userID), &v) == nil {
			return v.SessionID
		}
		return ""
	}
	if _, s, ok := strings.Cut(userID, "_session_"); ok && strings.HasPrefix(userID, "user_") {
		return s
	}
	return ""
}

// thinkingBudget reads budget_tokens of an enabled thinking object.
func thinkingBudget(v []byte) int {
	if v[0] != '{' {
		return 0
	}
	enabled, budget := false, 0
	jsonscan.EachMember(v, 0, func(k []byte, s, e int) bool {
		switch string(k) {
		case "type":
			enabled = string(v[s:e]) == `"enabled"`
		case "budget_tokens":
			budget = jsonscan.SmallInt(v[s:e])
		}
		return true
	})
	if !enabled {
		return 0
	}
	return budget
}

// thinkingAsked reports whether a thinking object turns thinking on:
// any type but "disabled" does. Reasoning is something the request wants,
// not needs: a model without it still answers.
func thinkingAsked(v []byte) bool {
	if v[0] != '{' {
		return false
	}
	on := false
	jsonscan.EachMember(v, 0, func(k []byte, s, e int) bool {
		if string(k) == "type" {
			on = v[s] == '"' && string(v[s:e]) != `"disabled"`
		}
		return true
	})
	return on
}

// checkMessages validates the messages array of a valid body: a non-empty
// array of {role, content} objects, role user, assistant or system,
// content a string or an array of typed blocks. It reports whether any
// block (or a tool result's block) is an image.
func checkMessages(v []byte) (vision bool, err error) {
	if len(v) == 0 || v[0] == 'n' {
		return false, llm.BadRequest("messages", "messages is required: an array of {\"role\", \"content\"} objects")
	}
	if v[0] != '[' {
		return false, llm.BadRequest("messages", "messages must be an array of {\"role\", \"content\"} objects")
	}
	n := 0
	jsonscan.EachElement(v, func(ms, me int) bool {
		m := v[ms:me]
		param := fmt.Sprintf("messages[%d]", n)
		n++
		if m[0] != '{' {
			err = llm.BadRequest(param, "%s must be an object with role and content", param)
			return false
		}
		var role, content []byte
		jsonscan.EachMember(m, 0, func(k []byte, s, e int) bool {
			switch string(k) {
			case "role":
				role = m[s:e]
			case "content":
				content = m[s:e]
			}
			return true
		})
		switch string(role) {
		case `"user"`, `"assistant"`, `"system"`:
		case "":
			err = llm.BadRequest(param+".role", "%s.role is required: \"user\" or \"assistant\"", param)
		default:
			err = llm.BadRequest(param+".role", "%s.role must be \"user\" or \"assistant\"", param)
		}
		if err != nil {
			return false
		}
		var img bool
		img, err = checkContent(content, param+".content")
		vision = vision || img
		return err == nil
	})
	if err == nil && n == 0 {
		err = llm.BadRequest("messages", "messages must contain at least one message")
	}
	return vision, err
}

// checkContent validates a message's (or a tool result's) content.
func checkContent(c []byte, param string) (vision bool, err error) {
	switch {
	case len(c) == 0 || c[0] == 'n':
		return false, llm.BadRequest(param, "%s is required: a string or an array of content blocks", param)
	case c[0] == '"':
		return false, nil
	case c[0] != '[':
		return false, llm.BadRequest(param, "%s must be a string or an array of content blocks", param)
	}
	i := 0
	jsonscan.EachElement(c, func(bs, be int) bool {
		b := c[bs:be]
		bp := fmt.Sprintf("%s[%d]", param, i)
		i++
		if b[0] != '{' {
			err = llm.BadRequest(bp, "%s must be a content block object with a type", bp)
			return false
		}
		var typ, inner []byte
		jsonscan.EachMember(b, 0, func(k []byte, s, e int) bool {
			switch string(k) {
			case "type":
				typ = b[s:e]
			case "content":
				inner = b[s:e]
			}
			return true
		})
		if len(typ) < 3 || typ[0] != '"' {
			err = llm.BadRequest(bp+".type", "%s.type is required: \"text\", \"image\", \"tool_use\", \"tool_result\"...", bp)
			return false
		}
		switch string(typ) {
		case `"image"`:
			vision = true
		case `"tool_result"`:
			// A tool result's content may hold images too; it is optional.
			if len(inner) > 0 && inner[0] == '[' {
				var img bool
				img, err = checkContent(inner, bp+".content")
				vision = vision || img
			}
		}
		return err == nil
	})
	return vision, err
}

// Raw returns the client's body as sent.
func (s *source) Raw() []byte { return s.body }

// Rewrite returns the body for an Anthropic upstream: the client's bytes
// with the model replaced, and metadata.user_id replaced with e.User (or
// removed when it is empty). Everything else, cache_control breakpoints
// included, keeps its bytes, so the vendor's prompt cache sees the
// client's prefix. When the edits drop parameters or lower max_tokens,
// the top level is joined again from the client's own member bytes, with
// only what the edits name changed.
func (s *source) Rewrite(model string, e llm.Edits) []byte {
	quoted := marshal(model)
	if len(e.Drop) == 0 && (e.MaxOutput <= 0 || s.maxTokens <= e.MaxOutput) {
		splices := []jsonscan.Splice{{Start: s.modelStart, End: s.modelEnd, With: quoted}}
		if s.metaStart >= 0 {
			splices = append(splices, jsonscan.SetMembers(s.body, s.metaStart, userID(e))...)
		}
		return jsonscan.Apply(s.body, splices)
	}
	return s.edited(quoted, e)
}

// userID is the edit of a metadata object's user_id: e.User in place of
// the client's, or no user_id when it is empty.
func userID(e llm.Edits) func(key []byte) ([]byte, bool) {
	with := e.UserJSON()
	return func(key []byte) ([]byte, bool) { return with, string(key) == "user_id" }
}

// edited rebuilds the top level member by member.
func (s *source) edited(quoted []byte, e llm.Edits) []byte {
	b := s.body
	maxTokens := s.maxTokens
	if e.MaxOutput > 0 {
		maxTokens = min(maxTokens, e.MaxOutput)
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, '{')
	first := true
	jsonscan.MemberSpan(b, jsonscan.SkipSpace(b, 0), func(k []byte, ks, vs, ve int) bool {
		v := b[vs:ve]
		switch name := string(k); {
		case dropped(e, name):
			return true
		case name == "model":
			v = quoted
		case name == "metadata" && s.metaStart >= 0:
			v = jsonscan.Apply(v, jsonscan.SetMembers(v, 0, userID(e)))
		case name == "max_tokens":
			v = strconv.AppendInt(nil, int64(maxTokens), 10)
		case name == "thinking" && s.budget >= maxTokens:
			// Anthropic wants the budget below max_tokens; when that
			// leaves less than the smallest budget, thinking goes.
			if maxTokens-1 < minThinkingBudget {
				return true
			}
			v = marshal(thinking{Type: "enabled", BudgetTokens: maxTokens - 1})
		case name == "tool_choice" && v[0] == '{' && dropped(e, "parallel_tool_calls"):
			v = withoutMember(v, "disable_parallel_tool_use")
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, b[ks:vs]...) // the key, its colon and spacing
		out = append(out, v...)
		return true
	})
	return append(out, '}')
}

// withoutMember returns the object obj without its member name.
func withoutMember(obj []byte, name string) []byte {
	out := []byte{'{'}
	first := true
	jsonscan.MemberSpan(obj, 0, func(k []byte, ks, vs, ve int) bool {
		if string(k) == name {
			return true
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, obj[ks:ve]...)
		return true
	})
	return append(out, '}')
}
