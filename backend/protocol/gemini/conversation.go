package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"

	"freelane/backend/llm"
)

// Conversation decodes the whole body into the neutral model. Function
// calls get the ids the neutral model needs ("call_" and their number in
// the conversation, or the part's own id), and each function response
// answers the earliest call of its name not answered yet, as the API
// pairs them.
func (r *source) Conversation() (*llm.Conversation, error) {
	var req request
	if err := json.Unmarshal(r.body, &req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, llm.BadRequest(te.Field, "%s must be %s, not a JSON %s", te.Field, kindName(te.Type.Kind()), te.Value)
		}
		return nil, llm.BadRequest("", "request body does not match GenerateContentRequest")
	}
	c := &llm.Conversation{Stream: r.stream, IncludeUsage: r.stream}
	if sys := pick(req.SystemInstruction, req.SystemSnake); sys != nil {
		for _, p := range sys.Parts {
			if p.Text != nil && *p.Text != "" {
				c.System = append(c.System, llm.Part{Kind: llm.PartText, Text: *p.Text})
			}
		}
	}
	c.Messages = messages(req.Contents)
	for _, t := range req.Tools {
		decls := t.FunctionDeclarations
		if decls == nil {
			decls = t.DeclarationsSnake
		}
		for _, d := range decls {
			tool := llm.Tool{Name: d.Name, Description: d.Description}
			switch {
			case d.JSONSchema != nil:
				tool.Parameters = d.JSONSchema
			case d.JSONSchemaSnake != nil:
				tool.Parameters = d.JSONSchemaSnake
			default:
				tool.Parameters = toJSONSchema(d.Parameters)
			}
			c.Tools = append(c.Tools, tool)
		}
	}
	if tc := pick(req.ToolConfig, req.ToolConfigSnake); tc != nil {
		if fc := pick(tc.FunctionCallingConfig, tc.FCCSnake); fc != nil {
			c.ToolChoice = choice(fc)
		}
	}
	if g := pick(req.GenerationConfig, req.GenConfigSnake); g != nil {
		generation(c, g)
	}
	return c, nil
}

func choice(fc *functionCallingConfig) *llm.ToolChoice {
	names := fc.AllowedNames
	if names == nil {
		names = fc.AllowedSnake
	}
	switch strings.ToUpper(fc.Mode) {
	case "NONE":
		return &llm.ToolChoice{Mode: llm.ToolNone}
	case "ANY":
		if len(names) == 1 {
			return &llm.ToolChoice{Mode: llm.ToolNamed, Name: names[0]}
		}
		return &llm.ToolChoice{Mode: llm.ToolRequired}
	case "AUTO", "VALIDATED":
		return &llm.ToolChoice{Mode: llm.ToolAuto}
	}
	return nil
}

func generation(c *llm.Conversation, g *generationConfig) {
	g.normalize()
	c.Temperature, c.TopP = g.Temperature, g.TopP
	if g.TopK != nil && *g.TopK >= 0 && *g.TopK < math.MaxInt32 {
		k := int(*g.TopK)
		c.TopK = &k
	}
	c.MaxOutput = max(g.MaxOutputTokens, 0)
	c.Stop = g.StopSequences
	c.Seed = g.Seed
	c.PresencePenalty, c.FrequencyPenalty = g.PresencePenalty, g.FrequencyPenalty
	if g.ResponseMimeType == "application/json" {
		switch {
		case g.ResponseJSONSchema != nil:
			c.ResponseFormat = &llm.ResponseFormat{Type: "json_schema", Name: "response", Schema: g.ResponseJSONSchema}
		case g.ResponseSchema != nil:
			c.ResponseFormat = &llm.ResponseFormat{Type: "json_schema", Name: "response", Schema: toJSONSchema(g.ResponseSchema)}
		default:
			c.ResponseFormat = &llm.ResponseFormat{Type: "json_object"}
		}
	}
	if t := g.ThinkingConfig; t != nil {
		switch {
		case t.Budget != nil && *t.Budget == 0:
			c.Reasoning = &llm.Reasoning{Disabled: true}
		case t.Budget != nil && *t.Budget > 0:
			c.Reasoning = &llm.Reasoning{BudgetTokens: *t.Budget}
		case t.Level != "":
			c.Reasoning = &llm.Reasoning{Effort: strings.ToLower(t.Level)}
		default:
			// A dynamic budget (-1) or thoughts asked for without a
			// budget leave the depth to the model.
			c.Reasoning = &llm.Reasoning{Effort: "medium"}
		}
	}
}

