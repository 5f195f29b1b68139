import { describe, expect, it } from "vitest";
import { apiLabel, dialectOfPath, requestAPI, requestPath } from "./endpoint";

describe("endpoint", () => {
  it("labels a path with its dialect", () => {
    expect(apiLabel("/v1/messages", "anthropic")).toBe("/v1/messages · Anthropic");
    expect(apiLabel("/v1/responses")).toBe("/v1/responses · Responses");
    expect(apiLabel("/v1/responses/compact")).toBe("/v1/responses/compact · Responses");
    expect(apiLabel("/v1beta/models/{model}:streamGenerateContent")).toBe("/v1beta/models/…:streamGenerateContent · Gemini");
    expect(apiLabel("/v1/models/{model}:generateContent")).toBe("/v1/models/…:generateContent · Gemini");
    expect(apiLabel("/v1/embeddings")).toBe("/v1/embeddings · OpenAI");
    expect(apiLabel("/v2/new")).toBe("/v2/new");
    expect(apiLabel("/v2/new", "klingon")).toBe("/v2/new · klingon");
    expect(apiLabel("")).toBe("");
  });

  it("knows each path's dialect", () => {
    expect(["/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1beta/models/{model}:generateContent", "/x"].map(dialectOfPath)).toEqual([
      "openai",
      "anthropic",
      "openai-responses",
      "gemini",
      "",
    ]);
  });

  it("tells the path of a request logged before paths were kept from its dialect", () => {
    const t = { endpoint: "chat/completions", stream: false } as const;
    expect(requestPath({ ...t, path: "/v1/messages", dialect: "anthropic" })).toBe("/v1/messages");
    expect(requestPath({ ...t, dialect: "anthropic" })).toBe("/v1/messages");
    expect(requestPath({ ...t, dialect: "openai-responses" })).toBe("/v1/responses");
    expect(requestPath({ ...t, dialect: "gemini", stream: true })).toBe("…:streamGenerateContent");
    expect(requestPath({ ...t, dialect: "openai" })).toBe("/v1/chat/completions");
    // Before dialects were kept, every client spoke OpenAI's.
    expect(requestAPI({ endpoint: "embeddings", stream: false })).toBe("/v1/embeddings · OpenAI");
    expect(requestAPI({ ...t, dialect: "gemini" })).toBe("…:generateContent · Gemini");
  });
});
