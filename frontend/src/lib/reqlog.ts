// The request log's view: what the Requests screen searches, filters and
// sorts by, kept in the URL hash (#/requests?q=...&sort=latency) so a
// reload or a shared link opens the same view, and turned into the query
// of GET /api/requests.

import type { CacheOutcome, Dialect, FailureClass, Trace } from "./types";

export type SortKey = "time" | "latency" | "ttft" | "tokens" | "cost";
export type StatusClass = "2xx" | "4xx" | "5xx";
export type CacheFilter = CacheOutcome | "none";
/** Time ranges ending now, or "custom" for the from and to the view names. */
export type RangeKey = "" | "15m" | "1h" | "24h" | "7d" | "custom";

export const SORTS: SortKey[] = ["time", "latency", "ttft", "tokens", "cost"];
export const RANGES: { key: RangeKey; label: string; ms: number }[] = [
  { key: "", label: "any time", ms: 0 },
  { key: "15m", label: "last 15 min", ms: 15 * 60_000 },
  { key: "1h", label: "last hour", ms: 3_600_000 },
  { key: "24h", label: "last 24 h", ms: 86_400_000 },
  { key: "7d", label: "last 7 days", ms: 7 * 86_400_000 },
  { key: "custom", label: "from … to …", ms: 0 },
];
export const CLASSES: FailureClass[] = ["ok", "rate_limited", "quota", "transient", "soft", "credential", "gone", "too_long", "caller", "cancelled"];
export const DIALECTS: Dialect[] = ["openai", "openai-responses", "anthropic", "gemini"];
export const STATUSES: StatusClass[] = ["2xx", "4xx", "5xx"];
export const CACHES: CacheFilter[] = ["hit", "miss", "bypass", "refresh", "none"];

/** What the Requests screen shows: every field "" when it does not narrow. */
export interface LogView {
  q: string;
  sort: SortKey;
  asc: boolean;
  range: RangeKey;
  /** The custom range's ends, as datetime-local values in the local time zone. */
  from: string;
  to: string;
  chain: string;
  backend: string;
  class: FailureClass | "";
  dialect: Dialect | "";
  status: StatusClass | "";
  cache: CacheFilter | "";
  stream: "" | "true" | "false";
  session: string;
  /** The instance of a team that served the requests. */
  instance: string;
  /** The request whose details are open. */
  open: string;
}

export function emptyView(): LogView {
  return {
    q: "",
    sort: "time",
    asc: false,
    range: "",
    from: "",
    to: "",
    chain: "",
    backend: "",
    class: "",
    dialect: "",
    status: "",
    cache: "",
    stream: "",
    session: "",
    instance: "",
    open: "",
  };
}

const FIELDS = ["q", "range", "from", "to", "chain", "backend", "class", "dialect", "status", "cache", "stream", "session", "instance", "open"] as const;

function oneOf<T extends string>(v: string, allowed: readonly T[]): T | "" {
  return (allowed as readonly string[]).includes(v) ? (v as T) : "";
}

/** Reads the view from a hash: "#/requests?sort=latency&status=5xx". Values it does not know are left out. */
export function viewFromHash(hash: string): LogView {
  const v = emptyView();
  const i = hash.indexOf("?");
  if (i < 0) return v;
  const p = new URLSearchParams(hash.slice(i + 1));
  for (const k of FIELDS) {
    const s = p.get(k);
    if (s !== null) (v as unknown as Record<string, string>)[k] = s.slice(0, 256);
  }
  v.sort = oneOf(p.get("sort") ?? "", SORTS) || "time";
  v.asc = p.get("order") === "asc";
  v.range = oneOf(v.range, RANGES.map((r) => r.key));
  v.class = oneOf(v.class, CLASSES);
  v.dialect = oneOf(v.dialect, DIALECTS);
  v.status = oneOf(v.status, STATUSES);
  v.cache = oneOf(v.cache, CACHES);
  v.stream = oneOf(v.stream, ["true", "false"] as const);
  if (!/^[0-9a-f]{0,16}$/.test(v.session)) v.session = "";
  if (v.range !== "custom") v.from = v.to = "";
  return v;
}

