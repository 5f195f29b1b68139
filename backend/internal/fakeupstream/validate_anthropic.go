package fakeupstream

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Validation of Anthropic Messages bodies. The messages follow the real
// API's, which name the field by its path (messages.1.content.0) and, for
// schema errors, use Pydantic's wording.

// anthropicFields are the top-level members the Messages API accepts; any
// other gets "Extra inputs are not permitted".
var anthropicFields = map[string]bool{
	"model": true, "messages": true, "max_tokens": true, "system": true,
	"metadata": true, "stop_sequences": true, "stream": true,
	"temperature": true, "top_p": true, "top_k": true, "tools": true,
	"tool_choice": true, "thinking": true, "service_tier": true,
	"container": true, "mcp_servers": true, "context_management": true,
	"output_format": true, "output_config": true,
}

// anthropicBlockTypes are the content block types accepted in messages.
// The ones mapped to true are checked further; the others are server-tool
// blocks the fake passes through.
var anthropicBlockTypes = map[string]bool{
	"text": true, "image": true, "document": true, "tool_use": true,
	"tool_result": true, "thinking": true, "redacted_thinking": true,
	"search_result": false, "server_tool_use": false,
	"web_search_tool_result": false, "web_fetch_tool_result": false,
	"code_execution_tool_result": false, "mcp_tool_use": false,
	"mcp_tool_result": false, "container_upload": false,
}

var (
	anthropicImageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}
	anthropicToolName   = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)
	anthropicToolID     = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	anthropicServerTool = regexp.MustCompile(`^[a-z_]+_[0-9]{8}$`)
)

// minThinkingBudget is the smallest thinking budget the API accepts.
const minThinkingBudget = 1024

// validateAnthropic returns the message of the first problem in an
// Anthropic Messages body, or "" when the real API would accept it.
func validateAnthropic(body object) string {
	for _, m := range body {
		if !anthropicFields[m.key] {
			return m.key + ": Extra inputs are not permitted"
		}
	}
	model, ok := body.get("model")
	if !ok {
		return "model: Field required"
	}
	if s, ok := asString(model); !ok {
		return "model: Input should be a valid string"
	} else if s == "" {
		return "model: String should have at least 1 character"
	}
	maxTokens, problem := anthropicMaxTokens(body)
	if problem != "" {
		return problem
	}
	if v, ok := body.get("stream"); ok && jsonType(v) != 't' && jsonType(v) != 'f' {
		return "stream: Input should be a valid boolean"
	}
	if problem := anthropicMessages(body); problem != "" {
		return problem
	}
	if problem := anthropicSystem(body); problem != "" {
		return problem
	}
	if v, ok := body.get("stop_sequences"); ok {
		seqs, ok := asArray(v)
		if !ok {
			return "stop_sequences: Input should be a valid list"
		}
		for i, s := range seqs {
			if _, ok := asString(s); !ok {
				return fmt.Sprintf("stop_sequences.%d: Input should be a valid string", i)
			}
		}
	}
	temperature, hasTemperature := body.get("temperature")
	if hasTemperature {
		t, ok := asNumber(temperature)
		switch {
		case !ok:
			return "temperature: Input should be a valid number"
		case t < 0:
			return "temperature: Input should be greater than or equal to 0"
		case t > 1:
			return "temperature: Input should be less than or equal to 1"
		}
	}
	if problem := anthropicThinking(body, maxTokens, temperature, hasTemperature); problem != "" {
		return problem
	}
	return anthropicTools(body)
}

// anthropicMaxTokens checks max_tokens and returns it.
func anthropicMaxTokens(body object) (int64, string) {
	v, ok := body.get("max_tokens")
	if !ok {
		return 0, "max_tokens: Field required"
	}
	n, ok := asInt(v)
	if !ok {
		return 0, "max_tokens: Input should be a valid integer"
	}
	if n < 1 {
		return 0, "max_tokens: Input should be greater than or equal to 1"
	}
	return n, ""
}

// antTurn is what the turn checks need of one message.
type antTurn struct {
	role    string
	blocks  []object // Nil when the content is a string.
	toolUse []string // Ids of the tool_use blocks, in order.
}

