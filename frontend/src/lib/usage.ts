// The usage history: GET /api/usage?group_by=day,backend rows turned into
// chart columns (one series per backend, one point per day) and a table
// grouped by backend, and group_by=path rows into a table by API.

import { lastDays } from "./format";
import type { Columns } from "./series";
import type { UsageRow } from "./types";

export type UsageMetric = "requests" | "tokens" | "cost";

export const RANGES = [7, 30, 90] as const;
export type RangeDays = (typeof RANGES)[number];

/** The backend name rows without one are filed under (a server that cannot split days by backend). */
export const ALL = "all backends";

export function metricOf(r: UsageRow, m: UsageMetric): number {
  if (m === "requests") return r.requests ?? 0;
  if (m === "tokens") return (r.prompt_tokens ?? 0) + (r.completion_tokens ?? 0);
  return r.cost ?? 0;
}

/**
 * The query of a range of `n` days ending today (local dates). The server
 * reads a `to` date as the whole of that day, so `to` is today; `days` lists
 * the days shown.
 */
export function usageRange(n: number, now: number): { from: string; to: string; days: string[] } {
  const days = lastDays(n, now);
  return { from: days[0], to: days[days.length - 1], days };
}

/** The day of a row: its key, cut to the date when the server sent a full time. */
function dayOf(r: UsageRow): string {
  return /^\d{4}-\d{2}-\d{2}/.test(r.key) ? r.key.slice(0, 10) : r.key;
}

export interface BackendTotal extends UsageRow {
  /** The backend, also in key. */
  backend: string;
}

/** Rows summed per backend, most expensive first (then most requests). */
export function byBackend(rows: UsageRow[]): BackendTotal[] {
  const sums = new Map<string, BackendTotal>();
  for (const r of rows) {
    const b = r.backend || ALL;
    let t = sums.get(b);
    if (!t) {
      t = { key: b, backend: b, requests: 0, failures: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0, estimated_tokens: 0 };
      sums.set(b, t);
    }
    addInto(t, r);
  }
  return [...sums.values()].sort((a, b) => b.cost - a.cost || b.requests - a.requests || (a.backend < b.backend ? -1 : 1));
}

/** Rows summed per key (the path, for rows grouped by path), most requests first. */
export function byPath(rows: UsageRow[]): UsageRow[] {
  const sums = new Map<string, UsageRow>();
  for (const r of rows) {
    let t = sums.get(r.key);
    if (!t) {
      t = { key: r.key, requests: 0, failures: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0, estimated_tokens: 0 };
      sums.set(r.key, t);
    }
    addInto(t, r);
  }
  return [...sums.values()].sort((a, b) => b.requests - a.requests || b.cost - a.cost || (a.key < b.key ? -1 : 1));
}

/** Adds a row's counts to a running total. */
function addInto(t: UsageRow, r: UsageRow): void {
  t.requests += r.requests ?? 0;
  t.failures += r.failures ?? 0;
  t.prompt_tokens += r.prompt_tokens ?? 0;
  t.completion_tokens += r.completion_tokens ?? 0;
  t.cost += r.cost ?? 0;
  t.estimated_tokens += r.estimated_tokens ?? 0;
}

/** The sum of every row. */
export function total(rows: UsageRow[]): UsageRow {
  const t: UsageRow = { key: "total", requests: 0, failures: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0, estimated_tokens: 0 };
  for (const r of rows) {
    addInto(t, r);
  }
  return t;
}

/**
 * Chart columns: x is the index of the day in `days`, then one series per
 * backend (in `backends` order) with that day's value, 0 on days without
 * rows. Rows outside `days` are left out.
 */
export function usageColumns(rows: UsageRow[], days: string[], backends: string[], m: UsageMetric): Columns {
  const at = new Map(days.map((d, i) => [d, i]));
  const series = backends.map(() => days.map(() => 0));
  const idx = new Map(backends.map((b, i) => [b, i]));
  for (const r of rows) {
    const i = at.get(dayOf(r));
    const s = idx.get(r.backend || ALL);
    if (i === undefined || s === undefined) continue;
    series[s][i] = round(series[s][i] + metricOf(r, m));
  }
  return [days.map((_, i) => i), ...series];
}

function round(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
