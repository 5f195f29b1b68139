package fakeupstream

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Validation of Gemini generateContent bodies. Google parses the body as
// the JSON form of a protocol buffer, so a member it does not know is an
// error ("Unknown name ... Cannot find field"), both camelCase and
// snake_case names are accepted, and paths in messages use the snake_case
// field names.

// Top-level members of a GenerateContentRequest, by either spelling.
var geminiFields = names("contents", "tools", "toolConfig", "safetySettings", "systemInstruction", "generationConfig", "cachedContent", "model")

// Members of a Content.
var geminiContentFields = names("role", "parts")

// Members of a Part, by either spelling, mapped to the snake_case name.
var geminiPartFields = names("text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult", "thought", "thoughtSignature", "videoMetadata", "partMetadata", "mediaResolution")

// geminiPartData are the members of a Part's oneof "data".
var geminiPartData = map[string]bool{
	"text": true, "inline_data": true, "file_data": true, "function_call": true,
	"function_response": true, "executable_code": true, "code_execution_result": true,
}

// Members of a Tool and of a FunctionDeclaration.
var (
	geminiToolFields     = names("functionDeclarations", "googleSearch", "googleSearchRetrieval", "codeExecution", "urlContext", "fileSearch", "googleMaps", "computerUse")
	geminiFunctionFields = names("name", "description", "parameters", "parametersJsonSchema", "response", "responseJsonSchema", "behavior")
)

// geminiSchemaFields are the members of the OpenAPI subset Gemini takes as
// function parameters. JSON Schema keys outside it, such as $schema,
// additionalProperties, $ref, const, oneOf or exclusiveMinimum, are
// refused; a full JSON Schema goes in parametersJsonSchema instead.
var geminiSchemaFields = names("type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum")

// geminiTypes are the values of Schema.type, in upper case.
var geminiTypes = map[string]bool{
	"TYPE_UNSPECIFIED": true, "STRING": true, "NUMBER": true, "INTEGER": true,
	"BOOLEAN": true, "ARRAY": true, "OBJECT": true, "NULL": true,
}

// maxSchemaDepth bounds how deeply function parameter schemas may nest,
// so a hostile body cannot make validation quadratic or exhaust the stack.
const maxSchemaDepth = 32

