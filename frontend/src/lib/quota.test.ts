import { describe, expect, it } from "vitest";
import type { LimitsEntry, ProviderView } from "../lib/types";
import { budget, limitUse, limits, provider, quota } from "../test/fixtures";
import {
  unpricedModels,
  budgetFigures,
  composeReset,
  dateFieldError,
  headlineLimit,
  limitRows,
  limitFieldError,
  limitLevel,
  limitText,
  parseReset,
  priceFieldError,
  quotaLevel,
  quotaViewLevel,
  validateBudget,
  validateReset,
} from "./quota";

describe("quota thresholds", () => {
  it("is amber from 80 % and red at the limit or when exhausted", () => {
    expect(quotaLevel(0)).toBe("ok");
    expect(quotaLevel(0.799)).toBe("ok");
    expect(quotaLevel(0.8)).toBe("warn");
    expect(quotaLevel(0.99)).toBe("warn");
    expect(quotaLevel(1)).toBe("full");
    expect(quotaLevel(1.3)).toBe("full");
    expect(quotaLevel(0.2, true)).toBe("full");
    expect(limitLevel(limitUse("rpd", 8, 10))).toBe("warn");
    expect(quotaViewLevel(quota("a", { limits: [limitUse("rpm", 1, 30), limitUse("tpd", 450, 500)] }))).toBe("warn");
    expect(quotaViewLevel(quota("a", { limits: [limitUse("rpm", 1, 30)], exhausted: true }))).toBe("full");
    expect(quotaViewLevel(quota("a"))).toBe("ok");
  });

  it("labels limits", () => {
    expect(limitText(limitUse("tpd", 312_400, 500_000))).toBe("Daily tokens 312k / 500k");
    expect(limitText(limitUse("rpd", 3, 10))).toBe("Daily requests 3 / 10");
    expect(limitText(limitUse("concurrency", 2, 4))).toBe("Concurrent requests 2 / 4");
  });

  it("picks the most used limit that resets as the headline", () => {
    const a = limitUse("rpm", 29, 30, { resets_at: "2026-11-30T12:00:30Z" });
    const b = limitUse("tpd", 100, 500, { resets_at: "2026-12-01T00:00:00Z" });
    const c = limitUse("concurrency", 4, 4);
    expect(headlineLimit(quota("x", { limits: [b, a, c] }))).toBe(a);
    // Two used up: the backend is back when the later one resets.
    const d = limitUse("rpd", 12, 10, { resets_at: "2026-12-01T08:00:00Z" });
    const e = limitUse("rpm", 30, 30, { resets_at: "2026-11-30T12:00:30Z" });
    expect(headlineLimit(quota("x", { limits: [e, d] }))).toBe(d);
    expect(headlineLimit(quota("x", { limits: [c] }))).toBeNull();
  });

  it("gives each limit row a unique id, numbering a second one of a kind", () => {
    const rows = limitRows(quota("groq/llama", { limits: [limitUse("rpd", 1, 500), limitUse("rpm", 1, 30)] }));
    expect(rows.map((r) => [r.id, r.label])).toEqual([
      ["rpm", "Requests per minute"],
      ["rpd", "Daily requests"],
    ]);
    expect(limitRows(quota("g/x", { limits: [limitUse("rpd", 1, 1000), limitUse("rpd", 1, 500)] })).map((r) => r.id)).toEqual(["rpd", "rpd-2"]);
  });

  it("writes budget figures", () => {
    expect(budgetFigures(budget("global", "day", { spent: 0.42, limit: 1 }))).toBe("$0.42 of $1.00");
    expect(budgetFigures(budget("global", "day", { spent: 0.42, reserved: 0.01, limit: 1 }))).toBe("$0.42 (+$0.01 in flight) of $1.00");
  });
});

