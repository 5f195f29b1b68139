package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// compactPrompt asks for the summary a compaction keeps in place of the
// conversation.
const compactPrompt = `You compact the conversation of an AI assistant (often a coding agent) with its user, so the assistant can go on in a fresh context with only your summary and the user's own messages. Write a handoff summary for the assistant: the user's goals and constraints; what has been done so far (files read and changed, commands run and their results, errors met); the decisions taken and why; the current state; and what remains to be done next. Keep every detail the work depends on, such as names, paths, identifiers, values and error messages, and leave out chatter. Write only the summary.`

// maxKeptUserBytes bounds the user messages a compaction keeps, newest
// first: about twenty thousand tokens, so the compacted conversation stays
// small whatever the conversation was.
const maxKeptUserBytes = 80 << 10

// CompactRequest is the request that asks a backend to summarise the
// conversation of r, a compaction request: the conversation written out as
// a transcript in one user message, which any backend reads without the
// tools it was held with.
func CompactRequest(r *llm.Request) (*llm.Request, error) {
	c, err := r.Conversation()
	if err != nil {
		return nil, err
	}
	if len(c.Messages) == 0 {
		return nil, llm.BadRequest("input", "input is required: the conversation to compact")
	}
	var t strings.Builder
	t.WriteString("Here is the conversation to compact, oldest first.\n\n")
	for _, m := range c.Messages {
		transcribe(&t, m)
	}
	t.WriteString("\nWrite the handoff summary now.")
	conv := &llm.Conversation{
		System:   []llm.Part{{Kind: llm.PartText, Text: compactPrompt}},
		Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: t.String()}}}},
	}
	out := llm.NewRequest(&convSource{raw: r.Raw(), conv: conv})
	out.Endpoint, out.Dialect, out.Model, out.Notes = llm.Chat, llm.DialectResponses, r.Model, r.Notes
	return out, nil
}

// transcribe writes one message of the conversation as text.
func transcribe(t *strings.Builder, m llm.Message) {
	for _, p := range m.Parts {
		switch p.Kind {
		case llm.PartText:
			fmt.Fprintf(t, "[%s]\n%s\n\n", m.Role, p.Text)
		case llm.PartImage:
			fmt.Fprintf(t, "[%s]\n(an image)\n\n", m.Role)
		case llm.PartToolCall:
			fmt.Fprintf(t, "[assistant called the tool %s with %s]\n\n", p.ToolCall.Name, p.ToolCall.Arguments)
		case llm.PartToolResult:
			fmt.Fprintf(t, "[the tool %s returned]\n", cmpOr(p.ToolResult.Name, p.ToolResult.CallID))
			for _, q := range p.ToolResult.Content {
				if q.Kind == llm.PartText {
					t.WriteString(q.Text)
					t.WriteByte('\n')
				}
			}
			t.WriteByte('\n')
		}
		// Reasoning is the model's own working, which the summary does
		// not need.
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// convSource is a request built by FreeLane rather than sent by a client:
// its conversation is made, and its raw body is the client's, for token
// estimates and the request log's size.
type convSource struct {
	raw  []byte
	conv *llm.Conversation
}

func (s *convSource) Raw() []byte { return s.raw }

// Rewrite returns the client's body; no upstream speaks this dialect, so
// it is never sent.
func (s *convSource) Rewrite(string, llm.Edits) []byte { return s.raw }

func (s *convSource) Conversation() (*llm.Conversation, error) { return s.conv, nil }

// compacted is the answer of /v1/responses/compact, as OpenAI writes it.
type compacted struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	CreatedAt int64  `json:"created_at"`
	Output    []any  `json:"output"`
	Usage     *usage `json:"usage"`
}

type compactionItem struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	EncryptedContent string `json:"encrypted_content"`
}

type userMessageItem struct {
	ID      string     `json:"id"`
	Type    string     `json:"type"`
	Status  string     `json:"status"`
	Role    string     `json:"role"`
	Content []textPart `json:"content"`
}

