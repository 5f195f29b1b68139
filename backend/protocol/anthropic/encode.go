package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
)

// The request body, as FreeLane writes it for an Anthropic upstream.
type messagesRequest struct {
	Model         string      `json:"model"`
	MaxTokens     int         `json:"max_tokens"`
	System        any         `json:"system,omitempty"`
	Messages      []turn      `json:"messages"`
	Tools         []toolDef   `json:"tools,omitempty"`
	ToolChoice    *toolChoice `json:"tool_choice,omitempty"`
	Thinking      *thinking   `json:"thinking,omitempty"`
	Temperature   *float64    `json:"temperature,omitempty"`
	TopP          *float64    `json:"top_p,omitempty"`
	TopK          *int        `json:"top_k,omitempty"`
	StopSequences []string    `json:"stop_sequences,omitempty"`
	Metadata      *metadata   `json:"metadata,omitempty"`
	Stream        bool        `json:"stream,omitempty"`
}

type turn struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type toolDef struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

// cacheControl is a prompt-cache breakpoint on a block or a tool.
type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

type toolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

type metadata struct {
	UserID string `json:"user_id,omitempty"`
}

// The content blocks, one type each, so every block carries exactly the
// fields Anthropic defines for it.
type (
	textBlock struct {
		Type         string        `json:"type"`
		Text         string        `json:"text"`
		CacheControl *cacheControl `json:"cache_control,omitempty"`
	}
	imageBlock struct {
		Type         string        `json:"type"`
		Source       imageSource   `json:"source"`
		CacheControl *cacheControl `json:"cache_control,omitempty"`
	}
	imageSource struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type,omitempty"`
		Data      string `json:"data,omitempty"`
		URL       string `json:"url,omitempty"`
	}
	toolUseBlock struct {
		Type         string          `json:"type"`
		ID           string          `json:"id"`
		Name         string          `json:"name"`
		Input        json.RawMessage `json:"input"`
		CacheControl *cacheControl   `json:"cache_control,omitempty"`
	}
	toolResultBlock struct {
		Type         string        `json:"type"`
		ToolUseID    string        `json:"tool_use_id"`
		Content      any           `json:"content,omitempty"`
		IsError      bool          `json:"is_error,omitempty"`
		CacheControl *cacheControl `json:"cache_control,omitempty"`
	}
	thinkingBlock struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}
	redactedBlock struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
)

// Thinking budgets for the efforts other dialects ask for. Anthropic's
// smallest budget is 1024 tokens; "minimal" turns thinking off, since even
// the smallest budget is more than a minimal effort would spend.
var effortBudget = map[string]int{"minimal": 0, "low": 1024, "medium": 4096, "high": 16384}

// minThinkingBudget is the smallest budget_tokens Anthropic accepts.
const minThinkingBudget = 1024

// placeholderUser opens a conversation whose first turn is the
// assistant's (a chat UI's greeting): Anthropic wants the user to speak
// first. The words describe what happened rather than ask for anything, so
// the model reads the greeting that follows as its own opening and
// answers the real user turn after it.
const placeholderUser = "(start of conversation)"

// dropAliases maps the parameter names upstream quirks use (OpenAI's) to
// the members of an Anthropic request they stand for. Every name also
// stands for the member of that very name.
var dropAliases = map[string]string{
	"stop":             "stop_sequences",
	"user":             "metadata",
	"reasoning_effort": "thinking",
}

// dropped reports whether the edits drop the Anthropic member name.
// max_tokens is never dropped: Anthropic requires it.
func dropped(e llm.Edits, name string) bool {
	for _, d := range e.Drop {
		if d == name {
			return name != "max_tokens"
		}
		if alias, ok := dropAliases[d]; ok && alias == name {
			return true
		}
	}
	return false
}

