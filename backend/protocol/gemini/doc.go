// Package gemini is Google's Generative Language API (generateContent and
// streamGenerateContent with alt=sse), both directions: requests, answers,
// streams and errors, to and from FreeLane's neutral model, and what an
// upstream client needs to call the API.
//
// The model is part of the URL in this dialect, never of the body, so a
// Gemini client's request is parsed with the model its URL named
// (ParseRequestFor), and a body written for a Gemini upstream carries no
// model at all (Codec.Path puts it in the path).
package gemini
