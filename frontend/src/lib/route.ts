import { fmtMoney, fmtMs, fmtPct, fmtTokens, nsToMs } from "./format";
import type { Attempt, CacheOutcome, Dialect, FailureClass, SkipWord, Trace } from "./types";

// Words for the reasons a backend was skipped, keyed by the skip word the
// router records with each skip (the same word as in X-FreeLane-Attempts).
const SKIP_WORDS: Record<SkipWord, string> = {
  open: "open",
  half_open: "half-open",
  cooling: "cooling down",
  key_disabled: "key disabled",
  retired: "retired",
  too_long: "too long",
  quota: "quota used",
  unsupported: "not supported",
  busy: "busy",
  paced: "paced",
};

// Skips by class rather than by the reason's first word: a quota skip's
// reason starts with the backend ("groq/llama: daily tokens used, ...").
const SKIP_CLASS_WORDS: Record<string, string> = {
  quota: "quota used",
  budget: "over budget",
  too_long: "too long",
};

// Words for failure classes when an attempt has no HTTP status (timeouts,
// refused connections, empty answers). A budget's refusal is no class of
// its own: it is a quota skip whose reason names the budget.
const CLASS_WORDS: Record<FailureClass, string> = {
  ok: "ok",
  rate_limited: "rate limited",
  transient: "failed",
  soft: "bad answer",
  credential: "key rejected",
  gone: "gone",
  too_long: "too long",
  caller: "rejected",
  cancelled: "cancelled",
  quota: "quota used",
};

/** A human word for a failure class: "rate_limited" -> "rate limited". */
export function classWord(cls: FailureClass): string {
  return CLASS_WORDS[cls] ?? cls.replace(/_/g, " ");
}

/** What happened at one attempt, in a word or two: "429", "open", "timeout". */
export function attemptWord(a: Attempt): string {
  if (a.skipped) {
    if (a.budget) return SKIP_CLASS_WORDS.budget;
    if (a.skip) return SKIP_WORDS[a.skip];
    // Requests logged before skips carried their word: a budget's refusal
    // is a quota skip whose reason starts "budget: ", a breaker's reason
    // starts with its word.
    if (/^budget\b/i.test((a.reason ?? "").trim())) return SKIP_CLASS_WORDS.budget;
    if (SKIP_CLASS_WORDS[a.class]) return SKIP_CLASS_WORDS[a.class];
    const first = (a.reason ?? "").trim().split(/\s+/)[0] ?? "";
    return (SKIP_WORDS as Record<string, string>)[first] ?? (first || "skipped");
  }
  if (a.class === "ok") return "ok";
  if (a.status && a.status !== 200) return String(a.status);
  const reason = (a.reason ?? "").trim();
  if (reason) return reason.length > 40 ? reason.slice(0, 39) + "…" : reason;
  return classWord(a.class);
}

// Names of the wire dialects for where a request is shown in full; the
// route line uses the dialect's own short word instead.
const DIALECT_NAMES: Record<Dialect, string> = {
  openai: "OpenAI chat completions",
  "openai-responses": "OpenAI Responses",
  anthropic: "Anthropic Messages",
  gemini: "Gemini",
};

/**
 * The name of a wire dialect: "anthropic" -> "Anthropic Messages". A dialect
 * this dashboard does not know yet is shown as the server wrote it, and none
 * (requests logged before dialects were recorded) as "".
 */
export function dialectName(d: string | undefined): string {
  if (!d) return "";
  return (DIALECT_NAMES as Record<string, string>)[d] ?? d;
}

/**
 * Whether a request's route labels each backend with its dialect. Nearly
 * every route speaks only OpenAI's dialect, and a label on each of its
 * backends would say nothing, so the labels appear once any attempt spoke
 * another one; a route of more than one dialect always has such an attempt.
 */
export function showsDialects(t: Trace): boolean {
  return (t.attempts ?? []).some((a) => !!a.dialect && a.dialect !== "openai");
}

/** A dialect as the route line writes it after a backend: " (anthropic)". */
function dialectLabel(d: string): string {
  return d ? ` (${d})` : "";
}

export interface RouteStep {
  backend: string;
  /** The dialect label to show next to the backend; "" for none. */
  dialect: string;
  word: string;
  kind: "skip" | "fail" | "ok";
  title: string;
}

/** The attempts of a trace as steps, for rendering each in its colour. */
export function routeSteps(t: Trace): RouteStep[] {
  const labelled = showsDialects(t);
  return (t.attempts ?? []).map((a) => ({
    backend: a.backend,
    dialect: labelled ? (a.dialect ?? "") : "",
    word: attemptWord(a),
    kind: a.skipped ? "skip" : a.class === "ok" ? "ok" : "fail",
    title: a.reason ?? "",
  }));
}

/**
 * How a request ended, in pieces so the served backend's dialect label can
 * be set apart: the sentence is lead + backend + label + tail. A request
 * nothing served is all lead.
 */
export interface OutcomeParts {
  lead: string;
  backend: string;
  dialect: string;
  tail: string;
}

