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

/** What the usage bars stack by: each model (backend) or each provider. */
export type UsageStack = "model" | "provider";

/** The provider of a backend name "groq/llama-3.1-8b" ("groq"); rows without a backend stay ALL. */
export function providerOf(backend: string): string {
  if (!backend) return ALL;
  const i = backend.indexOf("/");
  return i > 0 ? backend.slice(0, i) : backend;
}

/**
 * The series of the stacked daily bars: one per model or provider, largest
 * total first, each with one value per day in `days` (0 on days without
 * rows). Rows outside `days` are left out.
 */
export function stackedDays(rows: UsageRow[], days: string[], by: UsageStack, m: UsageMetric): { label: string; values: number[] }[] {
  const at = new Map(days.map((d, i) => [d, i]));
  const series = new Map<string, number[]>();
  for (const r of rows) {
    const i = at.get(dayOf(r));
    if (i === undefined) continue;
    const key = by === "provider" ? providerOf(r.backend || "") : r.backend || ALL;
    let vals = series.get(key);
    if (!vals) {
      vals = days.map(() => 0);
      series.set(key, vals);
    }
    vals[i] = round(vals[i] + metricOf(r, m));
  }
  const sum = (v: number[]) => v.reduce((a, b) => a + b, 0);
  return [...series.entries()]
    .map(([label, values]) => ({ label, values }))
    .sort((a, b) => sum(b.values) - sum(a.values) || (a.label < b.label ? -1 : 1));
}

/**
 * Axis ticks from 0 to at least `max`, about five of them at 1, 2 or 5
 * times a power of ten. With `integer` the step is a whole number, so a
 * count axis never reads 0.5; an empty chart gets 0 and 1.
 */
export function niceTicks(max: number, integer: boolean): number[] {
  if (!Number.isFinite(max) || max <= 0) return [0, 1];
  const raw = max / 5;
  const pow = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = pow * 10;
  for (const m of [1, 2, 5, 10]) {
    if (pow * m >= raw) {
      step = pow * m;
      break;
    }
  }
  if (integer) step = Math.max(1, Math.round(step));
  const out: number[] = [];
  for (let v = 0; v < max + step * 1e-9; v = round(v + step)) out.push(v);
  if (out[out.length - 1] < max) out.push(round(out[out.length - 1] + step));
  return out;
}
