import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import { fakeFetch, snapshot, trace, update } from "../test/fixtures";
import Requests from "./Requests.svelte";

const failover = trace("r2", {
  start: "2025-03-01T12:00:05Z",
  chain: "coding",
  model: "coding",
  backend: "C",
  attempts: [
    { backend: "A", class: "rate_limited", status: 429, latency_ns: 1 },
    { backend: "B", class: "transient", skipped: true, reason: "open until 12:00:30 (x)", latency_ns: 0 },
    { backend: "C", class: "ok", status: 200, latency_ns: 1 },
  ],
});

beforeEach(() => live.applySnapshot(snapshot({ requests: [failover, trace("r1")] })));
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe("Requests", () => {
  it("shows each request's route, merges the log and the live tail, and filters", async () => {
    const older = trace("r0", { start: "2025-03-01T11:00:00Z", class: "rate_limited", status: 429, backend: undefined, attempts: [{ backend: "groq/llama", class: "rate_limited", status: 429, latency_ns: 1 }] });
    const f = fakeFetch(() => ({ body: [older] }));
    vi.stubGlobal("fetch", f.fn);
    render(Requests);

    expect(screen.getByTestId("route-r2").textContent?.trim()).toBe("A: 429 → B: open → served by C in 412 ms");
    await waitFor(() => expect(screen.getByTestId("request-row-r0")).toBeTruthy());
    expect(f.calls[0].url).toBe("/api/requests?limit=100");
    const ids = () => screen.getAllByTestId(/^request-row-/).map((r) => r.dataset.testid);
    expect(ids()).toEqual(["request-row-r2", "request-row-r1", "request-row-r0"]);

    // A new request over the websocket goes on top.
    live.applyUpdate(update({ time: "", backends: [], events: [], totals: { requests_today: 0, rps_1m: 0 }, requests: [trace("r3", { start: "2025-03-01T12:01:00Z" })] }));
    await waitFor(() => expect(ids()[0]).toBe("request-row-r3"));

    await fireEvent.change(screen.getByTestId("filter-chain"), { target: { value: "coding" } });
    await waitFor(() => expect(ids()).toEqual(["request-row-r2"]));
    expect(f.calls.at(-1)!.url).toBe("/api/requests?limit=100&chain=coding");

    await fireEvent.change(screen.getByTestId("filter-chain"), { target: { value: "" } });
    await fireEvent.change(screen.getByTestId("filter-outcome"), { target: { value: "rate_limited" } });
    await waitFor(() => expect(ids()).toEqual(["request-row-r0"]));

    await fireEvent.change(screen.getByTestId("filter-outcome"), { target: { value: "" } });
    await fireEvent.change(screen.getByTestId("filter-backend"), { target: { value: "groq/llama" } });
    await waitFor(() => expect(ids()).toEqual(["request-row-r0"]));
  });

  it("says where the request log could not be loaded", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 500, body: { error: { message: "database is locked" } } })).fn);
    render(Requests);
    expect((await screen.findByRole("alert")).textContent).toContain("database is locked");
  });

  it("shows tokens and cost per request, marked when the tokens were estimated", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
    const paid = trace("p1", {
      start: "2025-03-01T12:00:09Z",
      backend: "openai/gpt",
      cost: 0.0042,
      usage: { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500 },
      attempts: [{ backend: "openai/gpt", class: "ok", status: 200, latency_ns: 1, prompt_tokens: 1200, completion_tokens: 300, cost: 0.0042, estimated: true }],
    });
    live.applySnapshot(snapshot({ requests: [paid, trace("r1")] }));
    render(Requests);
    expect(screen.getByTestId("request-tokens-p1").textContent).toContain("1,500 tokens");
    expect(screen.getByTestId("request-estimated-p1").textContent).toBe("estimated");
    expect(screen.getByTestId("request-cost-p1").textContent).toBe("$0.0042");
    // A free request reported by the provider: tokens, no cost, no marker.
    expect(screen.getByTestId("request-tokens-r1").textContent?.trim()).toBe("30 tokens");
    expect(screen.queryByTestId("request-estimated-r1")).toBeNull();
    expect(screen.queryByTestId("request-cost-r1")).toBeNull();
  });

  it("shows the alias that routed a request and the notes its trace carries", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
    const aliased = trace("a1", {
      start: "2025-03-01T12:00:09Z",
      model: "claude-sonnet-4-5",
      chain: "auto",
      alias: "claude-*",
      notes: ["tools dropped (no backend runs them): web_search"],
    });
    live.applySnapshot(snapshot({ requests: [aliased, trace("r1")] }));
    render(Requests);
    expect(screen.getByTestId("request-chain-a1").textContent?.replace(/\s+/g, " ").trim()).toBe("chain auto (alias claude-*)");
    expect(screen.getByTestId("request-notes-a1").textContent).toContain("tools dropped (no backend runs them): web_search");
    expect(screen.queryByTestId("request-notes-r1")).toBeNull();
  });

  it("labels backends with their dialect and shows the client's dialect in the details", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
    const mixed = trace("m1", {
      start: "2025-03-01T12:00:09Z",
      backend: "claude/haiku",
      dialect: "anthropic",
      attempts: [
        { backend: "groq/llama", dialect: "openai", class: "rate_limited", status: 429, latency_ns: 1 },
        { backend: "google/flash", dialect: "gemini", class: "soft", skipped: true, skip: "unsupported", reason: "google/flash cannot serve tools", latency_ns: 0 },
        { backend: "claude/haiku", dialect: "anthropic", class: "ok", status: 200, latency_ns: 1, prompt_tokens: 5, completion_tokens: 7 },
      ],
    });
    live.applySnapshot(snapshot({ requests: [mixed, failover] }));
    render(Requests);

    const route = screen.getByTestId("route-m1");
    const line = "groq/llama (openai): 429 → google/flash (gemini): not supported → served by claude/haiku (anthropic) in 412 ms";
    expect(route.textContent?.trim()).toBe(line);
    expect(route.dataset.route).toBe(line);
    expect([...route.querySelectorAll(".dialect")].map((e) => e.textContent)).toEqual(["(openai)", "(gemini)", "(anthropic)"]);
    // A route of OpenAI's dialect alone carries no labels.
    expect(screen.getByTestId("route-r2").querySelectorAll(".dialect")).toHaveLength(0);

    // The details are built when opened.
    const detail = screen.getByTestId("request-detail-m1") as HTMLDetailsElement;
    expect(screen.queryByTestId("request-dialect-m1")).toBeNull();
    detail.open = true;
    await fireEvent(detail, new Event("toggle"));
    await waitFor(() => expect(screen.getByTestId("request-dialect-m1").textContent).toBe("Anthropic Messages"));
    const cells = [...screen.getByTestId("request-attempts-m1").querySelectorAll("tbody tr")].map((tr) =>
      [...tr.querySelectorAll("td")].slice(0, 2).map((td) => td.textContent?.trim()),
    );
    expect(cells).toEqual([
      ["groq/llama", "OpenAI chat completions"],
      ["google/flash", "Gemini"],
      ["claude/haiku", "Anthropic Messages"],
    ]);
    expect(screen.getByTestId("request-attempts-m1").textContent).toContain("google/flash cannot serve tools");

    // A request logged before dialects were recorded says so.
    const old = screen.getByTestId("request-detail-r2") as HTMLDetailsElement;
    old.open = true;
    await fireEvent(old, new Event("toggle"));
    await waitFor(() => expect(screen.getByTestId("request-dialect-r2").textContent).toBe("not recorded"));
  });

  it("names the API each request came in on, with its dialect", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
    const requests = [
      trace("a1", { start: "2025-03-01T12:00:04Z", dialect: "anthropic", path: "/v1/messages", stream: false }),
      trace("a2", { start: "2025-03-01T12:00:03Z", dialect: "openai-responses", path: "/v1/responses" }),
      trace("a3", { start: "2025-03-01T12:00:02Z", dialect: "gemini", path: "/v1beta/models/{model}:generateContent", stream: false }),
      trace("a4", { start: "2025-03-01T12:00:01Z", dialect: "openai", path: "/v1/chat/completions" }),
      // Logged before the path was kept: the dialect tells it.
      trace("a5", { start: "2025-03-01T12:00:00Z", dialect: "anthropic", stream: false }),
    ];
    live.applySnapshot(snapshot({ requests }));
    render(Requests);

    const api = (id: string) => screen.getByTestId(`request-api-${id}`).textContent;
    expect(requests.map((t) => api(t.id))).toEqual([
      "/v1/messages · Anthropic",
      "/v1/responses · Responses, stream",
      "/v1beta/models/…:generateContent · Gemini",
      "/v1/chat/completions · OpenAI, stream",
      "/v1/messages · Anthropic",
    ]);
    expect(screen.getByTestId("request-api-a3").getAttribute("title")).toBe("/v1beta/models/{model}:generateContent");

    const detail = screen.getByTestId("request-detail-a1") as HTMLDetailsElement;
    detail.open = true;
    await fireEvent(detail, new Event("toggle"));
    await waitFor(() => expect(screen.getByTestId("request-path-a1").textContent).toBe("/v1/messages"));
    const old = screen.getByTestId("request-detail-a5") as HTMLDetailsElement;
    old.open = true;
    await fireEvent(old, new Event("toggle"));
    await waitFor(() => expect(screen.getByTestId("request-path-a5").textContent).toBe("not recorded"));
  });

  it("opens a request's routing decision from the server", async () => {
    const withDecision = {
      ...failover,
      decision: {
        requested: "coding",
        chain: "coding",
        gear: "auto",
        strategy: "round_robin",
        task: "background",
        task_rule: "model matches *haiku*",
        candidates: [
          { backend: "A", tier: 0, rank: 1, verdict: "ordered", reason: "round robin: this request's turn order" },
          { backend: "B", tier: 0, rank: 2, verdict: "skipped", reason: "breaker open", skip: "open" },
        ],
      },
    };
    const f = fakeFetch((_m, url) => ({ body: url.startsWith("/api/requests/r2") ? withDecision : [] }));
    vi.stubGlobal("fetch", f.fn);
    render(Requests);
    const detail = screen.getByTestId("request-detail-r2") as HTMLDetailsElement;
    detail.open = true;
    await fireEvent(detail, new Event("toggle"));
    await waitFor(() => expect(screen.getByTestId("decision-r2-strategy").textContent).toBe("round_robin"));
    expect(f.calls.some((c) => c.url === "/api/requests/r2")).toBe(true);
    expect(screen.getByTestId("decision-r2-requested").textContent).toBe("coding");
    expect(screen.getByTestId("decision-r2-chain").textContent).toBe("coding");
    expect(screen.getByTestId("decision-r2-gear").textContent).toBe("auto");
    expect(screen.getByTestId("decision-r2-task").textContent).toContain("model matches *haiku*");
    expect(screen.getByTestId("decision-r2-row-B").textContent).toContain("breaker open");
  });

  describe("caching", () => {
    // A response-cache hit: no attempt, no backend, saved what the answer first cost.
    const hit = trace("h1", {
      start: "2025-03-01T12:00:20Z",
      backend: undefined,
      latency_ns: 1_000_000,
      attempts: [],
      cache: "hit",
      saved: 0.0042,
      session: "0123456789abcdef",
      usage: { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500, cache_read_tokens: 900 },
      notes: ["answered from the response cache; made by openai/gpt 12s ago"],
    });
    // A call whose provider read most of the prompt from its prompt cache.
    const warm = trace("w1", {
      start: "2025-03-01T12:00:10Z",
      backend: "anthropic/claude",
      cache: "miss",
      cost: 0.01,
      saved: 0.0203,
      session: "0123456789abcdef",
      usage: { prompt_tokens: 10000, completion_tokens: 100, total_tokens: 10100, cache_read_tokens: 7500, cache_write_tokens: 500 },
      attempts: [{ backend: "anthropic/claude", class: "ok", status: 200, latency_ns: 1, prompt_tokens: 10000, completion_tokens: 100, cost: 0.01, saved: 0.0203 }],
    });
    const refreshed = trace("f1", { start: "2025-03-01T12:00:08Z", cache: "refresh", session: "fedcba9876543210" });
    const bypassed = trace("b1", { start: "2025-03-01T12:00:07Z", cache: "bypass" });

    afterEach(() => {
      location.hash = "";
    });

    it("marks a response-cache hit as served by no backend, with what it saved", async () => {
      vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
      live.applySnapshot(snapshot({ requests: [hit, warm, refreshed, bypassed, trace("r1")] }));
      render(Requests);
      expect(screen.getByTestId("route-h1").textContent?.trim()).toBe("cache hit — no backend called in 1 ms");
      expect(screen.getByTestId("route-h1").textContent).not.toContain("served by");
      expect(screen.getByTestId("request-cache-h1").textContent).toBe("cache hit");
      expect(screen.getByTestId("request-saved-h1").textContent).toBe("saved $0.0042");
      // The hit's token counts are the first call's: no prompt-cache share is claimed for it.
      expect(screen.queryByTestId("request-cached-h1")).toBeNull();
      expect(screen.getByTestId("request-cache-f1").textContent).toBe("cache refreshed");
      expect(screen.getByTestId("request-cache-b1").textContent).toBe("cache bypassed");
      // A miss is the ordinary case: no badge; nor for a request the cache was not asked about.
      expect(screen.queryByTestId("request-cache-w1")).toBeNull();
      expect(screen.queryByTestId("request-cache-r1")).toBeNull();
      expect(screen.queryByTestId("request-saved-r1")).toBeNull();
    });

    it("shows cached prompt tokens as a share of the prompt and the money they saved", async () => {
      vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
      live.applySnapshot(snapshot({ requests: [warm, trace("r1")] }));
      render(Requests);
      expect(screen.getByTestId("request-cached-w1").textContent).toBe("7,500 cached (75%)");
      expect(screen.getByTestId("request-saved-w1").textContent).toBe("saved $0.0203");
      expect(screen.getByTestId("route-w1").textContent?.trim()).toBe("served by anthropic/claude in 412 ms");
      expect(screen.queryByTestId("request-cached-r1")).toBeNull();
    });

    it("shows the caches and the session in the details, and filters by the session", async () => {
      const f = fakeFetch((_m, url) => ({ body: url.startsWith("/api/requests/") ? { ...warm, decision: null } : [] }));
      vi.stubGlobal("fetch", f.fn);
      live.applySnapshot(snapshot({ requests: [hit, warm, refreshed, trace("r1")] }));
      render(Requests);
      const detail = screen.getByTestId("request-detail-w1") as HTMLDetailsElement;
      detail.open = true;
      await fireEvent(detail, new Event("toggle"));
      await waitFor(() => expect(screen.getByTestId("request-session-w1")).toBeTruthy());
      expect(screen.getByTestId("request-cache-detail-w1").textContent).toContain("miss");
      expect(screen.getByTestId("request-prompt-cache-w1").textContent).toBe("7,500 read, 500 written of 10,000 prompt tokens");
      expect(screen.getByTestId("request-saved-detail-w1").textContent).toContain("$0.0203");
      const sess = screen.getByTestId("request-session-w1");
      expect(sess.textContent).toContain("0123456789abcdef");
      expect(sess.querySelector("a")?.getAttribute("href")).toBe("#/caching");

      const ids = () => screen.getAllByTestId(/^request-row-/).map((r) => r.dataset.testid);
      expect(ids()).toEqual(["request-row-h1", "request-row-w1", "request-row-f1", "request-row-r1"]);
      await fireEvent.click(within(sess).getByRole("button", { name: "Show its requests" }));
      await waitFor(() => expect(ids()).toEqual(["request-row-h1", "request-row-w1"]));
      expect(screen.getByTestId("filter-session").textContent).toContain("0123456789abcdef");
      // The server is asked for more of its log, which has no session filter.
      await waitFor(() => expect(f.calls.at(-1)!.url).toBe("/api/requests?limit=1000"));
      await fireEvent.click(screen.getByRole("button", { name: "Clear filters" }));
      await waitFor(() => expect(ids()).toHaveLength(4));
      expect(screen.queryByTestId("filter-session")).toBeNull();
    });

    it("opens on a session's requests from the Caching screen's link", async () => {
      vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
      location.hash = "#/requests?session=fedcba9876543210";
      live.applySnapshot(snapshot({ requests: [hit, warm, refreshed, trace("r1")] }));
      render(Requests);
      const ids = () => screen.getAllByTestId(/^request-row-/).map((r) => r.dataset.testid);
      expect(ids()).toEqual(["request-row-f1"]);
      expect(screen.getByTestId("filter-session").textContent).toContain("fedcba9876543210");
    });
  });
});