describe("budget validation", () => {
  const scopes = ["global", "chain:auto", "provider:groq"];
  const ok = { scope: "global", period: "day", limit: "1.50", action: "block" } as const;

  it("accepts a good draft", () => {
    expect(validateBudget({ ...ok }, scopes, [])).toEqual({});
    expect(validateBudget({ ...ok, limit: "20" }, scopes, [{ scope: "global", period: "month", limit: 1, action: "block" }])).toEqual({});
  });

  it("names each wrong field", () => {
    expect(validateBudget({ scope: "", period: "", limit: "", action: "" }, scopes, [])).toEqual({
      scope: "Choose what the budget covers.",
      period: "Choose a day or a month.",
      limit: "Enter the most to spend, e.g. 1.00.",
      action: "Choose what happens when the budget is spent.",
    });
    expect(validateBudget({ ...ok, limit: "0" }, scopes, []).limit).toBe("The limit must be more than $0.");
    expect(validateBudget({ ...ok, limit: "-2" }, scopes, []).limit).toBe("The limit must be more than $0.");
    expect(validateBudget({ ...ok, limit: "abc" }, scopes, []).limit).toContain("amount in dollars");
    expect(validateBudget({ ...ok, limit: "1e3" }, scopes, []).limit).toContain("amount in dollars");
    expect(validateBudget({ ...ok, scope: "chain:gone" }, scopes, []).scope).toContain("no chain gone");
    expect(validateBudget({ ...ok }, scopes, [{ scope: "global", period: "day", limit: 3, action: "free-only" }]).scope).toBe(
      "There is already a daily budget for all traffic; edit that one.",
    );
  });
});

describe("reset rules and limit fields", () => {
  it("reads and writes the four forms", () => {
    for (const s of ["daily 00:00 UTC", "rolling 24h", "weekly mon 08:30 Europe/Berlin", "monthly 1 00:00 UTC", "daily 07:00 America/Los_Angeles"]) {
      const p = parseReset(s);
      expect(p, s).not.toBeNull();
      expect(composeReset(p!)).toBe(s);
    }
    expect(parseReset("daily 8:00 UTC")).toMatchObject({ form: "daily", time: "08:00", zone: "UTC" });
    expect(parseReset("hourly")).toBeNull();
    expect(parseReset("weekly xyz 00:00 UTC")).toBeNull();
  });

  it("checks times, zones and days", () => {
    const base = { form: "daily", time: "00:00", zone: "UTC", weekday: "mon", day: "1" } as const;
    expect(validateReset({ ...base })).toEqual({});
    expect(validateReset({ ...base, time: "24:00" }).time).toContain("HH:MM");
    expect(validateReset({ ...base, zone: "not a zone" }).zone).toContain("zone");
    expect(validateReset({ ...base, form: "monthly", day: "32" }).day).toContain("1 to 31");
    expect(validateReset({ ...base, form: "rolling", time: "bad" })).toEqual({});
  });

  it("takes non-negative whole numbers for limits", () => {
    expect(limitFieldError("")).toBe("");
    expect(limitFieldError("0")).toBe("");
    expect(limitFieldError("1000")).toBe("");
    expect(limitFieldError("-1")).toContain("whole number");
    expect(limitFieldError("1.5")).toContain("whole number");
    expect(priceFieldError("0.15")).toBe("");
    expect(priceFieldError("-0.1")).toContain("0 or more");
    expect(dateFieldError("2026-12-31")).toBe("");
    expect(dateFieldError("2026-02-30")).toBe("That date does not exist.");
    expect(dateFieldError("31/12/2026")).toContain("YYYY-MM-DD");
  });
});

describe("unpricedModels", () => {
  const own = (name: string, models: ProviderView["models"], over: Partial<ProviderView> = {}) => provider(name, { tier: "own", models, ...over });
  const m = (id: string, unpriced = false) => ({ id, params_b: 0, context: 0, max_output: 0, ...(unpriced ? { unpriced } : {}) });
  const entry = (p: string, model: string, unpriced = false): LimitsEntry => ({ provider: p, model, limits: limits(), price: null, credit_expires: "", ...(unpriced ? { unpriced } : {}) });

  it("takes the limits list's flags where it lists the provider, else the provider view's, and skips disabled providers", () => {
    const providers = [own("openai", [m("a", true), m("b")]), own("anthropic", [m("c", true)]), own("off", [m("d", true)], { disabled: true })];
    expect(unpricedModels(providers)).toEqual([{ provider: "openai", model: "a" }, { provider: "anthropic", model: "c" }]);
    // The list says openai's "a" now has a price and "b" has none.
    const entries = [entry("openai", ""), entry("openai", "a"), entry("openai", "b", true)];
    expect(unpricedModels(providers, entries)).toEqual([{ provider: "openai", model: "b" }, { provider: "anthropic", model: "c" }]);
  });
});