// anthropicMessages checks the messages: their shape, the roles and their
// alternation, and that tool results answer the previous turn's tool uses.
func anthropicMessages(body object) string {
	raw, ok := body.get("messages")
	if !ok {
		return "messages: Field required"
	}
	msgs, ok := asArray(raw)
	if !ok {
		return "messages: Input should be a valid list"
	}
	if len(msgs) == 0 {
		return "messages: at least one message is required"
	}
	turns := make([]antTurn, len(msgs))
	for i, m := range msgs {
		t, problem := anthropicMessage(i, m, i == len(msgs)-1)
		if problem != "" {
			return problem
		}
		turns[i] = t
	}
	if turns[0].role != "user" {
		return `messages: first message must use the "user" role`
	}
	for i := 1; i < len(turns); i++ {
		if turns[i].role == turns[i-1].role {
			return fmt.Sprintf(`messages: roles must alternate between "user" and "assistant", but found multiple %q roles in a row`, turns[i].role)
		}
	}
	for i, t := range turns {
		if problem := anthropicToolTurn(i, t, turns); problem != "" {
			return problem
		}
	}
	seen := map[string]bool{}
	for i, t := range turns {
		for _, id := range t.toolUse {
			if seen[id] {
				return fmt.Sprintf("messages.%d.content: `tool_use` ids must be unique", i)
			}
			seen[id] = true
		}
	}
	return ""
}

// anthropicMessage checks one message and its blocks.
func anthropicMessage(i int, raw json.RawMessage, last bool) (antTurn, string) {
	var t antTurn
	m, ok := asObject(raw)
	if !ok {
		return t, fmt.Sprintf("messages.%d: Input should be a valid dictionary", i)
	}
	for _, f := range m {
		if f.key != "role" && f.key != "content" {
			return t, fmt.Sprintf("messages.%d.%s: Extra inputs are not permitted", i, f.key)
		}
	}
	role, ok := m.get("role")
	if !ok {
		return t, fmt.Sprintf("messages.%d.role: Field required", i)
	}
	t.role, _ = asString(role)
	switch t.role {
	case "user", "assistant":
	case "system":
		return t, `messages: Unexpected role "system". The Messages API accepts a top-level ` + "`system`" + ` parameter, not "system" as an input message role.`
	default:
		return t, fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
	}
	content, ok := m.get("content")
	if !ok {
		return t, fmt.Sprintf("messages.%d.content: Field required", i)
	}
	empty := fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
	finalAssistant := last && t.role == "assistant"
	if s, ok := asString(content); ok {
		if s == "" && !finalAssistant {
			return t, empty
		}
		return t, ""
	}
	blocks, ok := asArray(content)
	if !ok {
		return t, fmt.Sprintf("messages.%d.content: Input should be a valid string or a valid list", i)
	}
	if len(blocks) == 0 && !finalAssistant {
		return t, empty
	}
	for j, raw := range blocks {
		path := fmt.Sprintf("messages.%d.content.%d", i, j)
		b, problem := anthropicBlock(path, t.role, raw)
		if problem != "" {
			return t, problem
		}
		t.blocks = append(t.blocks, b)
		if typ, _ := asString(mustGet(b, "type")); typ == "tool_use" {
			id, _ := asString(mustGet(b, "id"))
			t.toolUse = append(t.toolUse, id)
		}
	}
	return t, ""
}

// mustGet returns a member's value, or nil.
func mustGet(o object, key string) json.RawMessage {
	v, _ := o.get(key)
	return v
}

