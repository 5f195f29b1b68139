// Package openai is OpenAI's chat completions dialect, which most servers
// speak (OpenAI, Groq, Cerebras, OpenRouter, Mistral, DeepSeek, Ollama,
// LM Studio, vLLM and many more): requests, answers, streams and errors,
// both to and from FreeLane's neutral model, and what an upstream client
// needs to call such a server.
package openai

import "freelane/backend/llm"

// Codec is the dialect; it implements protocol.Codec and protocol.Wire.
var Codec codec

type codec struct{}

func (codec) Dialect() llm.Dialect { return llm.DialectOpenAI }

func (codec) ParseRequest(ep llm.Endpoint, body []byte) (*llm.Request, error) {
	return ParseRequest(ep, body)
}
