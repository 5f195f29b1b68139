package gemini

import (
	"encoding/json"
	"errors"
	"math"
	"mime"
	"path"
	"slices"
	"strings"

	"freelane/backend/llm"
)

// Thinking budgets for the neutral reasoning efforts. Every current
// thinking model accepts budgets from 512 to 24576 (2.5 Pro from 128 to
// 32768, 2.5 Flash-Lite from 512), so each of these is valid for all.
var effortBudgets = map[string]int{"minimal": 512, "low": 1024, "medium": 8192, "high": 24576}

// maxThinkingBudget is the largest budget every thinking model accepts
// (2.5 Pro would take 32768, the Flash models refuse more than this).
const maxThinkingBudget = 24576

// maxStops is how many stop sequences the API takes.
const maxStops = 5

// outRequest is the body FreeLane writes for a Gemini upstream.
type outRequest struct {
	Contents          []content      `json:"contents"`
	SystemInstruction *content       `json:"systemInstruction,omitempty"`
	Tools             []outTool      `json:"tools,omitempty"`
	ToolConfig        *outToolConfig `json:"toolConfig,omitempty"`
	GenerationConfig  *outGenConfig  `json:"generationConfig,omitempty"`
	// CachedContent names the explicit cache that holds the request's
	// prefix; the API then refuses a systemInstruction, tools and a
	// toolConfig of the request's own, which the cache holds.
	CachedContent string `json:"cachedContent,omitempty"`
}

type outTool struct {
	FunctionDeclarations []outFunction `json:"functionDeclarations"`
}

type outFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

type outToolConfig struct {
	FunctionCallingConfig outFunctionCalling `json:"functionCallingConfig"`
}

type outFunctionCalling struct {
	Mode         string   `json:"mode"`
	AllowedNames []string `json:"allowedFunctionNames,omitempty"`
}

type outGenConfig struct {
	Temperature      *float64        `json:"temperature,omitempty"`
	TopP             *float64        `json:"topP,omitempty"`
	TopK             *int            `json:"topK,omitempty"`
	MaxOutputTokens  int             `json:"maxOutputTokens,omitempty"`
	StopSequences    []string        `json:"stopSequences,omitempty"`
	Seed             *int64          `json:"seed,omitempty"`
	PresencePenalty  *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty *float64        `json:"frequencyPenalty,omitempty"`
	ResponseMimeType string          `json:"responseMimeType,omitempty"`
	ResponseSchema   map[string]any  `json:"responseSchema,omitempty"`
	ThinkingConfig   *outThinkConfig `json:"thinkingConfig,omitempty"`
}

type outThinkConfig struct {
	// ThinkingBudget is not omitted when 0, which turns thinking off.
	ThinkingBudget  int  `json:"thinkingBudget"`
	IncludeThoughts bool `json:"includeThoughts,omitempty"`
}

// EncodeRequest writes c as a generateContent body. The model is not part
// of the body (Path puts it in the URL), so model is not used.
func (codec) EncodeRequest(c *llm.Conversation, _ string, e llm.Edits) ([]byte, error) {
	contents, err := encodeContents(c.Messages)
	if err != nil {
		return nil, err
	}
	out := outRequest{Contents: contents, GenerationConfig: genConfig(c, e)}
	out.SystemInstruction, out.Tools, out.ToolConfig = head(c, e)
	return json.Marshal(out)
}

// head is what comes before the contents of a request: the system
// instruction, the tools and the tool config.
func head(c *llm.Conversation, e llm.Edits) (*content, []outTool, *outToolConfig) {
	drop := func(name string) bool { return slices.Contains(e.Drop, name) }
	var sys *content
	if ps := textParts(c.System); len(ps) > 0 {
		sys = &content{Parts: ps}
	}
	if len(c.Tools) == 0 || drop("tools") {
		return sys, nil, nil
	}
	fns := make([]outFunction, 0, len(c.Tools))
	for _, t := range c.Tools {
		fns = append(fns, outFunction{Name: t.Name, Description: t.Description, Parameters: toolParameters(t.Parameters)})
	}
	var tc *outToolConfig
	if c.ToolChoice != nil && !drop("tool_choice") {
		tc = toolChoice(c.ToolChoice)
	}
	return sys, []outTool{{FunctionDeclarations: fns}}, tc
}