/** The hash of a view: only what narrows it, so the plain screen stays "#/requests". */
export function hashOfView(v: LogView): string {
  const p = new URLSearchParams();
  for (const k of FIELDS) if (v[k]) p.set(k, v[k]);
  if (v.sort !== "time") p.set("sort", v.sort);
  if (v.asc) p.set("order", "asc");
  const qs = p.toString();
  return "#/requests" + (qs ? "?" + qs : "");
}

/** Whether any filter, the search or the range narrows the view (the sort does not). */
export function narrowed(v: LogView): boolean {
  return !!(v.q || v.range || v.chain || v.backend || v.class || v.dialect || v.status || v.cache || v.stream || v.session || v.instance);
}

/** A datetime-local value ("2026-12-04T09:30") as an RFC 3339 time; "" when it is none. */
export function localToISO(s: string): string {
  if (!s) return "";
  const t = new Date(s);
  return isNaN(t.getTime()) ? "" : t.toISOString();
}

/** The query of GET /api/requests for a view, now being the end of a relative range. */
export function queryOf(v: LogView, now: number, limit: number, cursor = ""): Record<string, string> {
  const q: Record<string, string> = { limit: String(limit) };
  const set = (k: string, val: string) => {
    if (val) q[k] = val;
  };
  set("q", v.q.trim());
  if (v.sort !== "time") q.sort = v.sort;
  if (v.asc) q.order = "asc";
  const r = RANGES.find((x) => x.key === v.range);
  if (r && r.ms) q.from = new Date(now - r.ms).toISOString();
  if (v.range === "custom") {
    set("from", localToISO(v.from));
    set("to", localToISO(v.to));
  }
  set("chain", v.chain);
  set("backend", v.backend);
  set("class", v.class);
  set("dialect", v.dialect);
  set("status", v.status);
  set("cache", v.cache);
  set("stream", v.stream);
  set("session", v.session);
  set("instance", v.instance);
  set("cursor", cursor);
  return q;
}

/**
 * Whether a request from the live tail belongs on the first page of the
 * view, as the server would have chosen it: only the newest-first view
 * takes live requests, and a search matches names, the error and the id
 * (the bodies are only on the server).
 */
export function liveMatch(v: LogView, t: Trace, now: number): boolean {
  if (v.sort !== "time" || v.asc) return false;
  if (v.chain && t.chain !== v.chain) return false;
  if (v.backend && t.backend !== v.backend) return false;
  if (v.class && t.class !== v.class) return false;
  if (v.dialect && t.dialect !== v.dialect) return false;
  if (v.status && Math.floor((t.status || 0) / 100) !== Number(v.status[0])) return false;
  if (v.cache && (t.cache || "none") !== v.cache) return false;
  if (v.stream && String(!!t.stream) !== v.stream) return false;
  if (v.session && t.session !== v.session) return false;
  if (v.instance && (t.instance ?? "") !== v.instance) return false;
  const start = Date.parse(t.start);
  const r = RANGES.find((x) => x.key === v.range);
  if (r && r.ms && start < now - r.ms) return false;
  if (v.range === "custom") {
    const from = localToISO(v.from);
    const to = localToISO(v.to);
    if (from && start < Date.parse(from)) return false;
    if (to && start >= Date.parse(to)) return false;
  }
  const q = v.q.trim().toLowerCase();
  if (q) {
    const hay = [t.id, t.model, t.alias, t.chain, t.backend, t.error, ...(t.notes ?? [])].map((s) => (s ?? "").toLowerCase());
    if (t.id.toLowerCase() !== q && !hay.some((s) => s.includes(q))) return false;
  }
  return true;
}