// EncodeRequest writes c as a Messages API request for model. What the
// Messages API has no field for is left out: the seed, the penalties,
// metadata other than the user, a tool's strict flag, and reasoning
// without an Anthropic signature.
func (codec) EncodeRequest(c *llm.Conversation, model string, e llm.Edits) ([]byte, error) {
	if c == nil {
		return nil, errors.New("anthropic: no conversation")
	}
	r := messagesRequest{Model: model, Stream: c.Stream}
	r.MaxTokens = c.MaxOutput
	if r.MaxTokens <= 0 {
		r.MaxTokens = defaultMaxTokens
		if e.MaxOutput > 0 {
			r.MaxTokens = e.MaxOutput
		}
	}
	if e.MaxOutput > 0 && r.MaxTokens > e.MaxOutput {
		r.MaxTokens = e.MaxOutput
	}

	if e.Session != "" {
		c = withAutoBreakpoints(c)
	}
	// The vendor's prompt is the tools, the system and the messages, in
	// that order; the breakpoints are taken in that order too.
	bp := newBreakpoints(c)
	for _, t := range c.Tools {
		r.Tools = append(r.Tools, toolDef{Name: t.Name, Description: t.Description, InputSchema: objectSchema(t.Parameters), CacheControl: bp.take(t.Cache)})
	}
	system := systemBlocks(c, bp)
	if s := jsonInstruction(c.ResponseFormat); s != "" && !dropped(e, "response_format") {
		system = append(system, textBlock{Type: "text", Text: s})
	}
	switch {
	case len(system) == 0:
	case len(system) == 1 && system[0].CacheControl == nil:
		r.System = system[0].Text
	default:
		r.System = system
	}

	var err error
	if r.Messages, err = turns(c.Messages, bp); err != nil {
		return nil, err
	}
	if len(r.Tools) > 0 {
		r.ToolChoice = encodeToolChoice(c, e)
	}
	if !dropped(e, "temperature") && c.Temperature != nil {
		// OpenAI's scale goes to 2, Anthropic's to 1.
		t := min(max(*c.Temperature, 0), 1)
		r.Temperature = &t
	}
	if !dropped(e, "top_p") {
		r.TopP = c.TopP
	}
	if !dropped(e, "top_k") {
		r.TopK = c.TopK
	}
	if !dropped(e, "stop_sequences") {
		for _, s := range c.Stop {
			// Anthropic refuses stop sequences of only white space.
			if strings.TrimSpace(s) != "" {
				r.StopSequences = append(r.StopSequences, s)
			}
		}
	}
	if e.User != "" && !dropped(e, "metadata") {
		r.Metadata = &metadata{UserID: e.User}
	}
	if !dropped(e, "thinking") {
		encodeThinking(&r, c, e)
	}
	if r.Temperature != nil && r.TopP != nil {
		// Claude models since the 4.5 generation refuse the two together;
		// the temperature is the one clients mean to set.
		r.TopP = nil
	}
	return marshal(r), nil
}

// systemBlocks are the conversation's system parts as text blocks, with
// their breakpoints.
func systemBlocks(c *llm.Conversation, bp *breakpoints) []textBlock {
	var out []textBlock
	for _, p := range c.System {
		if p.Kind == llm.PartText && p.Text != "" {
			out = append(out, textBlock{Type: "text", Text: p.Text, CacheControl: bp.take(p.Cache)})
		}
	}
	return out
}

// maxBreakpoints is the most cache_control blocks Anthropic accepts in
// one request.
const maxBreakpoints = 4

// breakpoints hands out a conversation's cache breakpoints in prompt
// order, leaving out the earliest ones when there are more than
// maxBreakpoints: a later breakpoint's prefix holds the earlier ones',
// and the vendor looks back from each breakpoint for a prefix it cached
// before, so the latest ones keep the most of the cache.
type breakpoints struct {
	// count is how many breakpoints the conversation has, skip how many
	// of the earliest are still to be left out.
	count, skip int
}

func newBreakpoints(c *llm.Conversation) *breakpoints {
	n := 0
	for _, t := range c.Tools {
		if t.Cache != nil {
			n++
		}
	}
	for _, p := range c.System {
		if p.Cache != nil {
			n++
		}
	}
	for _, m := range c.Messages {
		for _, p := range m.Parts {
			if p.Cache != nil {
				n++
			}
		}
	}
	return &breakpoints{count: n, skip: max(n-maxBreakpoints, 0)}
}

