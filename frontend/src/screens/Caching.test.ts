import { cleanup, render, screen, waitFor } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeFetch } from "../test/fixtures";
import Caching from "./Caching.svelte";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const view = {
  window: "24h0m0s",
  from: "2026-11-29T12:00:00Z",
  to: "2026-11-30T12:00:00Z",
  backends: [
    { backend: "anthropic/claude", requests: 12, prompt_tokens: 10000, cached_tokens: 7500, cache_write_tokens: 0, hit_share: 0.75, saved: 0.0123 },
  ],
  sessions: [
    {
      session: "0123456789abcdef",
      dialect: "anthropic",
      chain: "code",
      backends: ["anthropic/claude", "openai/gpt-5"],
      turns: 12,
      prompt_tokens: 10000,
      cached_tokens: 7500,
      hit_share: 0.75,
      saved: 0.0123,
      last_seen: "2026-11-30T11:59:00Z",
    },
  ],
  response: { hits: 3, misses: 1, bypasses: 0, refreshes: 0, hit_rate: 0.75, saved: 0.5 },
  chains: [{ chain: "code", turns: 11, changed: 5 }],
  warnings: [{ chain: "code", turns: 11, changed: 5, message: "chain code's routing keeps breaking warm prompt caches: 5 of 11 session turns changed backend" }],
  store: null,
};

describe("Caching", () => {
  it("shows the hit share and savings per backend, the sessions, the response cache and the warnings", async () => {
    const f = fakeFetch(() => ({ body: view }));
    vi.stubGlobal("fetch", f.fn);
    render(Caching);
    await waitFor(() => expect(screen.getByTestId("caching-backend-anthropic/claude")).toBeTruthy());
    expect(f.calls[0].url).toBe("/api/caching?window=24h");
    const cell = (row: HTMLElement, col: string) => row.querySelector(`[data-col="${col}"]`)?.textContent?.trim();
    const b = screen.getByTestId("caching-backend-anthropic/claude");
    expect([cell(b, "requests"), cell(b, "prompt"), cell(b, "cached"), cell(b, "share"), cell(b, "saved")]).toEqual([
      "12",
      "10,000",
      "7,500",
      "75%",
      "$0.0123",
    ]);
    const s = screen.getByTestId("caching-session-0123456789abcdef");
    expect([cell(s, "turns"), cell(s, "share"), cell(s, "saved")]).toEqual(["12", "75%", "$0.0123"]);
    expect(screen.getByTestId("caching-response").textContent).toContain("75%");
    expect(screen.getByTestId("caching-response").textContent).toContain("$0.50");
    expect(screen.getByTestId("caching-warning-code").textContent).toContain("5 of 11 session turns changed backend");
    expect(screen.queryByTestId("caching-empty")).toBeNull();
  });

  it("says how to get caching when nothing was cached", async () => {
    const empty = { ...view, backends: [], sessions: [], chains: [], warnings: [], response: { hits: 0, misses: 0, bypasses: 0, refreshes: 0, hit_rate: 0, saved: 0 } };
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: empty })).fn);
    render(Caching);
    await waitFor(() => expect(screen.getByTestId("caching-empty")).toBeTruthy());
    const text = screen.getByTestId("caching-empty").textContent ?? "";
    expect(text).toContain("X-FreeLane-Session");
    expect(text).toContain("cache: {enabled: true}");
  });
});
