package responses

import (
	"encoding/json"

	"freelane/backend/jsonscan"
)

// Response ids are FreeLane's own. A stored response is found by its id,
// so an id an upstream chose (one that answers every request with the same
// "resp_..." id, or a guessable one) would let one conversation be read or
// continued as another. Every answer a client gets therefore carries an id
// FreeLane minted for the request, whatever the answer's path: translated
// from another dialect, or relayed from an upstream that speaks this one.
// Only the id's bytes are replaced; the rest of the body or event is left
// as it came.

// NewResponseID returns a new response id: "resp_" and 128 random bits from
// crypto/rand as 32 hex digits, 37 bytes in all, well within MaxIDLength.
func NewResponseID() string { return newID("resp_") }

// span is a value to replace, from s to e; an empty span (s == e) is an
// insertion.
type span struct{ s, e int }

// spanList collects spans without allocating for the few a body or event
// has; a hostile one with more duplicate members spills to the heap.
type spanList struct {
	fixed [4]span
	n     int
	more  []span
}

func (l *spanList) add(s span) {
	if l.n < len(l.fixed) {
		l.fixed[l.n] = s
	} else {
		l.more = append(l.more, s)
	}
	l.n++
}

func (l *spanList) at(i int) span {
	if i < len(l.fixed) {
		return l.fixed[i]
	}
	return l.more[i-len(l.fixed)]
}

// SetID returns obj, a Response object as JSON, with its id set to id:
// every top-level "id" member's value is replaced (a hostile body may
// repeat the member, and JSON decoders take the last one), and an object
// without one gets one. Anything that is not an object is returned as it
// is, as is JSON that is not valid. obj itself is never changed.
func SetID(obj []byte, id string) []byte {
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' || !json.Valid(obj) {
		return obj
	}
	var l spanList
	idSpans(obj, i, &l)
	return splice(obj, &l, id)
}

// idSpans adds the spans of the "id" members of the object at obj[i], or
// an insertion point when it has none.
func idSpans(obj []byte, i int, l *spanList) {
	before := l.n
	jsonscan.EachMember(obj, i, func(k []byte, vs, ve int) bool {
		if string(k) == "id" {
			l.add(span{vs, ve})
		}
		return true
	})
	if l.n == before {
		l.add(span{i + 1, i + 1})
	}
}

// carriesNoResponse are the events whose type says they hold no response
// object: the item, part and delta events, nearly every event of a stream.
// Clients read a response (and its id) only from the other events, so
// these are passed on as they came, with no scan.
var carriesNoResponse = map[string]bool{
	evItemAdded: true, evItemDone: true, evPartAdded: true, evPartDone: true,
	evTextDelta: true, evTextDone: true, evArgsDelta: true, evArgsDone: true,
	evSummaryPartAdded: true, evSummaryPartDone: true, evSummaryDelta: true, evSummaryDone: true,
}

// SetEventID returns data, one event of a Responses stream whose type is
// name (Codec.EventName), with the id of the response it carries set to
// id: the "id" of its top-level "response" object and a top-level
// "response_id". Every event is rewritten that may carry one:
// response.created, response.in_progress, response.completed,
// response.incomplete, response.failed, and any event of a type this
// package does not know (name ""), which a hostile upstream may send. An
// event that carries neither, or is not valid JSON, is returned as it is,
// without a copy; data itself is never changed.
func SetEventID(name string, data []byte, id string) []byte {
	if carriesNoResponse[name] {
		return data
	}
	// The scan below walks valid JSON only; the check costs one pass, paid
	// by the few events that may carry the id.
	i := jsonscan.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' || !json.Valid(data) {
		return data
	}
	var l spanList
	jsonscan.EachMember(data, i, func(k []byte, vs, ve int) bool {
		switch string(k) {
		case "response":
			if data[vs] == '{' {
				idSpans(data, vs, &l)
			}
		case "response_id":
			if data[vs] == '"' {
				l.add(span{vs, ve})
			}
		}
		return true
	})
	return splice(data, &l, id)
}

// splice returns b with each span replaced by the quoted id (a member
// "id": and the id at an insertion), in one allocation; b when there is
// nothing to replace or every span already holds the id.
func splice(b []byte, l *spanList, id string) []byte {
	if l.n == 0 {
		return b
	}
	quoted := len(id) + 2
	size, same := len(b), true
	for i := range l.n {
		sp := l.at(i)
		if sp.s == sp.e {
			size += len(`"id":`) + quoted + 1
			same = false
			continue
		}
		size += quoted - (sp.e - sp.s)
		if v := b[sp.s:sp.e]; len(v) != quoted || v[0] != '"' || string(v[1:len(v)-1]) != id {
			same = false
		}
	}
	if same {
		return b
	}
	out := make([]byte, 0, size)
	prev := 0
	for i := range l.n {
		sp := l.at(i)
		out = append(out, b[prev:sp.s]...)
		if sp.s == sp.e {
			out = append(out, `"id":`...)
			out = appendQuoted(out, id)
			// The member goes first in the object, so a comma follows
			// unless the object was empty.
			if j := jsonscan.SkipSpace(b, sp.s); j < len(b) && b[j] != '}' {
				out = append(out, ',')
			}
		} else {
			out = appendQuoted(out, id)
		}
		prev = sp.e
	}
	return append(out, b[prev:]...)
}

// appendQuoted appends id as a JSON string. FreeLane's ids are hex after
// an ASCII prefix, so they need no escaping; any other string is escaped.
func appendQuoted(b []byte, id string) []byte {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return jsonscan.AppendString(b, id)
		}
	}
	b = append(b, '"')
	b = append(b, id...)
	return append(b, '"')
}
