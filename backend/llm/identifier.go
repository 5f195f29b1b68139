package llm

import "freelane/backend/jsonscan"

// MaxIdentifier is the longest caller identifier (a session id, an end
// user id) FreeLane reads, in bytes. Real ones are UUIDs or short JSON
// objects of them; a longer value is ignored as if absent, so a hostile
// one costs nothing to hash and never reaches an upstream.
const MaxIdentifier = 512

// IdentifierValue reads a caller identifier from its JSON value v: the
// string, or "" when v is not a string, is empty or is longer than
// MaxIdentifier.
func IdentifierValue(v []byte) string {
	if len(v) < 3 || v[0] != '"' || len(v) > 6*MaxIdentifier+2 {
		return ""
	}
	s := jsonscan.Unquote(v)
	if len(s) > MaxIdentifier {
		return ""
	}
	return s
}

// UserJSON is e.User as the JSON string that replaces a client's end-user
// identifier in a body, nil (the member goes) when there is none.
func (e Edits) UserJSON() []byte {
	if e.User == "" {
		return nil
	}
	return jsonscan.AppendString(nil, e.User)
}
