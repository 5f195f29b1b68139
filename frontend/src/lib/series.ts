import type { Sample } from "./live.svelte";
import type { WindowName } from "./types";

/** uPlot's data layout: x values first, then one array per series. */
export type Columns = [number[], ...(number | null)[][]];

/**
 * Latency percentiles of one backend over time. A 0 means "no data in the
 * window" and becomes a gap rather than a dive to zero.
 */
export function latencySeries(history: Sample[], window: WindowName, backend: string): Columns {
  const t: number[] = [];
  const p50: (number | null)[] = [];
  const p95: (number | null)[] = [];
  const p99: (number | null)[] = [];
  for (const s of history) {
    const v = s.b[backend]?.[window];
    t.push(s.t);
    p50.push(v && v[0] > 0 ? v[0] : null);
    p95.push(v && v[1] > 0 ? v[1] : null);
    p99.push(v && v[2] > 0 ? v[2] : null);
  }
  return [t, p50, p95, p99];
}

/** Requests and failed requests per minute over all backends. */
export function throughputSeries(history: Sample[], window: WindowName): Columns {
  const t: number[] = [];
  const all: number[] = [];
  const failed: number[] = [];
  for (const s of history) {
    let sum = 0;
    let bad = 0;
    for (const per of Object.values(s.b)) {
      const v = per[window];
      if (!v) continue;
      sum += v[3] * 60;
      bad += v[3] * (1 - v[4]) * 60;
    }
    t.push(s.t);
    all.push(round2(sum));
    failed.push(round2(bad));
  }
  return [t, all, failed];
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