// anthropicBlock checks one content block of a message whose role is
// role.
func anthropicBlock(path, role string, raw json.RawMessage) (object, string) {
	b, ok := asObject(raw)
	if !ok {
		return nil, path + ": Input should be a valid dictionary"
	}
	typ, _ := asString(mustGet(b, "type"))
	checked, known := anthropicBlockTypes[typ]
	if !known {
		return nil, fmt.Sprintf("%s: Input tag '%s' found using 'type' does not match any of the expected tags: 'text', 'image', 'document', 'search_result', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'server_tool_use', 'web_search_tool_result'", path, typ)
	}
	if !checked {
		return b, ""
	}
	switch typ {
	case "text":
		s, ok := asString(mustGet(b, "text"))
		if !ok {
			return nil, path + ".text.text: Field required"
		}
		if s == "" {
			return nil, "messages: text content blocks must be non-empty"
		}
	case "image":
		if problem := anthropicImage(path+".image.source", b); problem != "" {
			return nil, problem
		}
	case "document":
		if _, ok := b.get("source"); !ok {
			return nil, path + ".document.source: Field required"
		}
	case "tool_use":
		if role != "assistant" {
			return nil, path + ": tool_use blocks can only be in assistant messages"
		}
		id, ok := asString(mustGet(b, "id"))
		if !ok {
			return nil, path + ".tool_use.id: Field required"
		}
		if !anthropicToolID.MatchString(id) {
			return nil, path + ".tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
		}
		if _, ok := asString(mustGet(b, "name")); !ok {
			return nil, path + ".tool_use.name: Field required"
		}
		if jsonType(mustGet(b, "input")) != '{' {
			return nil, path + ".tool_use.input: Input should be a valid dictionary"
		}
	case "tool_result":
		if role != "user" {
			return nil, path + ": tool_result blocks can only be in user messages"
		}
		if _, ok := asString(mustGet(b, "tool_use_id")); !ok {
			return nil, path + ".tool_result.tool_use_id: Field required"
		}
		if c, ok := b.get("content"); ok && jsonType(c) != '"' && jsonType(c) != '[' {
			return nil, path + ".tool_result.content: Input should be a valid string or a valid list"
		}
	case "thinking":
		if _, ok := asString(mustGet(b, "thinking")); !ok {
			return nil, path + ".thinking.thinking: Field required"
		}
		if _, ok := asString(mustGet(b, "signature")); !ok {
			return nil, path + ".thinking.signature: Field required"
		}
	case "redacted_thinking":
		if _, ok := asString(mustGet(b, "data")); !ok {
			return nil, path + ".redacted_thinking.data: Field required"
		}
	}
	return b, ""
}

// anthropicImage checks the source of an image block.
func anthropicImage(path string, block object) string {
	src, ok := asObject(mustGet(block, "source"))
	if !ok {
		return path + ": Field required"
	}
	typ, _ := asString(mustGet(src, "type"))
	switch typ {
	case "base64":
		mt, ok := asString(mustGet(src, "media_type"))
		if !ok {
			return path + ".base64.media_type: Field required"
		}
		if !anthropicImageTypes[mt] {
			return path + ".base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
		}
		data, ok := asString(mustGet(src, "data"))
		if !ok {
			return path + ".base64.data: Field required"
		}
		if _, err := base64.StdEncoding.DecodeString(data); err != nil || data == "" {
			return path + ".base64.data: Invalid base64 data"
		}
	case "url":
		if u, ok := asString(mustGet(src, "url")); !ok || u == "" {
			return path + ".url.url: Field required"
		}
	case "file":
		if _, ok := asString(mustGet(src, "file_id")); !ok {
			return path + ".file.file_id: Field required"
		}
	default:
		return fmt.Sprintf("%s: Input tag '%s' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'", path, typ)
	}
	return ""
}

// anthropicToolTurn checks that the tool_use blocks of an assistant turn
// are answered by tool_result blocks at the start of the next user turn,
// and that the tool_result blocks of a user turn answer the previous turn.
func anthropicToolTurn(i int, t antTurn, turns []antTurn) string {
	if t.role == "assistant" {
		if len(t.toolUse) == 0 {
			return ""
		}
		answered := map[string]bool{}
		if i+1 < len(turns) {
			// Only the leading run of tool_result blocks counts: results
			// after other content are not "immediately after".
			for _, b := range turns[i+1].blocks {
				if typ, _ := asString(mustGet(b, "type")); typ != "tool_result" {
					break
				}
				id, _ := asString(mustGet(b, "tool_use_id"))
				answered[id] = true
			}
		}
		var missing []string
		for _, id := range t.toolUse {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
		}
		return ""
	}
	var asked []string
	if i > 0 {
		asked = turns[i-1].toolUse
	}
	for j, b := range t.blocks {
		if typ, _ := asString(mustGet(b, "type")); typ != "tool_result" {
			continue
		}
		id, _ := asString(mustGet(b, "tool_use_id"))
		found := false
		for _, a := range asked {
			found = found || a == id
		}
		if !found {
			return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id)
		}
	}
	return ""
}