// geminiFunctionName is the pattern a function name must match.
var geminiFunctionName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`)

// names maps each camelCase name and its snake_case spelling to the
// snake_case one.
func names(camel ...string) map[string]string {
	m := make(map[string]string, 2*len(camel))
	for _, c := range camel {
		s := snake(c)
		m[c], m[s] = s, s
	}
	return m
}

// snake converts a camelCase name to snake_case.
func snake(camel string) string {
	var b strings.Builder
	for _, r := range camel {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lookup returns the value of the member whose name maps to snakeName.
func lookup(o object, fields map[string]string, snakeName string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if fields[o[i].key] == snakeName && string(o[i].val) != "null" {
			return o[i].val, true
		}
	}
	return nil, false
}

// unknownName is the message for a member the proto does not have; at is
// the path of the object, empty at the top level.
func unknownName(key, at string) string {
	if at == "" {
		return fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot find field.", key)
	}
	return fmt.Sprintf("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", key, at)
}

// invalidValue is the message for a value of the wrong type.
func invalidValue(at, typ string, raw json.RawMessage) string {
	v := string(raw)
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	return fmt.Sprintf("Invalid value at '%s' (%s), %s", at, typ, v)
}

// checkFields reports the first member of o that fields does not name.
func checkFields(o object, fields map[string]string, at string) (string, string) {
	for _, m := range o {
		if _, ok := fields[m.key]; !ok {
			return at, unknownName(m.key, at)
		}
	}
	return "", ""
}

// gemTurn is what the turn checks need of one content.
type gemTurn struct {
	role      string
	calls     []string // Names of the functionCall parts.
	responses []string // Names of the functionResponse parts.
}

// validateGemini returns the field and message of the first problem in a
// Gemini body, or an empty message when the real API would accept it. The
// field is empty when the problem is not tied to one.
func validateGemini(body object) (field, msg string) {
	if f, m := checkFields(body, geminiFields, ""); m != "" {
		return f, m
	}
	raw, ok := lookup(body, geminiFields, "contents")
	if !ok || jsonType(raw) == '[' && len(strings.TrimSpace(string(raw))) == 2 {
		return "contents", "* GenerateContentRequest.contents: contents is not specified"
	}
	contents, ok := asArray(raw)
	if !ok {
		return "contents", invalidValue("contents", "type.googleapis.com/google.ai.generativelanguage.v1beta.Content", raw)
	}
	turns := make([]gemTurn, len(contents))
	for i, c := range contents {
		t, f, m := geminiContent(fmt.Sprintf("contents[%d]", i), c)
		if m != "" {
			return f, m
		}
		turns[i] = t
	}
	if f, m := geminiTurns(turns); m != "" {
		return f, m
	}
	if raw, ok := lookup(body, geminiFields, "system_instruction"); ok {
		if _, f, m := geminiContent("system_instruction", raw); m != "" {
			return f, m
		}
	}
	if raw, ok := lookup(body, geminiFields, "tools"); ok {
		return geminiTools(raw)
	}
	return "", ""
}

// geminiContent checks one Content and its parts.
func geminiContent(at string, raw json.RawMessage) (gemTurn, string, string) {
	var t gemTurn
	c, ok := asObject(raw)
	if !ok {
		return t, at, invalidValue(at, "type.googleapis.com/google.ai.generativelanguage.v1beta.Content", raw)
	}
	if f, m := checkFields(c, geminiContentFields, at); m != "" {
		return t, f, m
	}
	if r, ok := c.get("role"); ok {
		t.role, ok = asString(r)
		if !ok || t.role != "" && t.role != "user" && t.role != "model" && at != "system_instruction" {
			return t, at + ".role", "Please use a valid role: user, model."
		}
	}
	raw, ok = c.get("parts")
	parts, isArray := asArray(raw)
	if !ok || isArray && len(parts) == 0 {
		return t, at + ".parts", "* GenerateContentRequest." + at + ".parts: contents.parts must not be empty."
	}
	if !isArray {
		return t, at + ".parts", invalidValue(at+".parts", "type.googleapis.com/google.ai.generativelanguage.v1beta.Part", raw)
	}
	for j, p := range parts {
		pat := fmt.Sprintf("%s.parts[%d]", at, j)
		data, part, f, m := geminiPart(pat, p)
		if m != "" {
			return t, f, m
		}
		switch data {
		case "function_call":
			name, _ := asString(mustGetField(part, "function_call", "name"))
			t.calls = append(t.calls, name)
		case "function_response":
			name, _ := asString(mustGetField(part, "function_response", "name"))
			t.responses = append(t.responses, name)
		}
	}
	return t, "", ""
}

// mustGetField returns member key of the object in part's member field.
func mustGetField(part object, field, key string) json.RawMessage {
	raw, _ := lookup(part, geminiPartFields, field)
	o, _ := asObject(raw)
	v, _ := o.get(key)
	return v
}

// geminiPart checks one Part and returns the name of its data member.
func geminiPart(at string, raw json.RawMessage) (data string, part object, field, msg string) {
	p, ok := asObject(raw)
	if !ok {
		return "", nil, at, invalidValue(at, "type.googleapis.com/google.ai.generativelanguage.v1beta.Part", raw)
	}
	if f, m := checkFields(p, geminiPartFields, at); m != "" {
		return "", nil, f, m
	}
	for _, m := range p {
		name := geminiPartFields[m.key]
		if !geminiPartData[name] || string(m.val) == "null" {
			continue
		}
		// An empty string is the proto default, which the parser does
		// not count as setting the field.
		if name == "text" && string(m.val) == `""` {
			continue
		}
		if data != "" && data != name {
			return "", nil, at, fmt.Sprintf("Invalid value at '%s' (oneof), oneof field 'data' is already set. Cannot set '%s'", at, m.key)
		}
		data = name
	}
	if data == "" {
		return "", nil, at + ".data", "* GenerateContentRequest." + at + ".data: required oneof field 'data' must have one initialized field"
	}
	v, _ := lookup(p, geminiPartFields, data)
	dat := at + "." + data
	switch data {
	case "text":
		if _, ok := asString(v); !ok {
			return "", nil, dat, invalidValue(dat, "TYPE_STRING", v)
		}
	case "inline_data":
		blob, ok := asObject(v)
		if !ok {
			return "", nil, dat, invalidValue(dat, "type.googleapis.com/google.ai.generativelanguage.v1beta.Blob", v)
		}
		fields := names("mimeType", "data")
		if f, m := checkFields(blob, fields, dat); m != "" {
			return "", nil, f, m
		}
		if mt, _ := lookup(blob, fields, "mime_type"); string(mt) == "" || string(mt) == `""` {
			return "", nil, dat + ".mime_type", "* GenerateContentRequest." + dat + ".mime_type: mime_type is not specified"
		}
		raw, _ := lookup(blob, fields, "data")
		s, ok := asString(raw)
		if !ok || s == "" {
			return "", nil, dat + ".data", "* GenerateContentRequest." + dat + ".data: data is not specified"
		}
		if !validBase64(s) {
			return "", nil, dat + ".data", invalidValue(dat+".data", "TYPE_BYTES", raw) + ", Base64 decoding failed"
		}
	case "file_data":
		fd, ok := asObject(v)
		if !ok {
			return "", nil, dat, invalidValue(dat, "type.googleapis.com/google.ai.generativelanguage.v1beta.FileData", v)
		}
		fields := names("mimeType", "fileUri")
		if f, m := checkFields(fd, fields, dat); m != "" {
			return "", nil, f, m
		}
		if u, _ := lookup(fd, fields, "file_uri"); string(u) == "" || string(u) == `""` {
			return "", nil, dat + ".file_uri", "* GenerateContentRequest." + dat + ".file_uri: file_uri is not specified"
		}
	case "function_call", "function_response":
		fc, ok := asObject(v)
		if !ok {
			return "", nil, dat, invalidValue(dat, "type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCall", v)
		}
		if name, _ := asString(mustGet(fc, "name")); name == "" {
			return "", nil, dat + ".name", "* GenerateContentRequest." + dat + ".name: Name cannot be empty."
		}
		member := "args"
		if data == "function_response" {
			member = "response"
		}
		if a, ok := fc.get(member); ok && jsonType(a) != '{' {
			return "", nil, dat + "." + member, invalidValue(dat+"."+member, "type.googleapis.com/google.protobuf.Struct", a)
		}
	}
	return data, p, "", ""
}

// validBase64 reports whether s is base64 in any of the four spellings the
// proto JSON parser accepts.
func validBase64(s string) bool {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if _, err := enc.DecodeString(s); err == nil {
			return true
		}
	}
	return false
}

// geminiTurns checks that function calls follow a user turn and that each
// function response turn answers the calls of the model turn just before
// it.
func geminiTurns(turns []gemTurn) (string, string) {
	for i, t := range turns {
		at := fmt.Sprintf("contents[%d]", i)
		if len(t.calls) > 0 && (i == 0 || turns[i-1].role == "model") {
			return at, "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
		}
		if len(t.responses) == 0 {
			continue
		}
		if i == 0 || turns[i-1].role != "model" || len(turns[i-1].calls) == 0 {
			return at, "Please ensure that function response turn comes immediately after a function call turn."
		}
		calls := turns[i-1].calls
		if len(t.responses) != len(calls) {
			return at, "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
		}
		for _, name := range t.responses {
			found := false
			for _, c := range calls {
				found = found || c == name
			}
			if !found {
				return at, fmt.Sprintf("Please ensure that the name of each function response part matches a function call part of the function call turn; no call is named %q.", name)
			}
		}
	}
	return "", ""
}

// geminiTools checks the tools and their function declarations.
func geminiTools(raw json.RawMessage) (string, string) {
	tools, ok := asArray(raw)
	if !ok {
		return "tools", invalidValue("tools", "type.googleapis.com/google.ai.generativelanguage.v1beta.Tool", raw)
	}
	for i, tr := range tools {
		at := fmt.Sprintf("tools[%d]", i)
		t, ok := asObject(tr)
		if !ok {
			return at, invalidValue(at, "type.googleapis.com/google.ai.generativelanguage.v1beta.Tool", tr)
		}
		if f, m := checkFields(t, geminiToolFields, at); m != "" {
			return f, m
		}
		fr, ok := lookup(t, geminiToolFields, "function_declarations")
		if !ok {
			continue
		}
		decls, ok := asArray(fr)
		if !ok {
			return at + ".function_declarations", invalidValue(at+".function_declarations", "type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionDeclaration", fr)
		}
		for j, dr := range decls {
			dat := fmt.Sprintf("%s.function_declarations[%d]", at, j)
			d, ok := asObject(dr)
			if !ok {
				return dat, invalidValue(dat, "type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionDeclaration", dr)
			}
			if f, m := checkFields(d, geminiFunctionFields, dat); m != "" {
				return f, m
			}
			name, _ := asString(mustGet(d, "name"))
			if name == "" {
				return dat + ".name", "* GenerateContentRequest." + dat + ".name: Name cannot be empty."
			}
			if !geminiFunctionName.MatchString(name) {
				return dat + ".name", "* GenerateContentRequest." + dat + ".name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64."
			}
			if p, ok := lookup(d, geminiFunctionFields, "parameters"); ok {
				if f, m := geminiSchema(dat+".parameters", p, 0); m != "" {
					return f, m
				}
			}
		}
	}
	return "", ""
}

// geminiSchema checks a Schema and the schemas nested in it; depth is its
// nesting level.
func geminiSchema(at string, raw json.RawMessage, depth int) (string, string) {
	if depth > maxSchemaDepth {
		return at, fmt.Sprintf("* GenerateContentRequest.%s: schema nesting exceeds the maximum depth of %d", at, maxSchemaDepth)
	}
	s, ok := asObject(raw)
	if !ok {
		return at, invalidValue(at, "type.googleapis.com/google.ai.generativelanguage.v1beta.Schema", raw)
	}
	if f, m := checkFields(s, geminiSchemaFields, at); m != "" {
		return f, m
	}
	if t, ok := s.get("type"); ok {
		name, isString := asString(t)
		if !isString || !geminiTypes[strings.ToUpper(name)] {
			return at + ".type", invalidValue(at+".type", "type.googleapis.com/google.ai.generativelanguage.v1beta.Type", t)
		}
	}
	if p, ok := s.get("properties"); ok {
		props, ok := asObject(p)
		if !ok {
			return at + ".properties", invalidValue(at+".properties", "type.googleapis.com/google.ai.generativelanguage.v1beta.Schema", p)
		}
		for i, m := range props {
			if f, msg := geminiSchema(at+".properties["+strconv.Itoa(i)+"].value", m.val, depth+1); msg != "" {
				return f, msg
			}
		}
	}
	if it, ok := s.get("items"); ok {
		if f, m := geminiSchema(at+".items", it, depth+1); m != "" {
			return f, m
		}
	}
	if a, ok := lookup(s, geminiSchemaFields, "any_of"); ok {
		alts, ok := asArray(a)
		if !ok {
			return at + ".any_of", invalidValue(at+".any_of", "type.googleapis.com/google.ai.generativelanguage.v1beta.Schema", a)
		}
		for i, alt := range alts {
			if f, m := geminiSchema(fmt.Sprintf("%s.any_of[%d]", at, i), alt, depth+1); m != "" {
				return f, m
			}
		}
	}
	return "", ""
}
