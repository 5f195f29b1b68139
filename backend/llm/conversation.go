package llm

import (
	"encoding/json"
	"strings"
)

// Dialect is a wire format spoken by clients and upstreams. Every dialect
// has one package under backend/protocol that converts it to and from the
// neutral types of this file.
type Dialect string

// The dialects.
const (
	// DialectOpenAI is OpenAI's chat completions API (with the legacy
	// completions and the embeddings endpoints), which most servers speak.
	DialectOpenAI Dialect = "openai"
	// DialectResponses is OpenAI's Responses API.
	DialectResponses Dialect = "openai-responses"
	// DialectAnthropic is Anthropic's Messages API.
	DialectAnthropic Dialect = "anthropic"
	// DialectGemini is Google's Generative Language API.
	DialectGemini Dialect = "gemini"
)

// Conversation is a chat request in no particular dialect: what every
// dialect's request decoder produces and every request encoder consumes.
// Only fields that some dialect can express are here; a field a target
// dialect has no place for is dropped by its encoder.
type Conversation struct {
	// System is the instructions that come before the conversation (an
	// OpenAI system or developer message at its head, Anthropic's
	// top-level system, Gemini's systemInstruction). Text parts only.
	System   []Part
	Messages []Message
	Tools    []Tool
	// ToolChoice is nil when the client left it to the model.
	ToolChoice *ToolChoice
	// MaxOutput is the most tokens the answer may have; 0 is unset.
	MaxOutput   int
	Temperature *float64
	TopP        *float64
	TopK        *int
	Stop        []string
	Seed        *int64
	// PresencePenalty and FrequencyPenalty are OpenAI's penalties, which
	// Gemini also knows.
	PresencePenalty  *float64
	FrequencyPenalty *float64
	ResponseFormat   *ResponseFormat
	Reasoning        *Reasoning
	// ParallelToolCalls is nil when unset.
	ParallelToolCalls *bool
	// Metadata is free-form string metadata where a dialect carries it.
	Metadata map[string]string
	Stream   bool
	// IncludeUsage asks for usage at the end of a stream.
	IncludeUsage bool
}

// Role is who speaks a message.
type Role string

// The roles. Tool results are messages of their own role, as in OpenAI's
// dialect; dialects that carry them inside user turns merge them there.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of the conversation.
type Message struct {
	Role  Role
	Parts []Part
}

// PartKind says what a Part holds.
type PartKind string

// The part kinds.
const (
	PartText       PartKind = "text"
	PartImage      PartKind = "image"
	PartToolCall   PartKind = "tool_call"
	PartToolResult PartKind = "tool_result"
	// PartReasoning is the model's visible reasoning (a thinking block);
	// Signature carries the vendor's signature over it, Redacted the
	// opaque data of reasoning the vendor did not show.
	PartReasoning PartKind = "reasoning"
)

// Part is one piece of a message. Exactly the field for its Kind is set.
type Part struct {
	Kind       PartKind
	Text       string
	Image      *Image
	ToolCall   *ToolCall
	ToolResult *ToolResult
	// Signature is a reasoning part's signature (Anthropic's thinking
	// signature, Gemini's thoughtSignature), passed back on later turns.
	Signature string
	// Redacted is the opaque content of redacted reasoning.
	Redacted string
	// Cache, when set, ends a prefix the client asked the vendor to
	// cache at this part (an Anthropic cache_control breakpoint).
	Cache *CachePoint
}

// CachePoint is a prompt-cache breakpoint: the conversation up to and
// including the part (or tool) that carries it is a prefix the client
// asked the vendor to cache.
type CachePoint struct {
	// TTL is the cache lifetime the client asked for ("5m", "1h"); empty
	// is the vendor's default.
	TTL string
}

// Image is an image input: inline data or a URL.
type Image struct {
	// MediaType is the MIME type of Data, e.g. image/png.
	MediaType string
	// Data is the image, base64-encoded, when inline.
	Data string
	// URL is where the image is, when not inline.
	URL string
	// Detail is OpenAI's detail hint ("low", "high", "auto"), if given.
	Detail string
}

// ToolCall is the model asking for a tool to be run.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON text of the arguments, as the model wrote it.
	Arguments string
}

// ToolResult is what a tool returned, answering the call with CallID.
type ToolResult struct {
	CallID string
	// Name is the tool's name where the dialect says it (Gemini needs it;
	// decoders fill it from the call when they can).
	Name string
	// Content is text and image parts.
	Content []Part
	IsError bool
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments; nil for none.
	Parameters json.RawMessage
	Strict     bool
	// Cache, when set, is a prompt-cache breakpoint after this tool.
	Cache *CachePoint
}

// ToolChoiceMode says how the model should use its tools.
type ToolChoiceMode string