// withAutoBreakpoints returns c with cache breakpoints where a caller of
// another dialect would have put them, when c has none: after the tools,
// after the system prompt and on the last block of the conversation. The
// Messages API caches only what a breakpoint marks, so without them a
// conversation from an OpenAI-style client, whose vendors cache prefixes
// on their own, would send its whole prompt at the full price on every
// turn. Only a conversation with a session gets them: a write costs more
// than a plain prompt, and only a next turn reads it back. The breakpoint
// on the last block moves with the conversation; the vendor looks back
// from it for the prefix the previous turn cached. c is not changed.
func withAutoBreakpoints(c *llm.Conversation) *llm.Conversation {
	if newBreakpoints(c).count > 0 {
		return c
	}
	auto := &llm.CachePoint{}
	out := *c
	if n := len(c.Tools); n > 0 {
		out.Tools = slices.Clone(c.Tools)
		out.Tools[n-1].Cache = auto
	}
	for i := len(c.System) - 1; i >= 0; i-- {
		if p := c.System[i]; p.Kind == llm.PartText && p.Text != "" {
			out.System = slices.Clone(c.System)
			out.System[i].Cache = auto
			break
		}
	}
	if n := len(c.Messages); n > 0 {
		last := c.Messages[n-1]
		for j := len(last.Parts) - 1; j >= 0; j-- {
			if cacheable(last.Parts[j]) {
				out.Messages = slices.Clone(c.Messages)
				out.Messages[n-1].Parts = slices.Clone(last.Parts)
				out.Messages[n-1].Parts[j].Cache = auto
				break
			}
		}
	}
	return &out
}

// cacheable reports whether part p becomes a block that can carry a
// breakpoint: text, an image, a tool call or a tool's result, not a
// thinking block.
func cacheable(p llm.Part) bool {
	switch p.Kind {
	case llm.PartText:
		return p.Text != ""
	case llm.PartImage, llm.PartToolCall, llm.PartToolResult:
		return true
	}
	return false
}

// take is the cache_control of the next breakpoint cp (nil for none).
func (b *breakpoints) take(cp *llm.CachePoint) *cacheControl {
	if cp == nil {
		return nil
	}
	if b.skip > 0 {
		b.skip--
		return nil
	}
	return &cacheControl{Type: "ephemeral", TTL: cp.TTL}
}

// jsonInstruction is what stands in for a JSON response format. The
// Messages API has no field for it that every model and every
// Anthropic-compatible server knows, so the wish is written into the
// system prompt instead, with the schema when there is one.
func jsonInstruction(f *llm.ResponseFormat) string {
	if f == nil {
		return ""
	}
	switch f.Type {
	case "json_object":
		return "Respond with a single valid JSON object and nothing else: no prose, no code fences."
	case "json_schema":
		s := "Respond with a single valid JSON value and nothing else (no prose, no code fences)"
		if len(f.Schema) > 0 {
			var b bytes.Buffer
			if json.Compact(&b, f.Schema) == nil {
				return s + ", matching this JSON schema: " + b.String()
			}
		}
		return s + "."
	}
	return ""
}

// encodeToolChoice maps the tool choice; a client that asked for one tool
// call at a time gets disable_parallel_tool_use, which only the choices
// that allow tools carry.
func encodeToolChoice(c *llm.Conversation, e llm.Edits) *toolChoice {
	var tc *toolChoice
	if c.ToolChoice != nil && !dropped(e, "tool_choice") {
		switch c.ToolChoice.Mode {
		case llm.ToolAuto:
			tc = &toolChoice{Type: "auto"}
		case llm.ToolNone:
			return &toolChoice{Type: "none"}
		case llm.ToolRequired:
			tc = &toolChoice{Type: "any"}
		case llm.ToolNamed:
			tc = &toolChoice{Type: "tool", Name: c.ToolChoice.Name}
		}
	}
	if c.ParallelToolCalls != nil && !*c.ParallelToolCalls && !dropped(e, "parallel_tool_calls") {
		if tc == nil {
			tc = &toolChoice{Type: "auto"}
		}
		tc.DisableParallelToolUse = true
	}
	return tc
}