// summaryFrom reads the summary a backend wrote, answer (a Response
// object), and its usage.
func summaryFrom(answer []byte) (string, *usage, error) {
	var resp struct {
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage *usage `json:"usage"`
	}
	if err := json.Unmarshal(answer, &resp); err != nil {
		return "", nil, fmt.Errorf("the summary could not be read: %w", err)
	}
	var summary strings.Builder
	for _, it := range resp.Output {
		if it.Type != "message" {
			continue
		}
		for _, c := range it.Content {
			if c.Type == "output_text" {
				summary.WriteString(c.Text)
			}
		}
	}
	if strings.TrimSpace(summary.String()) == "" {
		return "", nil, errors.New("the backend wrote an empty summary; try the compaction again")
	}
	if resp.Usage == nil {
		resp.Usage = &usage{}
	}
	return summary.String(), resp.Usage, nil
}

// CompactAnswer writes the answer of a compaction request r from the
// summary the backend wrote, answer (a Response object): the user's
// messages, the newest within a bound, and one compaction item holding the
// summary, as OpenAI's compaction has it.
func CompactAnswer(r *llm.Request, answer []byte, created int64) ([]byte, error) {
	summary, u, err := summaryFrom(answer)
	if err != nil {
		return nil, err
	}
	c, err := r.Conversation()
	if err != nil {
		return nil, err
	}
	out := compacted{ID: newID("resp_"), Object: "response.compaction", CreatedAt: created, Usage: u}
	out.Output = append(keptUserMessages(c), compactionItem{ID: newID("cmp_"), Type: "compaction", EncryptedContent: SealSummary(summary)})
	return marshal(out), nil
}

// CompactionTurn writes the answer of a turn whose input ended with a
// compaction_trigger item, from the summary the backend wrote, answer: a
// response whose one output item is the compaction, as a whole body and as
// the events of a stream. The client keeps its own user messages beside
// the compaction, so unlike CompactAnswer this one holds none.
func CompactionTurn(answer []byte, o protocol.ResponseOptions) (body []byte, events [][]byte, err error) {
	summary, u, err := summaryFrom(answer)
	if err != nil {
		return nil, nil, err
	}
	item := compactionItem{ID: newID("cmp_"), Type: "compaction", EncryptedContent: SealSummary(summary)}
	// o.ID is the id FreeLane minted for the request; the answer is
	// FreeLane's own, so it is used as it is.
	id := o.ID
	if id == "" {
		id = NewResponseID()
	}
	r := newResponse(id, o.Model, o.Created)
	inProgress := r
	r.Status, r.Output, r.Usage = "completed", []any{item}, u
	index := 0
	for i, ev := range []event{
		{Type: evCreated, Response: &inProgress},
		{Type: evInProgress, Response: &inProgress},
		{Type: evItemAdded, OutputIndex: &index, Item: item},
		{Type: evItemDone, OutputIndex: &index, Item: item},
		{Type: evCompleted, Response: &r},
	} {
		ev.SequenceNumber = i
		events = append(events, marshal(ev))
	}
	return marshal(r), events, nil
}

// keptUserMessages are the user's text messages, the newest that fit in
// maxKeptUserBytes, oldest first. Earlier summaries are left out: the new
// one covers them.
func keptUserMessages(c *llm.Conversation) []any {
	var kept []any
	size := 0
	for i := len(c.Messages) - 1; i >= 0; i-- {
		m := c.Messages[i]
		if m.Role != llm.RoleUser {
			continue
		}
		var parts []textPart
		n := 0
		for _, p := range m.Parts {
			if p.Kind == llm.PartText && !strings.HasPrefix(p.Text, SummaryPrefix) {
				parts = append(parts, textPart{Type: "input_text", Text: p.Text})
				n += len(p.Text)
			}
		}
		if len(parts) == 0 {
			continue
		}
		if size+n > maxKeptUserBytes {
			break
		}
		size += n
		kept = append(kept, userMessageItem{ID: newID("msg_"), Type: "message", Status: "completed", Role: "user", Content: parts})
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return kept
}