// messages converts the turns. A user turn's function responses become
// tool messages of their own, in place, with the turn's other parts around
// them kept as user messages.
func messages(contents []content) []llm.Message {
	var out []llm.Message
	calls := callIDs{prefix: "call_"}
	pending := map[string][]string{} // unanswered call ids by function name
	for _, ct := range contents {
		for i := range ct.Parts {
			ct.Parts[i].normalize()
		}
		if ct.Role == "model" {
			parts := answerParts(ct.Parts, &calls)
			for _, p := range parts {
				if p.Kind == llm.PartToolCall {
					pending[p.ToolCall.Name] = append(pending[p.ToolCall.Name], p.ToolCall.ID)
				}
			}
			if len(parts) > 0 {
				out = append(out, llm.Message{Role: llm.RoleAssistant, Parts: parts})
			}
			continue
		}
		var user []llm.Part
		flush := func() {
			if len(user) > 0 {
				out = append(out, llm.Message{Role: llm.RoleUser, Parts: user})
				user = nil
			}
		}
		for _, p := range ct.Parts {
			switch {
			case p.FunctionResponse != nil:
				flush()
				fr := p.FunctionResponse
				id := answer(pending, fr, &calls)
				out = append(out, llm.Message{Role: llm.RoleTool, Parts: []llm.Part{{
					Kind: llm.PartToolResult, ToolResult: toolResult(id, fr),
				}}})
			case p.Text != nil && !p.Thought:
				if *p.Text != "" {
					user = append(user, llm.Part{Kind: llm.PartText, Text: *p.Text})
				}
			case p.InlineData != nil:
				user = append(user, llm.Part{Kind: llm.PartImage, Image: &llm.Image{MediaType: p.InlineData.MimeType, Data: p.InlineData.Data}})
			case p.FileData != nil:
				user = append(user, llm.Part{Kind: llm.PartImage, Image: &llm.Image{MediaType: p.FileData.MimeType, URL: p.FileData.FileURI}})
			}
		}
		flush()
	}
	return out
}

// answer finds the call a function response answers: the one with its id,
// or else the earliest unanswered call of its name. A response to no call
// gets an id of its own.
func answer(pending map[string][]string, fr *functionResponse, calls *callIDs) string {
	ids := pending[fr.Name]
	if fr.ID != "" {
		for i, id := range ids {
			if id == fr.ID {
				pending[fr.Name] = append(ids[:i:i], ids[i+1:]...)
				return id
			}
		}
		return fr.ID
	}
	if len(ids) > 0 {
		pending[fr.Name] = ids[1:]
		return ids[0]
	}
	return calls.next("")
}

// toolResult reads a function response. The API's convention of an
// "output" or an "error" key holding the result (and FreeLane's own
// "content") gives the text itself; any other object is its JSON.
func toolResult(id string, fr *functionResponse) *llm.ToolResult {
	r := &llm.ToolResult{CallID: id, Name: fr.Name}
	raw := bytes.TrimSpace(fr.Response)
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && len(obj) == 1 {
		for k, v := range obj {
			var s string
			if (k == "output" || k == "content" || k == "error") && json.Unmarshal(v, &s) == nil {
				r.IsError = k == "error"
				r.Content = []llm.Part{{Kind: llm.PartText, Text: s}}
				return r
			}
		}
	}
	text := string(raw)
	if len(raw) == 0 || string(raw) == "null" {
		text = "{}"
	} else {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			text = buf.String()
		}
	}
	r.Content = []llm.Part{{Kind: llm.PartText, Text: text}}
	return r
}

// kindName says in words what JSON a Go kind is decoded from.
func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a number"
}
