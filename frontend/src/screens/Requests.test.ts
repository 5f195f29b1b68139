import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import { hashOfView, queryOf, viewFromHash } from "../lib/reqlog";
import { fakeFetch, snapshot, team, trace, update } from "../test/fixtures";
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

beforeEach(() => {
  location.hash = "#/requests";
  live.applySnapshot(snapshot({ requests: [failover, trace("r1")] }));
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  location.hash = "";
});

const ids = () => screen.queryAllByTestId(/^request-row-/).map((r) => r.dataset.testid);
const lastList = (f: { calls: { url: string }[] }) => f.calls.filter((c) => !/^\/api\/requests\/[^?]/.test(c.url)).at(-1)!.url;

/** Opens a request's details as a click on its line does. */
async function openDetails(id: string) {
  await fireEvent.click(screen.getByTestId(`request-open-${id}`));
  return screen.findByTestId(`request-detail-${id}`);
}

describe("Requests", () => {
  it("shows which instance served each request only in a team", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
    render(Requests);
    await waitFor(() => expect(ids()).toEqual(["request-row-r2", "request-row-r1"]));
    expect(screen.queryByTestId("instance-column")).toBeNull();
    expect(screen.queryByTestId("request-instance-r1")).toBeNull();
    cleanup();

    live.applySnapshot(snapshot({ team: team(), requests: [trace("r1", { instance: "office-2" })] }));
    render(Requests);
    await waitFor(() => expect(screen.getByTestId("request-instance-r1").textContent).toBe("office-2"));
    expect(screen.getByTestId("instance-column").textContent).toBe("Instance");
  });

  it("filters by the instance that served, in a team only, and keeps the filter in the link", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
    render(Requests);
    await waitFor(() => expect(ids()).toEqual(["request-row-r2", "request-row-r1"]));
    expect(screen.queryByTestId("filter-instance")).toBeNull();
    cleanup();

    // office-3 stopped: it is not among the live instances, but its rows are in the log.
    const gone = trace("r3", { instance: "office-3", start: "2025-03-01T11:59:00Z" });
    const f = fakeFetch((_m, url) => ({ body: url.includes("instance=office-2") ? [] : [gone] }));
    vi.stubGlobal("fetch", f.fn);
    live.applySnapshot(snapshot({ team: team(), requests: [trace("r1", { instance: "office-2" }), trace("r4", { instance: "office-1" })] }));
    render(Requests);
    const pick = (await screen.findByTestId("filter-instance")) as HTMLSelectElement;
    await waitFor(() => expect([...pick.options].map((o) => o.value)).toEqual(["", "office-1", "office-2", "office-3"]));
    await fireEvent.change(pick, { target: { value: "office-2" } });
    await waitFor(() => expect(lastList(f)).toBe("/api/requests?limit=100&instance=office-2"));
    // The live tail keeps only office-2's request.
    await waitFor(() => expect(ids()).toEqual(["request-row-r1"]));
    expect(location.hash).toBe("#/requests?instance=office-2");
    expect(viewFromHash(location.hash).instance).toBe("office-2");
    expect(queryOf(viewFromHash("#/requests?instance=office-3"), 0, 50)).toEqual({ limit: "50", instance: "office-3" });
  });

  it("lists one line per request, merges the log and the live tail, and asks the server for each filter", async () => {
    const older = trace("r0", {
      start: "2025-03-01T11:00:00Z",
      class: "rate_limited",
      status: 429,
      backend: undefined,
      attempts: [{ backend: "groq/llama", class: "rate_limited", status: 429, latency_ns: 1 }],
    });
    const f = fakeFetch((_m, url) => ({ body: url.includes("class=rate_limited") || url === "/api/requests?limit=100" ? [older] : [] }));
    vi.stubGlobal("fetch", f.fn);
    render(Requests);

    await waitFor(() => expect(ids()).toEqual(["request-row-r2", "request-row-r1", "request-row-r0"]));
    expect(f.calls[0].url).toBe("/api/requests?limit=100");
    expect(screen.getByTestId("route-r2").textContent?.trim()).toBe("A: 429 → B: open → served by C in 412 ms");
    // Each line is one row of the table with the columns of the log.
    const cells = [...screen.getByTestId("request-row-r2").querySelectorAll("td")].map((td) => td.textContent?.trim());
    expect(cells.length).toBe(11);
    expect(cells[4]).toBe("2"); // two backends called, one skipped
    expect(cells[5]).toBe("200");
    expect(cells[6]).toBe("412 ms");

    // A new request over the websocket goes on top.
    live.applyUpdate(update({ time: "", backends: [], events: [], totals: { requests_today: 0, rps_1m: 0 }, requests: [trace("r3", { start: "2025-03-01T12:01:00Z" })] }));
    await waitFor(() => expect(ids()[0]).toBe("request-row-r3"));

    await fireEvent.change(screen.getByTestId("filter-chain"), { target: { value: "coding" } });
    await waitFor(() => expect(lastList(f)).toBe("/api/requests?limit=100&chain=coding"));
    // The server answered none; the live tail's match is kept.
    await waitFor(() => expect(ids()).toEqual(["request-row-r2"]));

    await fireEvent.change(screen.getByTestId("filter-chain"), { target: { value: "" } });
    await fireEvent.change(screen.getByTestId("filter-outcome"), { target: { value: "rate_limited" } });
    await waitFor(() => expect(ids()).toEqual(["request-row-r0"]));
    expect(lastList(f)).toBe("/api/requests?limit=100&class=rate_limited");
    expect(location.hash).toBe("#/requests?class=rate_limited");
  });

  it("sorts by a column on the server, toggles the direction and keeps it in the URL", async () => {
    const f = fakeFetch((_m, url) => ({ body: url.includes("sort=") ? [failover] : [] }));
    vi.stubGlobal("fetch", f.fn);
    render(Requests);
    await fireEvent.click(screen.getByTestId("sort-latency"));
    await waitFor(() => expect(lastList(f)).toBe("/api/requests?limit=100&sort=latency"));
    expect(location.hash).toBe("#/requests?sort=latency");
    expect(screen.getByTestId("sort-latency").closest("th")?.getAttribute("aria-sort")).toBe("descending");
    await fireEvent.click(screen.getByTestId("sort-latency"));
    await waitFor(() => expect(lastList(f)).toBe("/api/requests?limit=100&sort=latency&order=asc"));
    expect(location.hash).toBe("#/requests?sort=latency&order=asc");
    // A sorted view is the server's alone: live requests do not join it.
    await waitFor(() => expect(ids()).toEqual(["request-row-r2"]));
  });

  it("searches the log and pages through it with the server's cursor", async () => {
    const page1 = Array.from({ length: 3 }, (_, i) => trace(`p${i}`, { start: `2025-03-01T11:00:0${9 - i}Z` }));
    const page2 = [trace("p3", { start: "2025-03-01T10:00:00Z" })];
    const f = fakeFetch((_m, url) =>
      url.includes("cursor=c2") ? { body: page2 } : url.includes("q=") ? { body: page1, headers: { "X-FreeLane-Next-Cursor": "c2" } } : { body: [] },
    );
    vi.stubGlobal("fetch", f.fn);
    render(Requests);
    await fireEvent.input(screen.getByTestId("request-search"), { target: { value: "req_0190" } });
    await fireEvent.keyDown(screen.getByTestId("request-search"), { key: "Enter" });
    await waitFor(() => expect(lastList(f)).toBe("/api/requests?limit=100&q=req_0190"));
    expect(location.hash).toBe("#/requests?q=req_0190");
    // A search's first page is the server's: the live tail's requests do not match it.
    await waitFor(() => expect(ids()).toEqual(["request-row-p0", "request-row-p1", "request-row-p2"]));
    expect((screen.getByTestId("page-newer") as HTMLButtonElement).disabled).toBe(true);
    await fireEvent.click(screen.getByTestId("page-older"));
    await waitFor(() => expect(ids()).toEqual(["request-row-p3"]));
    expect(lastList(f)).toBe("/api/requests?limit=100&q=req_0190&cursor=c2");
    expect((screen.getByTestId("page-older") as HTMLButtonElement).disabled).toBe(true);
    await fireEvent.click(screen.getByTestId("page-newer"));
    await waitFor(() => expect(ids()).toEqual(["request-row-p0", "request-row-p1", "request-row-p2"]));
  });

  it("opens with the view a link names", async () => {
    location.hash = "#/requests?q=slow&status=5xx&stream=true&sort=ttft&range=1h";
    const f = fakeFetch(() => ({ body: [] }));
    vi.stubGlobal("fetch", f.fn);
    render(Requests);
    await waitFor(() => expect(f.calls.length).toBeGreaterThan(0));
    const url = new URL(f.calls[0].url, "http://x");
    expect(url.searchParams.get("q")).toBe("slow");
    expect(url.searchParams.get("status")).toBe("5xx");
    expect(url.searchParams.get("stream")).toBe("true");
    expect(url.searchParams.get("sort")).toBe("ttft");
    expect(Date.now() - Date.parse(url.searchParams.get("from")!)).toBeGreaterThanOrEqual(3_600_000);
    expect((screen.getByTestId("request-search") as HTMLInputElement).value).toBe("slow");
    expect((screen.getByTestId("filter-status") as HTMLSelectElement).value).toBe("5xx");
  });

  it("opens the details of a request a link names, even one not on the page", async () => {
    location.hash = "#/requests?open=far";
    const far = trace("far", { start: "2025-02-01T08:00:00Z", model: "old-model", error: "it failed long ago", class: "transient", status: 502 });
    const f = fakeFetch((_m, url) => ({ body: url.startsWith("/api/requests/far") ? { ...far, body_logging: true } : [] }));
    vi.stubGlobal("fetch", f.fn);
    render(Requests);
    const drawer = await screen.findByTestId("request-detail-far");
    await waitFor(() => expect(drawer.textContent).toContain("it failed long ago"));
    expect(screen.getByTestId("request-bodies-none-far").textContent).toContain("Body logging is on");
    expect(drawer.textContent).not.toContain("Invalid");
  });

  it("reads and writes views without keeping values it does not know", () => {
    const v = viewFromHash("#/requests?sort=speed&status=9xx&cache=hit&session=ZZ&q=a%26b&open=r1");
    expect(v.sort).toBe("time");
    expect(v.status).toBe("");
    expect(v.cache).toBe("hit");
    expect(v.session).toBe("");
    expect(v.q).toBe("a&b");
    expect(hashOfView(v)).toBe("#/requests?q=a%26b&cache=hit&open=r1");
    expect(queryOf(v, 0, 50)).toEqual({ limit: "50", q: "a&b", cache: "hit" });
  });

  it("says where the request log could not be loaded", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 500, body: { error: { message: "the request log could not be read" } } })).fn);
    render(Requests);
    expect((await screen.findByRole("alert")).textContent).toContain("the request log could not be read");
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
    expect(screen.getByTestId("request-tokens-p1").textContent).toBe("1,500~");
    expect(screen.getByTestId("request-estimated-p1").getAttribute("title")).toContain("own tokenizer");
    expect(screen.getByTestId("request-cost-p1").textContent).toBe("$0.0042");
    expect(screen.getByTestId("request-tokens-r1").textContent?.trim()).toBe("30");
    expect(screen.queryByTestId("request-estimated-r1")).toBeNull();
    expect(screen.queryByTestId("request-cost-r1")).toBeNull();
  });

  it("shows the alias that routed a request, and its notes in the details", async () => {
    vi.stubGlobal("fetch", fakeFetch((_m, url) => ({ status: url.startsWith("/api/requests/") ? 404 : 200, body: url.startsWith("/api/requests/") ? { error: { message: "gone" } } : [] })).fn);
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
    await openDetails("a1");
    expect(screen.getByTestId("request-notes-a1").textContent).toContain("tools dropped (no backend runs them): web_search");
  });

  it("names the API each request came in on, and the drawer the client's dialect and each attempt's", async () => {
    vi.stubGlobal("fetch", fakeFetch((_m, url) => ({ body: url.startsWith("/api/requests/m1") ? { ...mixed, decision: null, body_logging: false } : [] })).fn);
    const mixed = trace("m1", {
      start: "2025-03-01T12:00:09Z",
      backend: "claude/haiku",
      dialect: "anthropic",
      path: "/v1/messages",
      stream: false,
      attempts: [
        { backend: "groq/llama", dialect: "openai", class: "rate_limited", status: 429, latency_ns: 1 },
        { backend: "google/flash", dialect: "gemini", class: "soft", skipped: true, skip: "unsupported", reason: "google/flash cannot serve tools", latency_ns: 0 },
        { backend: "claude/haiku", dialect: "anthropic", class: "ok", status: 200, latency_ns: 1, prompt_tokens: 5, completion_tokens: 7 },
      ],
    });
    live.applySnapshot(snapshot({ requests: [mixed, trace("a4", { dialect: "openai", path: "/v1/chat/completions" })] }));
    render(Requests);
    expect(screen.getByTestId("request-api-m1").textContent).toBe("/v1/messages · Anthropic");
    expect(screen.getByTestId("request-api-a4").textContent).toBe("/v1/chat/completions · OpenAI, stream");
    const route = screen.getByTestId("route-m1");
    const line = "groq/llama (openai): 429 → google/flash (gemini): not supported → served by claude/haiku (anthropic) in 412 ms";
    expect(route.textContent?.trim()).toBe(line);
    expect(route.dataset.route).toBe(line);

    expect(screen.queryByTestId("request-dialect-m1")).toBeNull();
    await openDetails("m1");
    expect(screen.getByTestId("request-dialect-m1").textContent).toBe("Anthropic Messages");
    expect(screen.getByTestId("request-path-m1").textContent).toBe("/v1/messages");
    const rows = [...screen.getByTestId("request-attempts-m1").querySelectorAll("tbody tr")].map((tr) =>
      [...tr.querySelectorAll("td")].slice(0, 2).map((td) => td.textContent?.trim()),
    );
    expect(rows).toEqual([
      ["groq/llama", "OpenAI chat completions"],
      ["google/flash", "Gemini"],
      ["claude/haiku", "Anthropic Messages"],
    ]);
    await waitFor(() => expect(screen.getByTestId("request-bodies-off-m1").textContent).toContain("request_log: {bodies: true}"));
    expect(location.hash).toBe("#/requests?open=m1");
    await fireEvent.click(screen.getByTestId("drawer-close"));
    expect(screen.queryByTestId("request-detail-m1")).toBeNull();
  });

  it("opens a request's routing decision and its bodies from the server", async () => {
    const withDecision = {
      ...failover,
      body_logging: true,
      bodies: { request: '{"messages":[{"role":"user","content":"hi [redacted key]"}]}', answer: '{"choices":[{"message":{"content":"hello"}}]}' },
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
    await openDetails("r2");
    await waitFor(() => expect(screen.getByTestId("decision-r2-strategy").textContent).toBe("round_robin"));
    expect(f.calls.some((c) => c.url === "/api/requests/r2")).toBe(true);
    expect(screen.getByTestId("decision-r2-gear").textContent).toBe("auto");
    expect(screen.getByTestId("decision-r2-row-B").textContent).toContain("breaker open");
    expect(screen.getByTestId("request-body-request-r2").textContent).toContain("hi [redacted key]");
    expect(screen.getByTestId("request-body-answer-r2").textContent).toContain("hello");
  });

  describe("caching", () => {
    const hit = trace("h1", {
      start: "2025-03-01T12:00:20Z",
      backend: undefined,
      latency_ns: 1_000_000,
      attempts: [],
      cache: "hit",
      saved: 0.0042,
      session: "0123456789abcdef",
      usage: { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500, cache_read_tokens: 900 },
    });
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

    it("marks a response-cache hit as served by no backend, with what it saved", async () => {
      vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
      live.applySnapshot(snapshot({ requests: [hit, warm, refreshed, bypassed, trace("r1")] }));
      render(Requests);
      expect(screen.getByTestId("route-h1").textContent?.trim()).toBe("cache hit — no backend called in 1 ms");
      expect(screen.getByTestId("request-cache-h1").textContent).toBe("cache hit");
      expect(screen.getByTestId("request-saved-h1").textContent).toBe("saved $0.0042");
      expect(screen.queryByTestId("request-cached-h1")).toBeNull();
      expect(screen.getByTestId("request-cache-f1").textContent).toBe("cache refreshed");
      expect(screen.getByTestId("request-cache-b1").textContent).toBe("cache bypassed");
      expect(screen.queryByTestId("request-cache-w1")).toBeNull();
      expect(screen.getByTestId("request-cached-w1").textContent).toBe("7,500 cached (75%)");
      expect(screen.getByTestId("request-saved-w1").textContent).toBe("saved $0.0203");
    });

    it("shows the caches and the session in the details, and asks the server for the session's requests", async () => {
      const f = fakeFetch((_m, url) => ({ body: url.startsWith("/api/requests/w1") ? { ...warm, decision: null, body_logging: false } : [] }));
      vi.stubGlobal("fetch", f.fn);
      live.applySnapshot(snapshot({ requests: [hit, warm, refreshed, trace("r1")] }));
      render(Requests);
      await openDetails("w1");
      const sess = screen.getByTestId("request-session-w1");
      expect(screen.getByTestId("request-cache-detail-w1").textContent).toContain("miss");
      expect(screen.getByTestId("request-prompt-cache-w1").textContent).toBe("7,500 read, 500 written of 10,000 prompt tokens");
      expect(screen.getByTestId("request-saved-detail-w1").textContent).toContain("$0.0203");
      expect(sess.textContent).toContain("0123456789abcdef");
      expect(sess.querySelector("a")?.getAttribute("href")).toBe("#/caching");

      expect(ids()).toEqual(["request-row-h1", "request-row-w1", "request-row-f1", "request-row-r1"]);
      await fireEvent.click(within(sess).getByRole("button", { name: "Show its requests" }));
      await waitFor(() => expect(ids()).toEqual(["request-row-h1", "request-row-w1"]));
      expect(screen.getByTestId("filter-session").textContent).toContain("0123456789abcdef");
      await waitFor(() => expect(lastList(f)).toBe("/api/requests?limit=100&session=0123456789abcdef"));
      await fireEvent.click(screen.getByTestId("filter-clear"));
      await waitFor(() => expect(ids()).toHaveLength(4));
      expect(screen.queryByTestId("filter-session")).toBeNull();
    });

    it("opens on a session's requests from the Caching screen's link", async () => {
      const f = fakeFetch(() => ({ body: [] }));
      vi.stubGlobal("fetch", f.fn);
      location.hash = "#/requests?session=fedcba9876543210";
      live.applySnapshot(snapshot({ requests: [hit, warm, refreshed, trace("r1")] }));
      render(Requests);
      expect(ids()).toEqual(["request-row-f1"]);
      expect(screen.getByTestId("filter-session").textContent).toContain("fedcba9876543210");
      await waitFor(() => expect(f.calls[0].url).toBe("/api/requests?limit=100&session=fedcba9876543210"));
    });
  });
});