// genConfig is the request's generationConfig, nil when it sets nothing.
func genConfig(c *llm.Conversation, e llm.Edits) *outGenConfig {
	drop := func(name string) bool { return slices.Contains(e.Drop, name) }
	g := outGenConfig{}
	if !drop("temperature") {
		g.Temperature = c.Temperature
	}
	if !drop("top_p") {
		g.TopP = c.TopP
	}
	if !drop("top_k") {
		g.TopK = c.TopK
	}
	if !drop("stop") {
		// The API refuses more than five stop sequences; the first five
		// stop the answer where the client meant it to stop most often.
		g.StopSequences = c.Stop[:min(len(c.Stop), maxStops)]
	}
	if !drop("seed") && c.Seed != nil && *c.Seed >= math.MinInt32 && *c.Seed <= math.MaxInt32 {
		// The seed is an int32 on this API; a larger one is left out
		// rather than refused.
		g.Seed = c.Seed
	}
	if !drop("presence_penalty") {
		g.PresencePenalty = c.PresencePenalty
	}
	if !drop("frequency_penalty") {
		g.FrequencyPenalty = c.FrequencyPenalty
	}
	if !drop("max_tokens") && !drop("max_completion_tokens") {
		g.MaxOutputTokens = c.MaxOutput
	}
	if e.MaxOutput > 0 && g.MaxOutputTokens > e.MaxOutput {
		g.MaxOutputTokens = e.MaxOutput
	}
	if rf := c.ResponseFormat; rf != nil && !drop("response_format") {
		switch rf.Type {
		case "json_object":
			g.ResponseMimeType = "application/json"
		case "json_schema":
			g.ResponseMimeType = "application/json"
			if s, ok := sanitizeSchema(rf.Schema); ok {
				g.ResponseSchema = s
			}
		}
	}
	if r := c.Reasoning; r != nil && !drop("reasoning_effort") {
		g.ThinkingConfig = thinking(r)
	}
	if b, _ := json.Marshal(g); string(b) != "{}" {
		return &g
	}
	return nil
}

// thinking is the thinkingConfig for a reasoning setting, nil when it says
// nothing the API can express.
func thinking(r *llm.Reasoning) *outThinkConfig {
	switch {
	case r.Disabled:
		return &outThinkConfig{ThinkingBudget: 0}
	case r.BudgetTokens > 0:
		return &outThinkConfig{ThinkingBudget: min(r.BudgetTokens, maxThinkingBudget), IncludeThoughts: true}
	case effortBudgets[r.Effort] > 0:
		return &outThinkConfig{ThinkingBudget: effortBudgets[r.Effort], IncludeThoughts: true}
	}
	return nil
}

func toolChoice(tc *llm.ToolChoice) *outToolConfig {
	switch tc.Mode {
	case llm.ToolNone:
		return &outToolConfig{outFunctionCalling{Mode: "NONE"}}
	case llm.ToolRequired:
		return &outToolConfig{outFunctionCalling{Mode: "ANY"}}
	case llm.ToolNamed:
		return &outToolConfig{outFunctionCalling{Mode: "ANY", AllowedNames: []string{tc.Name}}}
	case llm.ToolAuto:
		return &outToolConfig{outFunctionCalling{Mode: "AUTO"}}
	}
	return nil
}

// toolParameters is a tool's parameter schema as the API takes it. A tool
// without parameters, or whose object schema has no properties, has none:
// the API refuses an OBJECT schema with empty properties.
func toolParameters(raw json.RawMessage) map[string]any {
	s, ok := sanitizeSchema(raw)
	if !ok {
		return nil
	}
	if props, _ := s["properties"].(map[string]any); len(props) == 0 && s["type"] == "OBJECT" {
		return nil
	}
	return s
}

func textParts(ps []llm.Part) []part {
	var out []part
	for _, p := range ps {
		if p.Kind == llm.PartText && p.Text != "" {
			t := p.Text
			out = append(out, part{Text: &t})
		}
	}
	return out
}

