package gemini

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"google.golang.org/genai"
)

// The bodies FreeLane writes are checked against Google's own Go SDK
// (google.golang.org/genai), whose types carry the REST field names: each
// body must decode into them with no field unknown to them, and encode
// back from them to the same JSON, so no field is misspelled, misplaced
// or of the wrong type.

// genaiRequest is a GenerateContentRequest in the SDK's types (the SDK
// itself builds the request from GenerateContentConfig, which flattens
// it).
type genaiRequest struct {
	Contents          []*genai.Content        `json:"contents"`
	SystemInstruction *genai.Content          `json:"systemInstruction,omitempty"`
	Tools             []*genai.Tool           `json:"tools,omitempty"`
	ToolConfig        *genai.ToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *genai.GenerationConfig `json:"generationConfig,omitempty"`
}

// genaiResponse is genai.GenerateContentResponse without its own
// UnmarshalJSON, which would hide unknown fields from the strict decoder.
type genaiResponse struct {
	Candidates     []*genai.Candidate                           `json:"candidates,omitempty"`
	ModelVersion   string                                       `json:"modelVersion,omitempty"`
	PromptFeedback *genai.GenerateContentResponsePromptFeedback `json:"promptFeedback,omitempty"`
	ResponseID     string                                       `json:"responseId,omitempty"`
	UsageMetadata  *genai.GenerateContentResponseUsageMetadata  `json:"usageMetadata,omitempty"`
}

func strictRoundTrip(t *testing.T, body []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("the SDK's types refuse the body: %v\n%s", err, body)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	_ = json.Unmarshal(body, &want)
	_ = json.Unmarshal(again, &got)
	// The SDK leaves out an empty text, which the API sends with a
	// signature it has no other part for, a candidate's index 0 and empty
	// arguments.
	want = dropEmptyText(want)
	if !reflect.DeepEqual(want, got) {
		t.Errorf("the SDK's types do not keep the body:\n%s\nthey read\n%s", body, again)
	}
}

func dropEmptyText(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if m, ok := val.(map[string]any); (k == "text" && val == "") || (k == "index" && val == 0.0) || (k == "args" && ok && len(m) == 0) {
				delete(x, k)
				continue
			}
			x[k] = dropEmptyText(val)
		}
	case []any:
		for i := range x {
			x[i] = dropEmptyText(x[i])
		}
	}
	return v
}

func checkGenaiRequest(t *testing.T, body []byte) {
	t.Helper()
	var r genaiRequest
	strictRoundTrip(t, body, &r)
	if len(r.Contents) == 0 {
		t.Fatal("no contents")
	}
	for i, c := range r.Contents {
		if c.Role != genai.RoleUser && c.Role != genai.RoleModel {
			t.Errorf("contents[%d].role = %q", i, c.Role)
		}
		if i > 0 && r.Contents[i-1].Role == c.Role {
			t.Errorf("contents[%d] repeats the role %s", i, c.Role)
		}
		for j, p := range c.Parts {
			if p.FunctionResponse != nil && (p.FunctionResponse.Name == "" || p.FunctionResponse.Response == nil) {
				t.Errorf("contents[%d].parts[%d]: function response without name or object", i, j)
			}
			if p.FunctionCall != nil && c.Role != genai.RoleModel {
				t.Errorf("contents[%d].parts[%d]: function call in a user turn", i, j)
			}
		}
	}
	for _, tool := range r.Tools {
		for _, fd := range tool.FunctionDeclarations {
			if fd.Parameters != nil {
				checkSchema(t, fd.Name, fd.Parameters)
			}
		}
	}
	if g := r.GenerationConfig; g != nil && g.ResponseSchema != nil {
		checkSchema(t, "responseSchema", g.ResponseSchema)
	}
}

// checkSchema checks what the API refuses in a Schema beyond its fields.
func checkSchema(t *testing.T, at string, s *genai.Schema) {
	t.Helper()
	switch s.Type {
	case "", genai.TypeString, genai.TypeNumber, genai.TypeInteger, genai.TypeBoolean, genai.TypeArray, genai.TypeObject, genai.TypeNULL:
	default:
		t.Errorf("%s: type %q", at, s.Type)
	}
	if s.Type == genai.TypeObject && len(s.Properties) == 0 {
		t.Errorf("%s: an OBJECT without properties", at)
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			t.Errorf("%s: required %q is not a property", at, r)
		}
	}
	for name, p := range s.Properties {
		checkSchema(t, at+"."+name, p)
	}
	if s.Items != nil {
		checkSchema(t, at+"[]", s.Items)
	}
	for _, a := range s.AnyOf {
		checkSchema(t, at+"|", a)
	}
}

func checkGenaiResponse(t *testing.T, body []byte) {
	t.Helper()
	var r genaiResponse
	strictRoundTrip(t, body, &r)
	var full genai.GenerateContentResponse
	if err := json.Unmarshal(body, &full); err != nil {
		t.Fatal(err)
	}
	for _, c := range full.Candidates {
		if c.Content != nil && c.Content.Role != genai.RoleModel {
			t.Errorf("candidate role %q", c.Content.Role)
		}
	}
}

func TestGenaiReadsAnswer(t *testing.T) {
	out, err := Codec.EncodeResponse(mustDecode(t, readFile(t, "answer_text_call.json")), defaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	var r genai.GenerateContentResponse
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if got := r.Candidates[0].Content.Parts[1].Text; got != "I'll look up tomorrow's forecast for Paris." {
		t.Errorf("text %q", got)
	}
	calls := r.FunctionCalls()
	if len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Args["city"] != "Paris" {
		t.Errorf("FunctionCalls() = %+v", calls)
	}
	parts := r.Candidates[0].Content.Parts
	if !parts[0].Thought || len(parts[2].ThoughtSignature) == 0 {
		t.Errorf("thought %v, signature %q", parts[0].Thought, parts[2].ThoughtSignature)
	}
	if r.Candidates[0].FinishReason != genai.FinishReasonStop || r.UsageMetadata.TotalTokenCount != 219 {
		t.Errorf("finish %s usage %+v", r.Candidates[0].FinishReason, r.UsageMetadata)
	}
}
