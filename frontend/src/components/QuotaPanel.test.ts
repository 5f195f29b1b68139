import { cleanup, render, screen, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { live } from "../lib/live.svelte";
import { budget, limitUse, NOW, quota, snapshot, update } from "../test/fixtures";
import QuotaPanel from "./QuotaPanel.svelte";

const MIN = 60_000;
const HOUR = 60 * MIN;
const at = (ms: number) => new Date(NOW + ms).toISOString();

beforeEach(() => {
  live.snapshot = null;
  live.now = NOW;
});
afterEach(() => cleanup());

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("QuotaPanel", () => {
  it("draws a bar per limit with its figures, level and countdown", () => {
    live.applySnapshot(snapshot());
    render(QuotaPanel);

    const groq = screen.getByTestId("quota-bar-groq/llama");
    const tpd = within(groq).getByTestId("quota-limit-groq/llama-tpd");
    expect(tpd.textContent).toContain("Daily tokens 312k / 500k");
    expect(tpd.dataset.level).toBe("ok");
    expect(within(tpd).getByRole("progressbar").getAttribute("aria-valuenow")).toBe("62");
    // The headline countdown is that of the most used limit that resets:
    // daily tokens at 62 %, ahead of requests per minute at 10 %.
    expect(screen.getByTestId("quota-reset-groq/llama").textContent?.trim()).toBe("Daily tokens: resets in 3 h 12 min");
    // The minute window resets at another time, shown on its own row.
    expect(screen.getByTestId("quota-reset-groq/llama-rpm").textContent).toBe("resets in 40 s");
    expect(groq.textContent).toContain("free");

    // 850 of 1000: amber, and learned from headers.
    const cerebras = screen.getByTestId("quota-bar-cerebras/qwen");
    expect(cerebras.dataset.level).toBe("warn");
    expect(within(cerebras).getByTestId("quota-limit-cerebras/qwen-rpd").dataset.level).toBe("warn");
    expect(cerebras.textContent).toContain("from provider headers");
    expect(cerebras.textContent).toContain("$0.15 / $0.6 per M tokens");
    expect(groq.textContent).not.toContain("from provider headers");
  });

  it("counts down with the clock and turns red when used up", async () => {
    live.applySnapshot(snapshot());
    render(QuotaPanel);
    live.now = NOW + 12 * MIN;
    await tick();
    expect(screen.getByTestId("quota-reset-groq/llama").textContent?.trim()).toBe("Daily tokens: resets in 3 h");

    live.applyUpdate(
      update({
        time: at(13 * MIN),
        backends: [],
        requests: [],
        events: [],
        totals: { requests_today: 1, rps_1m: 0 },
        quotas: [
          quota("groq/llama", {
            exhausted: true,
            reason: "groq: daily tokens used, resets 15:12 UTC",
            limits: [limitUse("tpd", 500_000, 500_000, { resets_at: at(3 * HOUR + 12 * MIN) })],
          }),
        ],
      }),
    );
    await tick();
    const groq = screen.getByTestId("quota-bar-groq/llama");
    expect(groq.dataset.level).toBe("full");
    expect(within(groq).getByTestId("quota-limit-groq/llama-tpd").dataset.level).toBe("full");
    expect(groq.textContent).toContain("groq: daily tokens used, resets 15:12 UTC");
    expect(groq.textContent).toContain("used up");
    expect(screen.queryByTestId("quota-bar-cerebras/qwen")).toBeNull();
  });

  it("shows spend against the global budgets", async () => {
    live.applySnapshot(snapshot());
    render(QuotaPanel);
    const today = screen.getByTestId("spend-today");
    expect(screen.getByTestId("spend-today-amount").textContent).toBe("$0.42");
    expect(today.textContent).toContain("of $1.00 daily budget");
    expect(today.textContent).toContain("$0.01 held by requests in flight");
    expect(today.textContent).toContain("resets in 12 h");
    expect(today.dataset.level).toBe("ok");
    expect(screen.getByTestId("spend-month").textContent).toContain("$3.50");
    expect(screen.getByTestId("spend-month").textContent).toContain("of $20.00 monthly budget");

    live.applyUpdate(
      update({
        time: at(1000),
        backends: [],
        requests: [],
        events: [],
        totals: { requests_today: 1, rps_1m: 0 },
        spend: { today: 1.02, month: 4.1 },
        budgets: [budget("global", "day", { spent: 1.02, exceeded: true, action: "block" })],
      }),
    );
    await tick();
    expect(screen.getByTestId("spend-today-amount").textContent).toBe("$1.02");
    expect(screen.getByTestId("spend-today").dataset.level).toBe("full");
    expect(screen.getByTestId("spend-today").textContent).toContain("blocking paid requests");
    expect(screen.getByTestId("spend-month").textContent).toContain("no monthly budget");
  });

  it("explains where limits come from when there are none", () => {
    live.applySnapshot(snapshot({ quotas: [quota("groq/llama")], budgets: [], spend: { today: 0, month: 0 } }));
    render(QuotaPanel);
    expect(screen.getByTestId("quotas-empty").textContent).toContain("Budgets & limits");
    expect(screen.getByTestId("spend-today").textContent).toContain("no daily budget");
  });

  it("draws a provider's limits once, not under each of its models", () => {
    const shared = () => limitUse("rpd", 40, 40, { shared: "flaky", resets_at: at(4 * HOUR) });
    live.applySnapshot(
      snapshot({
        quotas: [
          quota("flaky/slow-a", { limits: [shared(), limitUse("rpm", 7, 10, { resets_at: at(46_000) })], exhausted: true, reason: "flaky: daily requests used, resets 00:00 UTC" }),
          quota("flaky/fail-a", { limits: [shared()], exhausted: true, reason: "flaky: daily requests used, resets 00:00 UTC" }),
          quota("groq/llama", { limits: [limitUse("tpd", 10, 100)] }),
        ],
      }),
    );
    render(QuotaPanel);
    const flaky = screen.getByTestId("quota-provider-flaky");
    expect(flaky.dataset.level).toBe("full");
    expect(flaky.textContent).toContain("shared by its 2 models");
    // One daily-requests bar for the provider, none under the models.
    expect(within(flaky).getAllByText(/Daily requests/).filter((e) => e.classList.contains("label"))).toHaveLength(1);
    expect(screen.getByTestId("quota-limit-flaky-rpd").textContent).toContain("40 / 40");
    expect(screen.queryByTestId("quota-limit-flaky/slow-a-rpd")).toBeNull();
    expect(screen.queryByTestId("quota-limit-flaky/fail-a-rpd")).toBeNull();
    // The reason is said once too; each model keeps its own limits.
    expect(flaky.textContent?.match(/daily requests used/g)).toHaveLength(1);
    expect(screen.getByTestId("quota-limit-flaky/slow-a-rpm").textContent).toContain("7 / 10");
    // A model stopped by its provider's limit is still marked full.
    expect(screen.getByTestId("quota-bar-flaky/fail-a").dataset.level).toBe("full");
    // A provider without shared limits lists its models as before.
    expect(screen.getByTestId("quota-limit-groq/llama-tpd").textContent).toContain("10 / 100");
  });
});
