import { describe, expect, it } from "vitest";
import { trace } from "../test/fixtures";
import { attemptWord, formatRoute, tokensEstimated, traceTokens } from "./route";

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
