import { describe, expect, it } from "vitest";
import { describeEvent } from "./events";
import type { FreeLaneEvent } from "./types";

const now = Date.parse("2026-01-01T12:00:00Z");

function ev(over: Partial<FreeLaneEvent>): FreeLaneEvent {
  return { time: "2026-01-01T12:00:00Z", kind: "cooldown", level: "warn", ...over } as FreeLaneEvent;
}

describe("describeEvent", () => {
  it("reads as sentences: the reason after a colon, then when it ends", () => {
    const until = new Date(now + 30_000).toISOString();
    expect(describeEvent(ev({ backend: "groq/llama", reason: "HTTP 429", until }), now)).toBe(
      "groq/llama — rate limited: HTTP 429. Back in 30 s.",
    );
    expect(describeEvent(ev({ kind: "state", backend: "a/m", from: "closed", to: "open", reason: "2 failures in a row.", until }), now)).toBe(
      "a/m — breaker closed → open: 2 failures in a row. Tried again in 30 s.",
    );
  });

  it("never leaves a bare comma or colon", () => {
    const text = describeEvent(ev({ kind: "routing_paused", reason: "" }), now);
    expect(text).toBe("FreeLane — routing paused.");
    expect(describeEvent(ev({ kind: "key_disabled", provider: "groq", reason: "HTTP 401:" }), now)).toBe("groq — key rejected: HTTP 401.");
  });
});
