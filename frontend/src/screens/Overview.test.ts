import { cleanup, fireEvent, render, screen, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import { nav, ui } from "../lib/nav.svelte";
import { backend, fakeFetch, metricWindow, provider, snapshot, update } from "../test/fixtures";
import type { SeriesView } from "../lib/wire.gen";
import Overview from "./Overview.svelte";

beforeEach(() => {
  // The charts ask for their history; tests that do not look at it answer
  // that there is none.
  vi.stubGlobal("fetch", fakeFetch(() => ({ status: 404, body: { error: { message: "no history here" } } })).fn);
  live.snapshot = null;
  live.history = [];
  ui.window = "1m";
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

/** A series answer for a window: every bucket from the window's start to now, one with requests. */
function seriesAnswer(url: string, requests: number): SeriesView {
  const q = new URL(url, "http://x").searchParams;
  const w = q.get("window") ?? "1h";
  const span = { "1m": 60, "5m": 300, "1h": 3600, "24h": 86400, "7d": 604800 }[w] ?? 3600;
  const res = span <= 3600 ? 10 : span <= 86400 ? 60 : 3600;
  const to = 1_800_000_000;
  const last = to - (to % res);
  const n = span / res;
  const buckets = Array.from({ length: n }, (_, i) => ({
    start: last - (n - 1 - i) * res,
    requests: i === n - 2 ? requests : 0,
    failures: 0,
    errors: { rate_limited: 0, transient: 0, soft: 0, credential: 0, gone: 0, too_long: 0, caller: 0, cancelled: 0, quota: 0, other: 0 },
    quota_skips: 0,
    latency_ms: i === n - 2 ? { p50: 120, p95: 300, p99: 400 } : { p50: 0, p95: 0, p99: 0 },
    ttft_ms: { p50: 0, p95: 0, p99: 0 },
    prompt_tokens: 0,
    completion_tokens: 0,
    estimated_tokens: 0,
    cost: 0,
  }));
  return { window: w, resolution_s: res, from: to - span, to, backend: q.get("backend") ?? undefined, buckets };
}

describe("Overview", () => {
  it("renders one row per backend with its status and numbers", async () => {
    const snap = snapshot();
    snap.backends[1] = { ...snap.backends[1], today: { calls: 1520, failures: 3 } };
    live.applySnapshot(snap);
    render(Overview);

    const rows = screen.getAllByTestId(/^backend-row-/);
    expect(rows.map((r) => r.dataset.testid)).toEqual([
      "backend-row-groq/llama",
      "backend-row-cerebras/qwen",
      "backend-row-ollama/qwen-coder",
    ]);

    const groq = screen.getByTestId("backend-row-groq/llama");
    expect(within(groq).getByTestId("status-groq/llama").textContent).toContain("Cooling down");
    expect(groq.textContent).toContain("HTTP 429");
    expect(within(screen.getByTestId("backend-row-ollama/qwen-coder")).getByTestId("status-ollama/qwen-coder").textContent).toContain("Open");

    const cell = (row: HTMLElement, col: string) => row.querySelector(`[data-col="${col}"]`)?.textContent?.trim();
    expect(cell(groq, "p50")).toBe("412 ms");
    expect(cell(groq, "p95")).toBe("980 ms");
    expect(cell(groq, "p99")).toBe("1.53 s");
    expect(cell(groq, "ttft-p50")).toBe("180 ms");
    expect(cell(groq, "ttft-p95")).toBe("420 ms");
    expect(cell(groq, "success")).toBe("97.5%");
    expect(cell(groq, "rpm")).toBe("120");
    expect(cell(screen.getByTestId("backend-row-cerebras/qwen"), "today")).toBe("1,520");
    expect(screen.getByTestId("backend-row-cerebras/qwen").querySelector('[data-col="today"]')?.getAttribute("title")).toBe("1,520 calls today, 3 failed");

    // The window picker switches every row to that window's numbers.
    await fireEvent.click(screen.getByRole("radio", { name: "5 min" }));
    expect(cell(screen.getByTestId("backend-row-groq/llama"), "rpm")).toBe("90");

    expect(screen.getByTestId("requests-today").textContent).toBe("1,234");
    expect(screen.getByTestId("serving-count").textContent).toBe("1 of 3");
    // Alerts list warn and alert events, not info.
    const alerts = screen.getByTestId("alerts");
    expect(alerts.textContent).toContain("groq/llama — rate limited: HTTP 429.");
    expect(alerts.textContent).not.toContain("back in service");

    // Quotas and spend sit below the table.
    expect(screen.getByTestId("quota-bar-groq/llama").textContent).toContain("Daily tokens 312k / 500k");
    expect(screen.getByTestId("spend-today-amount").textContent).toBe("$0.42");
  });

  it("follows live updates", async () => {
    live.applySnapshot(snapshot());
    render(Overview);
    live.applyUpdate(
      update({
        time: new Date().toISOString(),
        backends: [backend("cerebras/qwen", { windows: { "1m": metricWindow({ latency_ms: { p50: 95, p95: 200, p99: 300 } }), "5m": metricWindow(), "1h": metricWindow() } })],
        requests: [],
        events: [],
        totals: { requests_today: 1300, rps_1m: 5 },
      }),
    );
    await Promise.resolve();
    const row = screen.getByTestId("backend-row-cerebras/qwen");
    expect(row.querySelector('[data-col="p50"]')?.textContent?.trim()).toBe("95 ms");
    expect(screen.getByTestId("requests-today").textContent).toBe("1,300");
  });

  it("says what to do when no backend has a key, and leads to Setup", async () => {
    live.applySnapshot(
      snapshot({
        backends: [backend("groq/llama", { status: "no_key" })],
        missing_keys: ["set GROQ_API_KEY or add a key for groq in the dashboard"],
      }),
    );
    render(Overview);
    const empty = screen.getByTestId("empty-overview");
    expect(within(empty).getByRole("heading", { name: "Add your first key" })).toBeTruthy();
    expect(empty.textContent).toContain("set GROQ_API_KEY");
    await fireEvent.click(within(empty).getByRole("button", { name: "Go to Setup" }));
    expect(nav.screen).toBe("setup");
  });

  it("says when paid models have no price, with a link to set them", () => {
    live.applySnapshot(snapshot());
    render(Overview);
    expect(screen.queryByTestId("unpriced-notice")).toBeNull();
    cleanup();

    const one = snapshot();
    one.providers = [...one.providers, provider("openai", {
        tier: "own",
        models: [
          { id: "gpt-5", params_b: 0, context: 400000, max_output: 0, price: { input: 1.25, output: 10, cache_read: 0.125, cache_write: 0 } },
          { id: "gpt-5-new", params_b: 0, context: 400000, max_output: 0, unpriced: true },
        ],
      })];
    live.applySnapshot(one);
    render(Overview);
    let notice = screen.getByTestId("unpriced-notice");
    expect(notice.textContent?.replace(/\s+/g, " ")).toContain("The paid model openai/gpt-5-new has no price, so budgets refuse it.");
    expect(within(notice).getByRole("link").getAttribute("href")).toBe("#/budgets?provider=openai&model=gpt-5-new");
    cleanup();

    const two = snapshot();
    two.providers = [...two.providers, provider("anthropic", { tier: "own", models: [{ id: "claude", params_b: 0, context: 0, max_output: 0, unpriced: true }] }), provider("openai", {
        tier: "own",
        models: [
          { id: "gpt-5", params_b: 0, context: 400000, max_output: 0, price: { input: 1.25, output: 10, cache_read: 0.125, cache_write: 0 } },
          { id: "gpt-5-new", params_b: 0, context: 400000, max_output: 0, unpriced: true },
        ],
      })];
    live.applySnapshot(two);
    render(Overview);
    notice = screen.getByTestId("unpriced-notice");
    expect(notice.textContent?.replace(/\s+/g, " ")).toContain("2 paid models have no price, so budgets refuse them.");
    expect(within(notice).getByRole("link").getAttribute("href")).toBe("#/budgets");
  });

  it("charts the server's series of the span picked, and fetches it again as requests come in", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2026-11-30T12:00:00Z"));
    localStorage.removeItem("freelane.chartSpan");
    let requests = 3;
    const f = fakeFetch((_m, url) => ({ body: seriesAnswer(url, requests) }));
    vi.stubGlobal("fetch", f.fn);
    live.applySnapshot(snapshot());
    render(Overview);

    const throughput = screen.getByTestId("chart-throughput");
    await vi.waitFor(() => expect(throughput.dataset.buckets).toBe("360"));
    const series = f.calls.map((c) => c.url).filter((u) => u.startsWith("/api/series"));
    expect(series).toContain("/api/series?window=1h");
    expect(series.some((u) => u.startsWith("/api/series?window=1h&backend="))).toBe(true);
    // The axis spans the window the server answered, an hour, and the one
    // busy bucket is the only point off zero: 3 requests in 10 s is 18 a minute.
    expect(Number(throughput.dataset.to) - Number(throughput.dataset.from)).toBe(3600);
    expect(throughput.dataset.resolution).toBe("10");
    expect(JSON.parse(throughput.dataset.points ?? "[]")).toEqual([[1_800_000_000 - 10, 18]]);
    expect(screen.getByTestId("chart-latency").textContent).toContain("last 1 hour");

    // Each span shows that span, and is remembered for the next visit.
    for (const [w, span, buckets] of [["7d", 604800, "168"], ["24h", 86400, "1440"], ["1m", 60, "6"]] as const) {
      await fireEvent.click(screen.getByTestId(`chart-span-${w}`));
      await vi.waitFor(() => expect(throughput.dataset.buckets).toBe(buckets));
      expect(Number(throughput.dataset.to) - Number(throughput.dataset.from)).toBe(span);
      expect(localStorage.getItem("freelane.chartSpan")).toBe(w);
    }

    // A finished request (the websocket's totals move) fetches the window
    // again once the least wait has passed.
    const before = f.calls.length;
    requests = 5;
    vi.setSystemTime(new Date("2026-11-30T12:00:03Z"));
    live.applyUpdate(update({ time: new Date().toISOString(), backends: [], requests: [], events: [], totals: { requests_today: 1235, rps_1m: 1 } }));
    live.now = Date.now();
    await vi.waitFor(() => expect(f.calls.length).toBeGreaterThan(before));
    await vi.waitFor(() => expect(JSON.parse(throughput.dataset.points ?? "[]")).toEqual([[1_800_000_000 - 10, 30]]));
  });
});