// The tool choice modes.
const (
	ToolAuto     ToolChoiceMode = "auto"
	ToolNone     ToolChoiceMode = "none"
	ToolRequired ToolChoiceMode = "required" // some tool must be called
	ToolNamed    ToolChoiceMode = "tool"     // the tool Name must be called
)

// ToolChoice is the client's tool choice.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string
}

// ResponseFormat asks for JSON output.
type ResponseFormat struct {
	// Type is "text", "json_object" or "json_schema".
	Type   string
	Name   string
	Schema json.RawMessage
	Strict bool
}

// Reasoning is the client's reasoning or thinking setting.
type Reasoning struct {
	// Effort is "minimal", "low", "medium" or "high"; empty when the client
	// gave a budget instead.
	Effort string
	// BudgetTokens is a thinking budget in tokens; 0 when the client gave
	// an effort.
	BudgetTokens int
	// Disabled is an explicit request for no reasoning.
	Disabled bool
}

// FinishReason is why an answer ended, in OpenAI's words.
type FinishReason string

// The finish reasons.
const (
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishContentFilter FinishReason = "content_filter"
)

// Answer is a complete, non-streamed answer in no particular dialect.
type Answer struct {
	ID    string
	Model string
	// Parts are the assistant's output in order: reasoning, text and tool
	// calls.
	Parts  []Part
	Finish FinishReason
	// Usage is nil when the upstream reported none.
	Usage *Usage
}

// Usable reports whether the answer has anything in it: text, reasoning or
// a tool call. An empty answer is a soft failure another backend may do
// better.
func (a *Answer) Usable() bool {
	for _, p := range a.Parts {
		switch p.Kind {
		case PartToolCall:
			return true
		case PartText, PartReasoning:
			if p.Text != "" || p.Redacted != "" {
				return true
			}
		}
	}
	return false
}

// Text is the answer's text parts joined.
func (a *Answer) Text() string {
	t, _ := a.ShortText(-1)
	return t
}

// ShortText is the answer's text when it is shorter than n bytes, for
// checking a short answer for a quota notice without joining a long one;
// ok is false, and the text empty, when it is not. A negative n has no
// bound.
func (a *Answer) ShortText(n int) (text string, ok bool) {
	size := 0
	for _, p := range a.Parts {
		if p.Kind == PartText {
			size += len(p.Text)
		}
	}
	if n >= 0 && size >= n {
		return "", false
	}
	var b strings.Builder
	b.Grow(size)
	for _, p := range a.Parts {
		if p.Kind == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String(), true
}

// DeltaKind says what a stream Delta carries.
type DeltaKind uint8

// The delta kinds.
const (
	// DeltaText is a piece of the answer's text.
	DeltaText DeltaKind = iota + 1
	// DeltaReasoning is a piece of visible reasoning; a Delta with only
	// Signature set carries the signature of the reasoning so far.
	DeltaReasoning
	// DeltaToolStart opens tool call Index with its ID and Name.
	DeltaToolStart
	// DeltaToolArgs is a fragment of tool call Index's arguments.
	DeltaToolArgs
	// DeltaToolEnd closes tool call Index.
	DeltaToolEnd
	// DeltaFinish gives the finish reason.
	DeltaFinish
	// DeltaUsage gives the usage; it may come more than once, the last
	// one counting.
	DeltaUsage
)

// Delta is one step of a streamed answer in no particular dialect.
type Delta struct {
	Kind DeltaKind
	// Index numbers tool calls from 0 in the order they start.
	Index int
	// Text is the text, reasoning or argument fragment.
	Text string
	// ID and Name are a tool call's, on DeltaToolStart.
	ID   string
	Name string
	// Signature is a reasoning signature, Redacted redacted reasoning.
	Signature string
	Redacted  string
	Finish    FinishReason
	Usage     *Usage
}

// IsContent reports whether the delta is something the user would see: the
// first such delta commits a stream to its backend.
func (d Delta) IsContent() bool {
	switch d.Kind {
	case DeltaText:
		return d.Text != ""
	case DeltaReasoning:
		return d.Text != "" || d.Redacted != ""
	case DeltaToolStart, DeltaToolArgs:
		return true
	}
	return false
}

// Caps is a set of things a request needs or a backend can do.
type Caps uint8

// The capabilities.
const (
	CapTools Caps = 1 << iota
	CapVision
	CapJSON
	CapReasoning
)

// CapNames maps each capability to its name in the configuration.
var CapNames = map[Caps]string{CapTools: "tools", CapVision: "vision", CapJSON: "json", CapReasoning: "reasoning"}

// Has reports whether c holds every capability of want.
func (c Caps) Has(want Caps) bool { return c&want == want }

// Missing lists the names of the capabilities in want that c lacks.
func (c Caps) Missing(want Caps) []string {
	var out []string
	for _, b := range []Caps{CapTools, CapVision, CapJSON, CapReasoning} {
		if want&b != 0 && c&b == 0 {
			out = append(out, CapNames[b])
		}
	}
	return out
}