// thinkingRules are what Anthropic requires of the other parameters while
// extended thinking is on. A parameter a rule refuses is left out where
// that is allowed; where it is not, thinking is turned off instead,
// because the parameter carries the client's intent more surely than a
// reasoning hint does.
var thinkingRules = []struct {
	param string
	// ok reports whether the request may keep the parameter as it is.
	ok func(r *messagesRequest) bool
	// clear leaves the parameter out; nil when it cannot go.
	clear func(r *messagesRequest)
}{
	// Only the default temperature, 1, is allowed.
	{"temperature", func(r *messagesRequest) bool { return r.Temperature == nil || *r.Temperature == 1 },
		func(r *messagesRequest) { r.Temperature = nil }},
	{"top_k", func(r *messagesRequest) bool { return r.TopK == nil },
		func(r *messagesRequest) { r.TopK = nil }},
	{"top_p", func(r *messagesRequest) bool { return r.TopP == nil || (*r.TopP >= 0.95 && *r.TopP <= 1) },
		func(r *messagesRequest) { r.TopP = nil }},
	// Only tool_choice auto and none are allowed: a forced tool call
	// wins over thinking.
	{"tool_choice", func(r *messagesRequest) bool {
		return r.ToolChoice == nil || r.ToolChoice.Type == "auto" || r.ToolChoice.Type == "none"
	}, nil},
	// The assistant turn the answer continues (a prefill, or the turn
	// whose tool calls the last results answer) must open with its
	// signed thinking, which another vendor's turn does not have.
	{"messages", thinkingContinues, nil},
}

// thinkingContinues reports whether the request's latest assistant turn
// may go on with thinking on: it is not the last turn and made no tool
// call, or it opens with a thinking block.
func thinkingContinues(r *messagesRequest) bool {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		t := r.Messages[i]
		if t.Role != "assistant" {
			continue
		}
		switch t.Content[0].(type) {
		case thinkingBlock, redactedBlock:
			return true
		}
		if i == len(r.Messages)-1 {
			return false
		}
		for _, b := range t.Content {
			if _, ok := b.(toolUseBlock); ok {
				return false
			}
		}
		return true
	}
	return true
}

// encodeThinking turns the reasoning setting into a thinking budget, which
// must be at least 1024 tokens and below max_tokens, and applies the
// thinkingRules.
func encodeThinking(r *messagesRequest, c *llm.Conversation, e llm.Edits) {
	rs := c.Reasoning
	if rs == nil || rs.Disabled {
		return
	}
	budget := rs.BudgetTokens
	if budget <= 0 {
		budget = effortBudget[rs.Effort]
		if _, known := effortBudget[rs.Effort]; !known {
			budget = effortBudget["medium"]
		}
	}
	if budget <= 0 {
		return
	}
	budget = max(budget, minThinkingBudget)
	if budget >= r.MaxTokens && c.MaxOutput <= 0 {
		// The client set no limit, so the default may grow to leave room
		// for an answer after the thinking, as far as the upstream allows.
		grown := budget + defaultMaxTokens
		if e.MaxOutput > 0 {
			grown = min(grown, e.MaxOutput)
		}
		r.MaxTokens = max(r.MaxTokens, grown)
	}
	budget = min(budget, r.MaxTokens-1)
	if budget < minThinkingBudget {
		return
	}
	for _, rule := range thinkingRules {
		if rule.clear == nil && !rule.ok(r) {
			return
		}
	}
	for _, rule := range thinkingRules {
		if !rule.ok(r) {
			rule.clear(r)
		}
	}
	r.Thinking = &thinking{Type: "enabled", BudgetTokens: budget}
}

