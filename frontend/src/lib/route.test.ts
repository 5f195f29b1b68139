import { describe, expect, it } from "vitest";
import { trace } from "../test/fixtures";
import { attemptRows, attemptWord, dialectName, formatRoute, outcomeParts, showsDialects, tokensEstimated, traceTokens } from "./route";

describe("formatRoute", () => {
  it("writes the route of a request that failed over", () => {
    const t = trace("r", {
      backend: "C",
      latency_ns: 412_000_000,
      attempts: [
        { backend: "A", class: "rate_limited", status: 429, latency_ns: 80_000_000 },
        { backend: "B", class: "transient", skipped: true, reason: "open until 12:00:30 (2 failures in a row)", latency_ns: 0 },
        { backend: "C", class: "ok", status: 200, latency_ns: 300_000_000 },
      ],
    });
    expect(formatRoute(t)).toBe("A: 429 → B: open → served by C in 412 ms");
  });

  it("writes a direct hit as just the outcome", () => {
    expect(formatRoute(trace("r"))).toBe("served by cerebras/qwen in 412 ms");
  });

  it("names skip reasons and transport failures in words", () => {
    expect(attemptWord({ backend: "x", class: "rate_limited", skipped: true, reason: "cooling until 12:01:00 (HTTP 429)", latency_ns: 0 })).toBe("cooling down");
    expect(attemptWord({ backend: "x", class: "transient", skipped: true, reason: "key_disabled until 13:00:00 (rejected)", latency_ns: 0 })).toBe("key disabled");
    expect(attemptWord({ backend: "x", class: "too_long", skipped: true, reason: "context 8192 not larger than 9000", latency_ns: 0 })).toBe("too long");
    expect(attemptWord({ backend: "x", class: "transient", reason: "connection refused", latency_ns: 1 })).toBe("connection refused");
    expect(attemptWord({ backend: "x", class: "soft", status: 200, latency_ns: 1 })).toBe("bad answer");
  });

  it("writes a request that no backend served", () => {
    const t = trace("r", {
      backend: undefined,
      class: "transient",
      status: 502,
      latency_ns: 3_100_000_000,
      attempts: [
        { backend: "A", class: "transient", status: 503, latency_ns: 1 },
        { backend: "B", class: "transient", reason: "timed out waiting for response headers", latency_ns: 1 },
      ],
    });
    expect(formatRoute(t)).toBe("A: 503 → B: timed out waiting for response headers → failed with 502 in 3.1 s");
  });
});

describe("quota skips, tokens and cost", () => {
  it("names a quota skip by its class", () => {
    const t = trace("q", {
      backend: "cerebras/qwen",
      attempts: [
        { backend: "groq/llama", class: "quota", skipped: true, reason: "groq/llama: daily tokens used, resets 08:00 UTC", latency_ns: 0 },
        { backend: "openai/gpt", class: "quota", skipped: true, reason: "budget: the global daily budget of $1.00 is spent", latency_ns: 0 },
        { backend: "cerebras/qwen", class: "ok", status: 200, latency_ns: 1, prompt_tokens: 12, completion_tokens: 30, cost: 0, estimated: true },
      ],
    });
    expect(formatRoute(t)).toBe("groq/llama: quota used → openai/gpt: over budget → served by cerebras/qwen in 412 ms");
    expect(tokensEstimated(t)).toBe(true);
    expect(tokensEstimated(trace("r"))).toBe(false);
  });

  it("names a skip by the word the router recorded, not by its reason", () => {
    const skip = (extra: Partial<Parameters<typeof attemptWord>[0]>) =>
      attemptWord({ backend: "x", class: "quota", skipped: true, reason: "x: something else entirely", latency_ns: 0, ...extra });
    expect(skip({ skip: "quota" })).toBe("quota used");
    expect(skip({ skip: "quota", budget: true })).toBe("over budget");
    expect(skip({ class: "transient", skip: "half_open" })).toBe("half-open");
    expect(skip({ class: "rate_limited", skip: "cooling", until: "2026-12-01T00:01:00Z" })).toBe("cooling down");
    expect(skip({ class: "soft", skip: "unsupported" })).toBe("not supported");
  });

  it("takes tokens from the trace, else from its attempts", () => {
    expect(traceTokens(trace("a"))).toBe(30);
    const t = trace("b", {
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      attempts: [
        { backend: "x", class: "transient", status: 502, latency_ns: 1, prompt_tokens: 10, completion_tokens: 0, cost: 0.001 },
        { backend: "y", class: "ok", status: 200, latency_ns: 1, prompt_tokens: 10, completion_tokens: 5, cost: 0.002 },
      ],
    });
    expect(traceTokens(t)).toBe(25);
  });
});

