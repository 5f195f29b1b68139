import { fmtMs, nsToMs } from "./format";
import type { Attempt, FailureClass, SkipWord, Trace } from "./types";

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

export interface RouteStep {
  backend: string;
  word: string;
  kind: "skip" | "fail" | "ok";
  title: string;
}

/** The attempts of a trace as steps, for rendering each in its colour. */
export function routeSteps(t: Trace): RouteStep[] {
  return (t.attempts ?? []).map((a) => ({
    backend: a.backend,
    word: attemptWord(a),
    kind: a.skipped ? "skip" : a.class === "ok" ? "ok" : "fail",
    title: a.reason ?? "",
  }));
}

/** How a request ended: "served by C in 412 ms" or "failed with 502 in 3.1 s". */
export function routeOutcome(t: Trace): string {
  const took = fmtMs(nsToMs(t.latency_ns));
  if (t.class === "ok") {
    const served = t.backend || [...(t.attempts ?? [])].reverse().find((a) => a.class === "ok")?.backend || "?";
    return `served by ${served} in ${took}`;
  }
  const status = t.status ? ` ${t.status}` : "";
  if (t.class === "cancelled") return `cancelled by the client after ${took}`;
  return `failed with${status || " " + classWord(t.class)} in ${took}`;
}

/**
 * The route a request took, in one line:
 * "A: 429 → B: open → served by C in 412 ms". The serving attempt itself is
 * named only in the outcome, so it is not repeated as "C: ok".
 */
export function formatRoute(t: Trace): string {
  return [...shownSteps(t).map((s) => `${s.backend}: ${s.word}`), routeOutcome(t)].join(" → ");
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
