package gemini

import "encoding/json"

// The wire types of the REST API, as far as FreeLane reads or writes them.
// Google's JSON parser accepts every field under its lowerCamelCase name and
// under its proto snake_case name, and clients use both (the REST examples
// write system_instruction and inline_data), so the types a client's body
// is decoded into name both; FreeLane itself always writes lowerCamelCase.

// request is a GenerateContentRequest.
type request struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	SystemSnake       *content          `json:"system_instruction,omitempty"`
	Tools             []tool            `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
	ToolConfigSnake   *toolConfig       `json:"tool_config,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
	GenConfigSnake    *generationConfig `json:"generation_config,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part is one Part. Exactly one of its data fields is set.
type part struct {
	Text                  *string           `json:"text,omitempty"`
	Thought               bool              `json:"thought,omitempty"`
	ThoughtSignature      string            `json:"thoughtSignature,omitempty"`
	ThoughtSignatureSnake string            `json:"thought_signature,omitempty"`
	InlineData            *blob             `json:"inlineData,omitempty"`
	InlineDataSnake       *blob             `json:"inline_data,omitempty"`
	FileData              *fileData         `json:"fileData,omitempty"`
	FileDataSnake         *fileData         `json:"file_data,omitempty"`
	FunctionCall          *functionCall     `json:"functionCall,omitempty"`
	FunctionCallSnake     *functionCall     `json:"function_call,omitempty"`
	FunctionResponse      *functionResponse `json:"functionResponse,omitempty"`
	FunctionRespSnake     *functionResponse `json:"function_response,omitempty"`
}

// normalize folds the snake_case spellings into the camelCase fields.
func (p *part) normalize() {
	if p.ThoughtSignature == "" {
		p.ThoughtSignature = p.ThoughtSignatureSnake
	}
	p.ThoughtSignatureSnake = ""
	p.InlineData = pick(p.InlineData, p.InlineDataSnake)
	p.FileData = pick(p.FileData, p.FileDataSnake)
	p.FunctionCall = pick(p.FunctionCall, p.FunctionCallSnake)
	p.FunctionResponse = pick(p.FunctionResponse, p.FunctionRespSnake)
	p.InlineDataSnake, p.FileDataSnake, p.FunctionCallSnake, p.FunctionRespSnake = nil, nil, nil, nil
	if p.InlineData != nil && p.InlineData.MimeType == "" {
		p.InlineData.MimeType = p.InlineData.MimeSnake
	}
	if p.FileData != nil {
		if p.FileData.MimeType == "" {
			p.FileData.MimeType = p.FileData.MimeSnake
		}
		if p.FileData.FileURI == "" {
			p.FileData.FileURI = p.FileData.URISnake
		}
	}
}

func pick[T any](camel, snake *T) *T {
	if camel != nil {
		return camel
	}
	return snake
}

type blob struct {
	MimeType  string `json:"mimeType"`
	MimeSnake string `json:"mime_type,omitempty"`
	Data      string `json:"data"`
}

type fileData struct {
	MimeType  string `json:"mimeType,omitempty"`
	MimeSnake string `json:"mime_type,omitempty"`
	FileURI   string `json:"fileUri"`
	URISnake  string `json:"file_uri,omitempty"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type functionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type tool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations,omitempty"`
	DeclarationsSnake    []functionDeclaration `json:"function_declarations,omitempty"`
}

type functionDeclaration struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// JSONSchema is parametersJsonSchema, a full JSON Schema; FreeLane
	// reads it from clients but writes parameters (see sanitizeSchema).
	JSONSchema      json.RawMessage `json:"parametersJsonSchema,omitempty"`
	JSONSchemaSnake json.RawMessage `json:"parameters_json_schema,omitempty"`
}

type toolConfig struct {
	FunctionCallingConfig *functionCallingConfig `json:"functionCallingConfig,omitempty"`
	FCCSnake              *functionCallingConfig `json:"function_calling_config,omitempty"`
}

type functionCallingConfig struct {
	Mode         string   `json:"mode,omitempty"`
	AllowedNames []string `json:"allowedFunctionNames,omitempty"`
	AllowedSnake []string `json:"allowed_function_names,omitempty"`
}