describe("dialects", () => {
  const mixed = trace("d", {
    backend: "claude/haiku",
    dialect: "anthropic",
    attempts: [
      { backend: "groq/llama", dialect: "openai", class: "rate_limited", status: 429, latency_ns: 1 },
      { backend: "google/flash", dialect: "gemini", class: "soft", skipped: true, skip: "unsupported", reason: "google/flash cannot serve tools", latency_ns: 0 },
      { backend: "claude/haiku", dialect: "anthropic", class: "ok", status: 200, latency_ns: 1 },
    ],
  });

  it("labels every backend of a route that spoke more than OpenAI's dialect", () => {
    expect(showsDialects(mixed)).toBe(true);
    expect(formatRoute(mixed)).toBe("groq/llama (openai): 429 → google/flash (gemini): not supported → served by claude/haiku (anthropic) in 412 ms");
    expect(outcomeParts(mixed)).toEqual({ lead: "served by ", backend: "claude/haiku", dialect: "anthropic", tail: " in 412 ms" });
  });

  it("labels a route of one dialect other than OpenAI's", () => {
    const t = trace("g", { backend: "google/flash", attempts: [{ backend: "google/flash", dialect: "gemini", class: "ok", status: 200, latency_ns: 1 }] });
    expect(formatRoute(t)).toBe("served by google/flash (gemini) in 412 ms");
  });

  it("leaves OpenAI-only routes and routes logged before dialects unlabelled", () => {
    const openai = trace("o", {
      backend: "C",
      attempts: [
        { backend: "A", dialect: "openai", class: "rate_limited", status: 429, latency_ns: 1 },
        { backend: "C", dialect: "openai", class: "ok", status: 200, latency_ns: 1 },
      ],
    });
    expect(showsDialects(openai)).toBe(false);
    expect(formatRoute(openai)).toBe("A: 429 → served by C in 412 ms");
    expect(showsDialects(trace("old"))).toBe(false);
    expect(formatRoute(trace("old"))).toBe("served by cerebras/qwen in 412 ms");
  });

  it("keeps the outcome of a failed route in one piece", () => {
    const t = trace("f", {
      backend: undefined,
      class: "transient",
      status: 502,
      latency_ns: 3_100_000_000,
      attempts: [{ backend: "claude/haiku", dialect: "anthropic", class: "transient", status: 529, latency_ns: 1 }],
    });
    expect(formatRoute(t)).toBe("claude/haiku (anthropic): 529 → failed with 502 in 3.1 s");
    expect(outcomeParts(t)).toEqual({ lead: "failed with 502 in 3.1 s", backend: "", dialect: "", tail: "" });
  });

  it("names dialects for the detail view", () => {
    expect(dialectName("openai")).toBe("OpenAI chat completions");
    expect(dialectName("openai-responses")).toBe("OpenAI Responses");
    expect(dialectName("anthropic")).toBe("Anthropic Messages");
    expect(dialectName("gemini")).toBe("Gemini");
    expect(dialectName("bedrock")).toBe("bedrock");
    expect(dialectName(undefined)).toBe("");
  });

  it("lists every attempt with its dialect for the detail view", () => {
    const rows = attemptRows(mixed);
    expect(rows.map((r) => [r.backend, r.dialect, r.word, r.kind])).toEqual([
      ["groq/llama", "OpenAI chat completions", "429", "fail"],
      ["google/flash", "Gemini", "not supported", "skip"],
      ["claude/haiku", "Anthropic Messages", "ok", "ok"],
    ]);
    expect(rows[1].took).toBe("");
    expect(rows[1].reason).toBe("google/flash cannot serve tools");
    expect(attemptRows(trace("old"))[0].dialect).toBe("—");
  });
});