/** The pieces of routeOutcome. */
export function outcomeParts(t: Trace): OutcomeParts {
  const took = fmtMs(nsToMs(t.latency_ns));
  // A response-cache hit has no backend to name: saying "served by" with
  // an empty name would read as a fault.
  if (servedFromCache(t)) return { lead: "cache hit — no backend called", backend: "", dialect: "", tail: ` in ${took}` };
  if (t.class === "ok") {
    const served = [...(t.attempts ?? [])].reverse().find((a) => a.class === "ok" && !a.skipped && (!t.backend || a.backend === t.backend));
    const backend = t.backend || served?.backend || "?";
    const dialect = showsDialects(t) ? (served?.dialect ?? "") : "";
    return { lead: "served by ", backend, dialect, tail: ` in ${took}` };
  }
  const status = t.status ? ` ${t.status}` : "";
  const lead = t.class === "cancelled" ? `cancelled by the client after ${took}` : `failed with${status || " " + classWord(t.class)} in ${took}`;
  return { lead, backend: "", dialect: "", tail: "" };
}

/** How a request ended: "served by C in 412 ms" or "failed with 502 in 3.1 s". */
export function routeOutcome(t: Trace): string {
  const o = outcomeParts(t);
  return o.lead + o.backend + dialectLabel(o.dialect) + o.tail;
}

/**
 * The route a request took, in one line:
 * "A: 429 → B: open → served by C in 412 ms". The serving attempt itself is
 * named only in the outcome, so it is not repeated as "C: ok". When the
 * route spoke other dialects than OpenAI's, each backend carries its
 * dialect: "A (openai): 429 → served by C (anthropic) in 412 ms".
 */
export function formatRoute(t: Trace): string {
  return [...shownSteps(t).map((s) => `${s.backend}${dialectLabel(s.dialect)}: ${s.word}`), routeOutcome(t)].join(" → ");
}

/** One attempt of a request as its detail view lists it. */
export interface AttemptRow {
  backend: string;
  /** The dialect's name, "—" when it was not recorded. */
  dialect: string;
  word: string;
  kind: RouteStep["kind"];
  /** The time the attempt took; "" for a skip, which took none. */
  took: string;
  /** Tokens and cost of a call; "" for none. */
  tokens: string;
  cost: string;
  reason: string;
}

/** Every attempt of a request, the serving one too, for its detail view. */
export function attemptRows(t: Trace): AttemptRow[] {
  return (t.attempts ?? []).map((a) => {
    const tokens = (a.prompt_tokens ?? 0) + (a.completion_tokens ?? 0);
    return {
      backend: a.backend,
      dialect: dialectName(a.dialect) || "—",
      word: attemptWord(a),
      kind: a.skipped ? "skip" : a.class === "ok" ? "ok" : "fail",
      took: a.skipped ? "" : fmtMs(nsToMs(a.latency_ns)),
      tokens: tokens ? fmtTokens(tokens) + (a.estimated ? " (estimated)" : "") : "",
      cost: a.cost ? fmtMoney(a.cost) : "",
      reason: a.reason ?? "",
    };
  });
}

/** The steps shown before the outcome: all but a final successful attempt. */
export function shownSteps(t: Trace): RouteStep[] {
  const steps = routeSteps(t);
  return t.class === "ok" && steps.length && steps[steps.length - 1].kind === "ok" ? steps.slice(0, -1) : steps;
}

/** True when any attempt that ran had its tokens estimated rather than reported. */
export function tokensEstimated(t: Trace): boolean {
  return (t.attempts ?? []).some((a) => a.estimated && !a.skipped);
}

/** The tokens of a request: its usage block, or else the sum over its attempts. */
export function traceTokens(t: Trace): number {
  if (t.usage.total_tokens) return t.usage.total_tokens;
  let n = 0;
  for (const a of t.attempts ?? []) n += (a.prompt_tokens ?? 0) + (a.completion_tokens ?? 0);
  return n;
}

/** What the response cache did with a request, as a badge shows it. */
export interface CacheBadge {
  word: string;
  title: string;
}

// A miss is the ordinary case and gets no badge: the request went to the
// backends as it would have without the cache.
const CACHE_BADGES: Partial<Record<CacheOutcome, CacheBadge>> = {
  hit: { word: "cache hit", title: "Answered from FreeLane's response cache; no backend was called" },
  refresh: { word: "cache refreshed", title: "The client sent Cache-Control: no-cache, so a backend answered again and the cache kept the new answer" },
  bypass: { word: "cache bypassed", title: "The client asked not to use the response cache (Cache-Control: no-store or X-FreeLane-Cache: off)" },
};

/** The response-cache badge of a request: hit, refreshed or bypassed; null for a miss or none. */
export function cacheBadge(t: Trace): CacheBadge | null {
  return (t.cache && CACHE_BADGES[t.cache]) || null;
}

/** True when the response cache answered the request and no backend ran. */
export function servedFromCache(t: Trace): boolean {
  return t.cache === "hit" && t.class === "ok" && !(t.attempts ?? []).some((a) => !a.skipped);
}

/**
 * The prompt tokens a provider read from its prompt cache, as a part of
 * the prompt: "7,500 cached (75%)"; "" when none were. A response-cache hit
 * shows none: the counts are those of the call that first made the answer.
 */
export function promptCached(t: Trace): string {
  const read = t.usage?.cache_read_tokens ?? 0;
  if (read <= 0 || servedFromCache(t)) return "";
  const prompt = t.usage.prompt_tokens;
  return prompt > 0 ? `${fmtTokens(read)} cached (${fmtPct(read / prompt)})` : `${fmtTokens(read)} cached`;
}
