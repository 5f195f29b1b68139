import { cleanup, fireEvent, render, screen, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { live } from "../lib/live.svelte";
import { nav, ui } from "../lib/nav.svelte";
import { backend, metricWindow, provider, snapshot, update } from "../test/fixtures";
import Overview from "./Overview.svelte";

beforeEach(() => {
  live.snapshot = null;
  live.history = [];
  ui.window = "1m";
});
afterEach(() => cleanup());

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
});