type generationConfig struct {
	Temperature      *float64        `json:"temperature,omitempty"`
	TopP             *float64        `json:"topP,omitempty"`
	TopK             *float64        `json:"topK,omitempty"`
	MaxOutputTokens  int             `json:"maxOutputTokens,omitempty"`
	StopSequences    []string        `json:"stopSequences,omitempty"`
	Seed             *int64          `json:"seed,omitempty"`
	PresencePenalty  *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty *float64        `json:"frequencyPenalty,omitempty"`
	ResponseMimeType string          `json:"responseMimeType,omitempty"`
	ResponseSchema   json.RawMessage `json:"responseSchema,omitempty"`
	// ResponseJSONSchema is responseJsonSchema, a full JSON Schema.
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *thinkingConfig `json:"thinkingConfig,omitempty"`

	TopPSnake       *float64        `json:"top_p,omitempty"`
	TopKSnake       *float64        `json:"top_k,omitempty"`
	MaxSnake        int             `json:"max_output_tokens,omitempty"`
	StopSnake       []string        `json:"stop_sequences,omitempty"`
	PresenceSnake   *float64        `json:"presence_penalty,omitempty"`
	FrequencySnake  *float64        `json:"frequency_penalty,omitempty"`
	MimeSnake       string          `json:"response_mime_type,omitempty"`
	SchemaSnake     json.RawMessage `json:"response_schema,omitempty"`
	JSONSchemaSnake json.RawMessage `json:"response_json_schema,omitempty"`
	ThinkingSnake   *thinkingConfig `json:"thinking_config,omitempty"`
}

// normalize folds the snake_case spellings into the camelCase fields.
func (g *generationConfig) normalize() {
	g.TopP = pick(g.TopP, g.TopPSnake)
	g.TopK = pick(g.TopK, g.TopKSnake)
	if g.MaxOutputTokens == 0 {
		g.MaxOutputTokens = g.MaxSnake
	}
	if g.StopSequences == nil {
		g.StopSequences = g.StopSnake
	}
	g.PresencePenalty = pick(g.PresencePenalty, g.PresenceSnake)
	g.FrequencyPenalty = pick(g.FrequencyPenalty, g.FrequencySnake)
	if g.ResponseMimeType == "" {
		g.ResponseMimeType = g.MimeSnake
	}
	if g.ResponseSchema == nil {
		g.ResponseSchema = g.SchemaSnake
	}
	if g.ResponseJSONSchema == nil {
		g.ResponseJSONSchema = g.JSONSchemaSnake
	}
	g.ThinkingConfig = pick(g.ThinkingConfig, g.ThinkingSnake)
	if t := g.ThinkingConfig; t != nil {
		t.Budget = pick(t.Budget, t.BudgetSnake)
		t.Include = t.Include || t.IncludeSnake
		if t.Level == "" {
			t.Level = t.LevelSnake
		}
	}
}

type thinkingConfig struct {
	Budget       *int   `json:"thinkingBudget,omitempty"`
	Include      bool   `json:"includeThoughts,omitempty"`
	Level        string `json:"thinkingLevel,omitempty"`
	BudgetSnake  *int   `json:"thinking_budget,omitempty"`
	IncludeSnake bool   `json:"include_thoughts,omitempty"`
	LevelSnake   string `json:"thinking_level,omitempty"`
}

// response is a GenerateContentResponse: a complete answer, or one chunk
// of a stream.
type response struct {
	Candidates     []candidate     `json:"candidates,omitempty"`
	PromptFeedback *promptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *usageMetadata  `json:"usageMetadata,omitempty"`
	ModelVersion   string          `json:"modelVersion,omitempty"`
	ResponseID     string          `json:"responseId,omitempty"`
	// Error is set on an error chunk of a stream.
	Error *apiError `json:"error,omitempty"`
}

type candidate struct {
	Content      *content `json:"content,omitempty"`
	FinishReason string   `json:"finishReason,omitempty"`
	Index        int      `json:"index"`
}

type promptFeedback struct {
	BlockReason        string `json:"blockReason,omitempty"`
	BlockReasonMessage string `json:"blockReasonMessage,omitempty"`
}

type usageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount,omitempty"`
	CandidatesTokenCount    int `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         int `json:"totalTokenCount,omitempty"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
}

// errorEnvelope is Google's error body: {"error": {code, message, status,
// details}}.
type errorEnvelope struct {
	Error *apiError `json:"error"`
}

type apiError struct {
	Code    int           `json:"code"`
	Message string        `json:"message"`
	Status  string        `json:"status,omitempty"`
	Details []errorDetail `json:"details,omitempty"`
}

// errorDetail is one google.rpc detail; the fields of the kinds FreeLane
// reads (RetryInfo, ErrorInfo, BadRequest) share one struct.
type errorDetail struct {
	Type            string           `json:"@type"`
	RetryDelay      string           `json:"retryDelay,omitempty"`
	Reason          string           `json:"reason,omitempty"`
	Domain          string           `json:"domain,omitempty"`
	FieldViolations []fieldViolation `json:"fieldViolations,omitempty"`
}

type fieldViolation struct {
	Field       string `json:"field"`
	Description string `json:"description"`
}