// encodeContents writes the turns: user and tool messages as user turns,
// assistant messages as model turns, with adjacent turns of one role
// merged, as the API expects turns to alternate.
func encodeContents(msgs []llm.Message) ([]content, error) {
	out, err := encodeTurns(msgs, callNames(msgs))
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("gemini: the conversation has no message with content")
	}
	return out, nil
}

// callNames maps the ids of the tool calls in msgs to their functions'
// names. Gemini names the function a response answers; a neutral tool
// result may only have the call's id, so the names are found from the
// calls.
func callNames(msgs []llm.Message) map[string]string {
	names := map[string]string{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == llm.PartToolCall && p.ToolCall != nil {
				names[p.ToolCall.ID] = p.ToolCall.Name
			}
		}
	}
	return names
}

// encodeTurns writes msgs as turns, finding the names of the functions
// that tool results answer in names. It may return no turn at all.
func encodeTurns(msgs []llm.Message, names map[string]string) ([]content, error) {
	var out []content
	for _, m := range msgs {
		role := "user"
		var parts []part
		if m.Role == llm.RoleAssistant {
			role = "model"
			parts = modelParts(m.Parts, false)
		} else {
			var err error
			if parts, err = userParts(m.Parts, names); err != nil {
				return nil, err
			}
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			continue
		}
		out = append(out, content{Role: role, Parts: parts})
	}
	return out, nil
}

func userParts(ps []llm.Part, names map[string]string) ([]part, error) {
	var out []part
	for _, p := range ps {
		switch p.Kind {
		case llm.PartText:
			if p.Text != "" {
				t := p.Text
				out = append(out, part{Text: &t})
			}
		case llm.PartImage:
			if ip := imagePart(p.Image); ip != nil {
				out = append(out, *ip)
			}
		case llm.PartToolResult:
			r := p.ToolResult
			if r == nil {
				continue
			}
			name := r.Name
			if name == "" {
				name = names[r.CallID]
			}
			if name == "" {
				return nil, errors.New("gemini: a tool result answers no earlier tool call, and the API needs the function's name")
			}
			out = append(out, part{FunctionResponse: &functionResponse{Name: name, Response: resultObject(r)}})
			// Images a tool returned follow its response as parts of
			// their own, which every model reads; only the newest models
			// take them inside the response.
			for _, c := range r.Content {
				if c.Kind == llm.PartImage {
					if ip := imagePart(c.Image); ip != nil {
						out = append(out, *ip)
					}
				}
			}
		}
	}
	return out, nil
}

// resultObject is a tool result as the object functionResponse.response
// must be: a JSON object the tool returned as its text is kept, any other
// text is wrapped as {"content": text}, or {"error": text} for a failure.
func resultObject(r *llm.ToolResult) json.RawMessage {
	var text strings.Builder
	for _, c := range r.Content {
		if c.Kind == llm.PartText {
			text.WriteString(c.Text)
		}
	}
	s := text.String()
	if t := strings.TrimSpace(s); !r.IsError && strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	key := "content"
	if r.IsError {
		key = "error"
	}
	b, _ := json.Marshal(map[string]string{key: s})
	return b
}

// imagePart is an image input: inline data as inlineData (a data: URL
// too), an http(s) URL as fileData with the type its name suggests.
func imagePart(img *llm.Image) *part {
	if img == nil {
		return nil
	}
	if img.Data != "" {
		mt := img.MediaType
		if mt == "" {
			mt = "image/jpeg"
		}
		return &part{InlineData: &blob{MimeType: mt, Data: img.Data}}
	}
	u := img.URL
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, found := strings.Cut(rest, ",")
		mt, isBase64 := strings.CutSuffix(meta, ";base64")
		if !found || !isBase64 {
			return nil
		}
		if mt == "" {
			mt = "image/jpeg"
		}
		return &part{InlineData: &blob{MimeType: mt, Data: data}}
	}
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return nil
	}
	mt := img.MediaType
	if mt == "" {
		p := u
		if i := strings.IndexAny(p, "?#"); i >= 0 {
			p = p[:i]
		}
		mt = mime.TypeByExtension(strings.ToLower(path.Ext(p)))
		if !strings.HasPrefix(mt, "image/") {
			mt = "image/jpeg"
		}
	}
	return &part{FileData: &fileData{MimeType: mt, FileURI: u}}
}
