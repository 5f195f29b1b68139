// The charts' history: GET /api/series answers a window of the server's
// time series, every bucket from now less the window to now with its start
// time, empty ones included. These functions turn an answer into chart
// columns; the screens fetch it again as the websocket reports requests,
// so a reload draws the same points the page showed before it.

import { request } from "./api";
import { fmtDayShort, fmtDay, fmtHourMinute } from "./format";
import type { SeriesView } from "./wire.gen";

/** uPlot's data layout: x values first, then one array per series. */
export type Columns = [number[], ...(number | null)[][]];

/** The spans the charts offer, as the server names them. */
export type SpanName = "1m" | "5m" | "1h" | "24h" | "7d";

export const SPANS: SpanName[] = ["1m", "5m", "1h", "24h", "7d"];

export const SPAN_LABELS: Record<SpanName, string> = {
  "1m": "1 min",
  "5m": "5 min",
  "1h": "1 hour",
  "24h": "24 hours",
  "7d": "7 days",
};

/** Each span in seconds. */
export const SPAN_SECONDS: Record<SpanName, number> = { "1m": 60, "5m": 300, "1h": 3600, "24h": 86400, "7d": 604800 };

export function isSpan(s: unknown): s is SpanName {
  return typeof s === "string" && (SPANS as string[]).includes(s);
}

/** What a series counts: one backend's calls, one chain's requests, or (neither) every request. */
export interface SeriesSelector {
  backend?: string;
  chain?: string;
}

/** The query of /api/series, in a fixed order. */
export function seriesQuery(span: SpanName, sel: SeriesSelector = {}): string {
  const q = new URLSearchParams({ window: span });
  if (sel.backend) q.set("backend", sel.backend);
  else if (sel.chain) q.set("chain", sel.chain);
  return q.toString();
}

export function fetchSeries(span: SpanName, sel: SeriesSelector = {}): Promise<SeriesView> {
  return request<SeriesView>("GET", `/api/series?${seriesQuery(span, sel)}`);
}

/**
 * How long a chart waits at least between two fetches of its window: about
 * a fifth of a bucket for the fine windows, so a new request shows within
 * two seconds, and longer for the coarse ones, whose buckets change little
 * from one request to the next.
 */
export function refetchEvery(resolutionS: number): number {
  if (resolutionS <= 10) return 2_000;
  if (resolutionS <= 60) return 10_000;
  return 30_000;
}

/**
 * Latency percentiles per bucket. A bucket without a successful request has
 * no latency, so it is a gap in the line, never a dive to 0 ms nor a line
 * drawn across from its neighbours.
 */
export function latencyColumns(v: SeriesView | null): Columns {
  const t: number[] = [];
  const p50: (number | null)[] = [];
  const p95: (number | null)[] = [];
  const p99: (number | null)[] = [];
  for (const b of v?.buckets ?? []) {
    t.push(b.start);
    // The server leaves the percentiles out of a bucket with no success.
    const l = b.latency_ms;
    p50.push(l && l.p50 > 0 ? l.p50 : null);
    p95.push(l && l.p50 > 0 ? l.p95 : null);
    p99.push(l && l.p50 > 0 ? l.p99 : null);
  }
  return [t, p50, p95, p99];
}

/**
 * Requests and failed requests per minute in each bucket; a bucket without
 * requests is 0.
 */
export function throughputColumns(v: SeriesView | null): Columns {
  const t: number[] = [];
  const all: number[] = [];
  const failed: number[] = [];
  const perMin = 60 / Math.max(v?.resolution_s ?? 60, 1);
  for (const b of v?.buckets ?? []) {
    t.push(b.start);
    all.push(round2(b.requests * perMin));
    failed.push(round2((b.failures ?? 0) * perMin));
  }
  return [t, all, failed];
}

/** An x axis tick for a span of `span` seconds: clock time, or the day as well past a day. */
export function timeTick(unixS: number, span: number): string {
  const ms = unixS * 1000;
  if (span > 86400 + 3600) return `${fmtDayShort(fmtDay(ms))} ${fmtHourMinute(ms)}`;
  return fmtHourMinute(ms);
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
