package openai

import "freelane/backend/jsonscan"

// The members scanAnswer reads: of an answer, of a choice and of a
// message.
var (
	answerKeys  = []string{"choices", "data", "usage", "error"}
	choiceReads = []string{"message", "text"}
	messageKeys = []string{"content", "tool_calls", "function_call", "reasoning_content", "reasoning", "refusal"}
)

// scanAnswer fills a from a non-streaming answer by scanning it, exactly
// as json.Unmarshal would: every answer passes through CheckAnswer, and
// decoding one costs more than the rest of relaying it. It reports false,
// having filled a in part, for a body that is not valid JSON and where
// encoding/json could read it otherwise (see jsonscan.Pick) or would
// refuse a member's type; the caller then decodes it.
func scanAnswer(body []byte, a *answer) bool {
	var v [4][]byte
	if valid, picked := jsonscan.PickValid(body, answerKeys, v[:]); !valid || !picked {
		return false
	}
	choices, use := v[0], v[2]
	a.Data, a.Error = seenOf(v[1]), seenOf(v[3])
	if !jsonscan.Null(use) {
		if use[0] != '{' {
			return false
		}
		a.Usage = new(usage)
		if !scanUsage(use, a.Usage) {
			return false
		}
	}
	if jsonscan.Null(choices) {
		return true
	}
	if choices[0] != '[' {
		return false
	}
	a.Choices = []checkedChoice{}
	ok := true
	jsonscan.EachElement(choices, func(s, e int) bool {
		var c checkedChoice
		if c, ok = scanChoice(choices[s:e]); ok {
			a.Choices = append(a.Choices, c)
		}
		return ok
	})
	return ok
}

// scanChoice reads one choice of an answer; ok is false as for
// scanAnswer.
func scanChoice(b []byte) (c checkedChoice, ok bool) {
	if string(b) == "null" {
		return c, true
	}
	var v [2][]byte
	if b[0] != '{' || !jsonscan.Pick(b, choiceReads, v[:]) {
		return c, false
	}
	c.Text = seenOf(v[1])
	m := v[0]
	if jsonscan.Null(m) {
		return c, true
	}
	var mv [6][]byte
	if m[0] != '{' || !jsonscan.Pick(m, messageKeys, mv[:]) {
		return c, false
	}
	c.Message = &checkedMessage{Content: contentOf(mv[0]), ToolCalls: seenOf(mv[1]), FunctionCall: seenOf(mv[2]),
		ReasoningContent: seenOf(mv[3]), Reasoning: seenOf(mv[4]), Refusal: seenOf(mv[5])}
	return c, true
}

// seenOf is what seen.UnmarshalJSON makes of a member's value (absent:
// nothing seen).
func seenOf(v []byte) seen {
	if v == nil {
		return seen{}
	}
	return seen{set: string(v) != "null", empty: string(v) == "[]" || string(v) == `""`}
}

// contentOf is what content.UnmarshalJSON makes of a member's value.
func contentOf(v []byte) content {
	c := content{seen: seenOf(v)}
	if len(v) == 0 || v[0] != '"' {
		return c
	}
	c.text = true
	if len(v) <= 2+6*quotaNoticeMax {
		c.short = jsonscan.Unquote(v)
	}
	return c
}