// turns writes the messages as Anthropic turns, which must alternate
// between user and assistant and start with the user: adjacent turns of
// one role are merged, tool results become user turns (their blocks
// first, as Anthropic requires after a tool_use), and a conversation that
// opens with the assistant gets placeholderUser before it.
func turns(msgs []llm.Message, bp *breakpoints) ([]turn, error) {
	var out []turn
	// results counts the leading tool_result blocks of the last turn, so
	// tool results merged into a user turn go before its other blocks.
	results := 0
	for i, m := range msgs {
		role := "user"
		if m.Role == llm.RoleAssistant {
			role = "assistant"
		}
		var blocks []any
		var tool []any
		for j, p := range m.Parts {
			b, err := block(p, m.Role)
			if err != nil {
				return nil, llm.BadRequest("messages", "messages[%d] part %d: %v", i, j, err)
			}
			if b != nil {
				b = withCache(b, bp.take(p.Cache))
			}
			switch {
			case b == nil:
			case p.Kind == llm.PartToolResult:
				tool = append(tool, b)
			default:
				blocks = append(blocks, b)
			}
		}
		if len(blocks)+len(tool) == 0 {
			// Anthropic refuses empty turns; an empty assistant message
			// (a tool call's text half) says nothing anyway.
			continue
		}
		if len(out) == 0 && role == "assistant" {
			out = append(out, turn{Role: "user", Content: []any{textBlock{Type: "text", Text: placeholderUser}}})
			results = 0
		}
		if len(out) > 0 && out[len(out)-1].Role == role {
			last := &out[len(out)-1]
			if len(tool) > 0 {
				last.Content = slices.Insert(last.Content, results, tool...)
				results += len(tool)
			}
			last.Content = append(last.Content, blocks...)
			continue
		}
		out = append(out, turn{Role: role, Content: append(tool, blocks...)})
		results = len(tool)
	}
	if len(out) == 0 {
		return nil, llm.BadRequest("messages", "the conversation has no message with content")
	}
	return out, nil
}

// block writes one part as a content block; nil means the part has no
// place in an Anthropic request.
func block(p llm.Part, role llm.Role) (any, error) {
	switch p.Kind {
	case llm.PartText:
		if p.Text == "" {
			return nil, nil // Anthropic refuses empty text blocks
		}
		return textBlock{Type: "text", Text: p.Text}, nil
	case llm.PartImage:
		if p.Image == nil || role == llm.RoleAssistant {
			return nil, nil
		}
		return image(p.Image)
	case llm.PartToolCall:
		if p.ToolCall == nil || role != llm.RoleAssistant {
			return nil, nil
		}
		id := p.ToolCall.ID
		if id == "" {
			id = newID("toolu_")
		}
		return toolUseBlock{Type: "tool_use", ID: id, Name: p.ToolCall.Name, Input: arguments(p.ToolCall.Arguments)}, nil
	case llm.PartToolResult:
		if p.ToolResult == nil || role == llm.RoleAssistant {
			return nil, nil
		}
		return toolResult(p.ToolResult)
	case llm.PartReasoning:
		if role != llm.RoleAssistant {
			return nil, nil
		}
		switch {
		case p.Redacted != "":
			return redactedBlock{"redacted_thinking", p.Redacted}, nil
		case p.Signature != "" && p.Text != "":
			return thinkingBlock{"thinking", p.Text, p.Signature}, nil
		}
		// Reasoning without a signature (another vendor's) is refused by
		// Anthropic, which checks the signature of every thinking block.
		return nil, nil
	}
	return nil, nil
}

// withCache puts a breakpoint on a block of a kind that can carry one;
// thinking blocks cannot.
func withCache(b any, cc *cacheControl) any {
	if cc == nil {
		return b
	}
	switch v := b.(type) {
	case textBlock:
		v.CacheControl = cc
		return v
	case imageBlock:
		v.CacheControl = cc
		return v
	case toolUseBlock:
		v.CacheControl = cc
		return v
	case toolResultBlock:
		v.CacheControl = cc
		return v
	}
	return b
}

func toolResult(tr *llm.ToolResult) (any, error) {
	b := toolResultBlock{Type: "tool_result", ToolUseID: tr.CallID, IsError: tr.IsError}
	var content []any
	allText := true
	for _, p := range tr.Content {
		switch p.Kind {
		case llm.PartText:
			if p.Text != "" {
				content = append(content, textBlock{Type: "text", Text: p.Text})
			}
		case llm.PartImage:
			if p.Image != nil {
				img, err := image(p.Image)
				if err != nil {
					return nil, err
				}
				content = append(content, img)
				allText = false
			}
		}
	}
	switch {
	case len(content) == 1 && allText:
		b.Content = content[0].(textBlock).Text
	case len(content) > 0:
		b.Content = content
	}
	return b, nil
}

