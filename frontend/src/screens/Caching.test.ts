import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/svelte";
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
    expect(screen.getByTestId("caching-response").textContent?.replace(/\s+/g, " ")).toContain("3 hits, 1 miss, 0 refreshed, 0 bypassed");
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

  const quiet = { hits: 0, misses: 0, bypasses: 0, refreshes: 0, hit_rate: 0, saved: 0 };
  const noTraffic = { ...view, backends: [], sessions: [], chains: [], warnings: [], response: quiet, store: null };

  it("asks for the window picked and names it", async () => {
    const f = fakeFetch(() => ({ body: noTraffic }));
    vi.stubGlobal("fetch", f.fn);
    render(Caching);
    await waitFor(() => expect(screen.getByTestId("caching-empty").textContent).toContain("No requests in the last 24 hours"));
    await fireEvent.click(screen.getByTestId("caching-window-7d"));
    await waitFor(() => expect(f.calls.at(-1)!.url).toBe("/api/caching?window=7d"));
    await waitFor(() => expect(screen.getByTestId("caching-empty").textContent).toContain("No requests in the last 7 days"));
    await fireEvent.click(screen.getByTestId("caching-window-1h"));
    await waitFor(() => expect(f.calls.at(-1)!.url).toBe("/api/caching?window=1h"));
    expect((screen.getByTestId("caching-window-1h") as HTMLInputElement).checked).toBe(true);
  });

  it("says whether the response cache is on when there was no traffic", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: noTraffic })).fn);
    render(Caching);
    await waitFor(() => expect(screen.getByTestId("caching-empty-response").textContent).toContain("The response cache is off"));
    expect(screen.getByTestId("caching-empty-response").textContent?.replace(/\s+/g, " ")).toContain(
      "turn it on with cache: {enabled: true} at the top of the configuration, or with the same line on one chain",
    );
    cleanup();
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: { ...noTraffic, store: { entries: 0, bytes: 0, max_bytes: 256 << 20 } } })).fn);
    render(Caching);
    await waitFor(() => expect(screen.getByTestId("caching-empty-response").textContent).toContain("The response cache is on"));
  });

  it("shows traffic without cached prompts, and says the response cache is off and how to turn it on", async () => {
    const b = { backend: "groq/llama", requests: 4, prompt_tokens: 1234567, cached_tokens: 0, cache_write_tokens: 0, hit_share: 0, saved: 0 };
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: { ...noTraffic, backends: [b] } })).fn);
    render(Caching);
    await waitFor(() => expect(screen.getByTestId("caching-backend-groq/llama")).toBeTruthy());
    expect(screen.queryByTestId("caching-empty")).toBeNull();
    const cell = (col: string) => screen.getByTestId("caching-backend-groq/llama").querySelector(`[data-col="${col}"]`)?.textContent?.trim();
    expect([cell("prompt"), cell("cached"), cell("share"), cell("saved")]).toEqual(["1.2 M", "0", "0%", "$0.00"]);
    expect(screen.getByTestId("caching-prompt-total").querySelector('[data-col="share"]')?.textContent).toBe("0%");
    expect(screen.getByTestId("caching-prompt-none").textContent).toContain("No provider reported a cached prompt");
    expect(screen.getByTestId("caching-response").textContent).toContain("Off");
    expect(screen.getByTestId("caching-response-off").textContent?.replace(/\s+/g, " ")).toContain("Turn it on with cache: {enabled: true}");
    expect(screen.queryByTestId("caching-store")).toBeNull();
  });

  it("shows the response cache on and idle with its size", async () => {
    const b = { backend: "groq/llama", requests: 4, prompt_tokens: 100, cached_tokens: 50, cache_write_tokens: 0, hit_share: 0.5, saved: 0.001 };
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: { ...noTraffic, backends: [b], store: { entries: 3, bytes: 2048, max_bytes: 256 << 20 } } })).fn);
    render(Caching);
    await waitFor(() => expect(screen.getByTestId("caching-response-idle")).toBeTruthy());
    expect(screen.getByTestId("caching-response-idle").textContent).toContain("On; no deterministic request");
    expect(screen.getByTestId("caching-store").textContent?.replace(/\s+/g, " ").trim()).toBe("3 answers, 2 KB of 256 MB");
    expect(screen.queryByTestId("caching-prompt-none")).toBeNull();
  });

  it("links each session to its requests", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: view })).fn);
    render(Caching);
    await waitFor(() => expect(screen.getByTestId("caching-session-link-0123456789abcdef")).toBeTruthy());
    expect(screen.getByTestId("caching-session-link-0123456789abcdef").getAttribute("href")).toBe("#/requests?session=0123456789abcdef");
  });
});