// anthropicSystem checks the system prompt: a string or a list of text
// blocks.
func anthropicSystem(body object) string {
	v, ok := body.get("system")
	if !ok || jsonType(v) == '"' {
		return ""
	}
	blocks, ok := asArray(v)
	if !ok {
		return "system: Input should be a valid string or a valid list"
	}
	for i, raw := range blocks {
		b, ok := asObject(raw)
		if !ok {
			return fmt.Sprintf("system.%d: Input should be a valid dictionary", i)
		}
		if typ, _ := asString(mustGet(b, "type")); typ != "text" {
			return fmt.Sprintf("system.%d.type: Input should be 'text'", i)
		}
		if s, ok := asString(mustGet(b, "text")); !ok {
			return fmt.Sprintf("system.%d.text: Field required", i)
		} else if s == "" {
			return "system: text content blocks must be non-empty"
		}
	}
	return ""
}

// anthropicThinking checks the thinking configuration against max_tokens
// and temperature.
func anthropicThinking(body object, maxTokens int64, temperature json.RawMessage, hasTemperature bool) string {
	v, ok := body.get("thinking")
	if !ok {
		return ""
	}
	th, ok := asObject(v)
	if !ok {
		return "thinking: Input should be a valid dictionary"
	}
	typ, _ := asString(mustGet(th, "type"))
	switch typ {
	case "disabled":
		return ""
	case "enabled":
	case "adaptive":
		return ""
	default:
		return fmt.Sprintf("thinking: Input tag '%s' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'", typ)
	}
	raw, ok := th.get("budget_tokens")
	if !ok {
		return "thinking.enabled.budget_tokens: Field required"
	}
	budget, ok := asInt(raw)
	switch {
	case !ok:
		return "thinking.enabled.budget_tokens: Input should be a valid integer"
	case budget < minThinkingBudget:
		return fmt.Sprintf("thinking.enabled.budget_tokens: Input should be greater than or equal to %d", minThinkingBudget)
	case budget >= maxTokens:
		return "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"
	}
	if t, _ := asNumber(temperature); hasTemperature && t != 1 {
		return "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility"
	}
	return ""
}

// anthropicTools checks the tool definitions and tool_choice.
func anthropicTools(body object) string {
	choice, hasChoice := body.get("tool_choice")
	v, hasTools := body.get("tools")
	if hasChoice {
		c, ok := asObject(choice)
		if !ok {
			return "tool_choice: Input should be a valid dictionary"
		}
		switch typ, _ := asString(mustGet(c, "type")); typ {
		case "auto", "any", "none":
		case "tool":
			if _, ok := asString(mustGet(c, "name")); !ok {
				return "tool_choice.tool.name: Field required"
			}
		default:
			return fmt.Sprintf("tool_choice: Input tag '%s' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", typ)
		}
	}
	if !hasTools {
		return ""
	}
	tools, ok := asArray(v)
	if !ok {
		return "tools: Input should be a valid list"
	}
	names := map[string]bool{}
	for i, raw := range tools {
		t, ok := asObject(raw)
		if !ok {
			return fmt.Sprintf("tools.%d: Input should be a valid dictionary", i)
		}
		if typ, ok := asString(mustGet(t, "type")); ok && typ != "custom" {
			// A server tool such as web_search_20250305 is defined by its
			// dated type rather than a schema.
			if !anthropicServerTool.MatchString(typ) {
				return fmt.Sprintf("tools.%d: Input tag '%s' found using 'type' does not match any of the expected tags: 'custom', 'bash_20250124', 'code_execution_20250825', 'text_editor_20250728', 'web_search_20250305', 'web_fetch_20250910'", i, typ)
			}
			continue
		}
		path := fmt.Sprintf("tools.%d.custom", i)
		name, ok := asString(mustGet(t, "name"))
		if !ok {
			return path + ".name: Field required"
		}
		if !anthropicToolName.MatchString(name) {
			return path + ".name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"
		}
		if names[name] {
			return "tools: Tool names must be unique."
		}
		names[name] = true
		schema, ok := t.get("input_schema")
		if !ok {
			return path + ".input_schema: Field required"
		}
		s, ok := asObject(schema)
		if !ok {
			return path + ".input_schema: Input should be a valid dictionary"
		}
		if typ, _ := asString(mustGet(s, "type")); typ != "object" {
			return path + ".input_schema.type: Input should be 'object'"
		}
	}
	return ""
}
