import { describe, expect, it } from "vitest";
import { fmtCompact, fmtCountdown, fmtDay, fmtDayShort, fmtMoney, fmtPrice, fmtResetsIn, lastDays } from "./format";

const now = Date.parse("2026-11-30T04:48:00Z");
const later = (ms: number) => new Date(now + ms).toISOString();
const MIN = 60_000;
const HOUR = 60 * MIN;

describe("countdown formatting", () => {
  it("counts down to the minute, never showing more than is left", () => {
    expect(fmtCountdown(later(3 * HOUR + 12 * MIN), now)).toBe("3 h 12 min");
    expect(fmtCountdown(later(3 * HOUR + 12 * MIN + 59_999), now)).toBe("3 h 12 min");
    expect(fmtCountdown(later(3 * HOUR), now)).toBe("3 h");
    expect(fmtCountdown(later(59 * MIN + 59_000), now)).toBe("59 min");
    expect(fmtCountdown(later(42_500), now)).toBe("42 s");
    expect(fmtCountdown(later(24 * HOUR + 5 * MIN), now)).toBe("1 day");
    expect(fmtCountdown(later(2 * 24 * HOUR + 4 * HOUR), now)).toBe("2 days 4 h");
    expect(fmtCountdown(later(-5000), now)).toBe("0 s");
    expect(fmtCountdown(null, now)).toBe("");
    expect(fmtCountdown("soon", now)).toBe("");
  });

  it("says when a quota resets, following the clock", () => {
    const t = later(3 * HOUR + 12 * MIN);
    expect(fmtResetsIn(t, now)).toBe("resets in 3 h 12 min");
    expect(fmtResetsIn(t, now + 12 * MIN)).toBe("resets in 3 h");
    expect(fmtResetsIn(t, now + 3 * HOUR + 11 * MIN + 30_000)).toBe("resets in 30 s");
    expect(fmtResetsIn(t, now + 4 * HOUR)).toBe("resets now");
    expect(fmtResetsIn(null, now)).toBe("");
  });
});

describe("money and counts", () => {
  it("formats money in dollars by hand", () => {
    expect(fmtMoney(0)).toBe("$0.00");
    expect(fmtMoney(1)).toBe("$1.00");
    expect(fmtMoney(1.015)).toBe("$1.01");
    expect(fmtMoney(0.42)).toBe("$0.42");
    expect(fmtMoney(0.0012)).toBe("$0.0012");
    expect(fmtMoney(0.005)).toBe("$0.005");
    expect(fmtMoney(0.0123)).toBe("$0.0123");
    expect(fmtMoney(0.1)).toBe("$0.10");
    expect(fmtMoney(0.99999)).toBe("$1.00");
    expect(fmtMoney(0.00001)).toBe("<$0.0001");
    expect(fmtMoney(1250)).toBe("$1,250.00");
    expect(fmtMoney(-0.5)).toBe("-$0.50");
    expect(fmtMoney(NaN)).toBe("—");
    expect(fmtPrice(0.15)).toBe("$0.15");
    expect(fmtPrice(0.075)).toBe("$0.075");
    expect(fmtPrice(3)).toBe("$3");
  });

  it("shortens counts for bar labels", () => {
    expect(fmtCompact(950)).toBe("950");
    expect(fmtCompact(1250)).toBe("1.3k");
    expect(fmtCompact(312_400)).toBe("312k");
    expect(fmtCompact(500_000)).toBe("500k");
    expect(fmtCompact(1_250_000)).toBe("1.25M");
  });

  it("names local days", () => {
    const d = new Date(2026, 10, 30, 23, 59);
    expect(fmtDay(d)).toBe("2026-11-30");
    expect(fmtDayShort("2026-11-03")).toBe("Nov 3");
    expect(fmtDayShort("rollup")).toBe("rollup");
    expect(lastDays(3, d.getTime())).toEqual(["2026-11-28", "2026-11-29", "2026-11-30"]);
    expect(lastDays(2, new Date(2027, 0, 1, 0, 5).getTime())).toEqual(["2026-12-31", "2027-01-01"]);
  });
});
