import { describe, expect, it } from "vitest";
import { fmtAgo, fmtClock, fmtContext, fmtInt, fmtLatency, fmtMs, fmtNum, fmtPct, fmtRate, fmtSpan, fmtUntil } from "./format";

describe("format", () => {
  it("groups digits by hand", () => {
    expect(fmtInt(0)).toBe("0");
    expect(fmtInt(999)).toBe("999");
    expect(fmtInt(1234)).toBe("1,234");
    expect(fmtInt(1234567)).toBe("1,234,567");
    expect(fmtInt(-98765)).toBe("-98,765");
    expect(fmtInt(NaN)).toBe("—");
  });

  it("trims decimals", () => {
    expect(fmtNum(2.5, 2)).toBe("2.5");
    expect(fmtNum(1234.56, 1)).toBe("1,234.6");
    expect(fmtNum(-0.4, 1)).toBe("-0.4");
    expect(fmtNum(3, 2)).toBe("3");
  });

  it("formats milliseconds for people", () => {
    expect(fmtMs(412)).toBe("412 ms");
    expect(fmtMs(411.6)).toBe("412 ms");
    expect(fmtMs(2.25)).toBe("2.3 ms");
    expect(fmtMs(1234)).toBe("1.23 s");
    expect(fmtMs(12_340)).toBe("12.3 s");
    expect(fmtMs(125_000)).toBe("2 min 5 s");
    expect(fmtLatency(0)).toBe("—");
    expect(fmtLatency(80)).toBe("80 ms");
  });

  it("formats ratios and rates", () => {
    expect(fmtPct(1)).toBe("100%");
    expect(fmtPct(0.975)).toBe("97.5%");
    expect(fmtPct(0)).toBe("0%");
    expect(fmtRate(0)).toBe("0");
    expect(fmtRate(0.5)).toBe("0.5");
    expect(fmtRate(270)).toBe("270");
    expect(fmtRate(12345)).toBe("12,345");
  });

  it("formats times without Intl", () => {
    const d = new Date(2025, 2, 1, 9, 5, 7);
    expect(fmtClock(d)).toBe("09:05:07");
    expect(fmtClock("not a time")).toBe("—");
    expect(fmtSpan(42_000)).toBe("42 s");
    expect(fmtSpan(3 * 60_000)).toBe("3 min");
    expect(fmtSpan(125 * 60_000)).toBe("2 h 5 min");
    const now = d.getTime();
    expect(fmtUntil(new Date(now + 42_000).toISOString(), now)).toBe("in 42 s");
    expect(fmtUntil(new Date(now - 1000).toISOString(), now)).toBe("now");
    expect(fmtUntil(null, now)).toBe("");
    expect(fmtAgo(new Date(now - 90_000).toISOString(), now)).toBe("1 min ago");
    expect(fmtContext(131072)).toBe("128k");
    expect(fmtContext(0)).toBe("—");
  });
});