// anthropicImageTypes are the media types Anthropic accepts inline.
var anthropicImageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// image writes an image block: inline data as a base64 source, a data:
// URL (what OpenAI clients send) decoded into one, any other URL as a url
// source.
func image(img *llm.Image) (any, error) {
	data, mediaType := img.Data, img.MediaType
	if data == "" {
		url := img.URL
		if !strings.HasPrefix(url, "data:") {
			if url == "" {
				return nil, errors.New("image has neither data nor a URL")
			}
			return imageBlock{Type: "image", Source: imageSource{Type: "url", URL: url}}, nil
		}
		var ok bool
		if mediaType, data, ok = parseDataURL(url); !ok {
			return nil, errors.New("image data URL is not base64 (data:<type>;base64,<data>)")
		}
	}
	if !slices.Contains(anthropicImageTypes, mediaType) {
		mediaType = sniffImage(data, mediaType)
	}
	return imageBlock{Type: "image", Source: imageSource{Type: "base64", MediaType: mediaType, Data: data}}, nil
}

// parseDataURL splits data:image/png;base64,AAAA into its media type and
// data.
func parseDataURL(u string) (mediaType, data string, ok bool) {
	head, data, found := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	if !found {
		return "", "", false
	}
	mediaType, enc, _ := strings.Cut(head, ";")
	if !strings.EqualFold(enc, "base64") && !strings.HasSuffix(strings.ToLower(head), ";base64") {
		return "", "", false
	}
	return strings.ToLower(strings.TrimSpace(mediaType)), data, true
}

// sniffImage finds the media type of base64 image data from its first
// bytes, for a source that gave none or a wrong one; it keeps the given
// one when the bytes say nothing.
func sniffImage(data, given string) string {
	head := data[:min(len(data), 64)]
	head = head[:len(head)/4*4]
	raw, err := base64.StdEncoding.DecodeString(head)
	if err != nil {
		return given
	}
	if t := http.DetectContentType(raw); slices.Contains(anthropicImageTypes, t) {
		return t
	}
	return given
}

// arguments is a tool call's input: the arguments object as the model
// wrote it. Anthropic wants an object; arguments that are not one (cut
// off, or another JSON value) are kept, as a string under "_raw", so the
// model sees on the next turn what it had written instead of a silently
// empty call.
func arguments(s string) json.RawMessage {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 {
		return json.RawMessage(`{}`)
	}
	if b[0] == '{' && json.Valid(b) {
		var c bytes.Buffer
		if json.Compact(&c, b) == nil {
			return c.Bytes()
		}
	}
	return marshal(map[string]string{"_raw": s})
}

// objectSchema is a tool's input_schema, which Anthropic requires to be an
// object schema: a missing schema becomes the empty object schema, and
// one without a type gets "type":"object".
func objectSchema(p json.RawMessage) json.RawMessage {
	b := bytes.TrimSpace(p)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return json.RawMessage(`{"type":"object"}`)
	}
	typ := ""
	jsonscan.EachMember(b, 0, func(k []byte, vs, ve int) bool {
		if string(k) == "type" {
			if b[vs] == '"' {
				typ = jsonscan.Unquote(b[vs:ve])
			} else {
				typ = "?"
			}
			return false
		}
		return true
	})
	switch typ {
	case "object":
		var c bytes.Buffer
		_ = json.Compact(&c, b)
		return c.Bytes()
	case "":
		var c bytes.Buffer
		_ = json.Compact(&c, b)
		if c.Len() == 2 {
			return json.RawMessage(`{"type":"object"}`)
		}
		return append([]byte(`{"type":"object",`), c.Bytes()[1:]...)
	}
	return json.RawMessage(`{"type":"object"}`)
}
