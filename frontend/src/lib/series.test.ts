import { describe, expect, it } from "vitest";
import { latencyColumns, refetchEvery, seriesQuery, throughputColumns, timeTick } from "./series";
import type { SeriesBucket, SeriesView } from "./wire.gen";

function bucket(start: number, over: Partial<SeriesBucket> = {}): SeriesBucket {
  return {
    start,
    requests: 0,
    failures: 0,
    errors: { rate_limited: 0, transient: 0, soft: 0, credential: 0, gone: 0, too_long: 0, caller: 0, cancelled: 0, quota: 0, other: 0 },
    quota_skips: 0,
    latency_ms: { p50: 0, p95: 0, p99: 0 },
    ttft_ms: { p50: 0, p95: 0, p99: 0 },
    prompt_tokens: 0,
    completion_tokens: 0,
    estimated_tokens: 0,
    cost: 0,
    ...over,
  };
}

const view = (res: number, buckets: SeriesBucket[]): SeriesView => ({
  window: "1m",
  resolution_s: res,
  from: 1000,
  to: 1060,
  buckets,
});

describe("series", () => {
  it("asks for one series of one window", () => {
    expect(seriesQuery("1h")).toBe("window=1h");
    expect(seriesQuery("7d", { backend: "groq/llama 3" })).toBe("window=7d&backend=groq%2Fllama+3");
    expect(seriesQuery("24h", { chain: "coding" })).toBe("window=24h&chain=coding");
  });

  it("draws quiet buckets at zero and leaves latency gaps where nothing succeeded", () => {
    const v = view(10, [
      bucket(1010, { requests: 2, latency_ms: { p50: 100, p95: 180, p99: 190 } }),
      bucket(1020),
      bucket(1030, { requests: 1, failures: 1 }),
    ]);
    expect(throughputColumns(v)).toEqual([
      [1010, 1020, 1030],
      [12, 0, 6],
      [0, 0, 6],
    ]);
    expect(latencyColumns(v)).toEqual([
      [1010, 1020, 1030],
      [100, null, null],
      [180, null, null],
      [190, null, null],
    ]);
    // Hour buckets are per minute averaged over the hour.
    expect(throughputColumns(view(3600, [bucket(0, { requests: 120 })]))[1]).toEqual([2]);
    expect(throughputColumns(null)).toEqual([[], [], []]);
  });

  it("fetches fine windows often and coarse ones rarely", () => {
    expect(refetchEvery(10)).toBeLessThan(refetchEvery(60));
    expect(refetchEvery(60)).toBeLessThan(refetchEvery(3600));
  });

  it("labels week-long axes with the day", () => {
    const t = new Date(2026, 10, 30, 14, 5).getTime() / 1000;
    expect(timeTick(t, 3600)).toBe("14:05");
    expect(timeTick(t, 7 * 86400)).toBe("Nov 30 14:05");
  });
});
