// Quotas, budgets and limits: the words, thresholds and checks the Overview
// and the Budgets & limits screen share. Pure functions, so they are tested
// on their own (quota.test.ts).

import { fmtCompact, fmtInt, fmtMoney } from "./format";
import type { BudgetAction, BudgetInput, BudgetPeriod, BudgetView, LimitKind, LimitsEntry, LimitUse, ProviderView, QuotaView } from "./types";

/** A bar turns amber at this fraction, as the server's warning event does. */
export const WARN_AT = 0.8;

export const LIMIT_KINDS: LimitKind[] = ["rpm", "rpd", "tpm", "tpd", "concurrency"];

export const LIMIT_LABELS: Record<LimitKind, string> = {
  rpm: "Requests per minute",
  rpd: "Daily requests",
  tpm: "Tokens per minute",
  tpd: "Daily tokens",
  concurrency: "Concurrent requests",
};

export type Level = "ok" | "warn" | "full";

/** The colour of a bar: ok below 80 %, warn from 80 %, full at the limit (or when the server says exhausted). */
export function quotaLevel(fraction: number, exhausted = false): Level {
  if (exhausted || fraction >= 1) return "full";
  if (fraction >= WARN_AT) return "warn";
  return "ok";
}

/** The fraction to draw, 0..1. */
export function barFraction(fraction: number): number {
  if (!Number.isFinite(fraction) || fraction < 0) return 0;
  return Math.min(fraction, 1);
}

/** "312k / 500k" for tokens, "3 / 10" for requests. */
export function limitFigures(l: LimitUse): string {
  const tokens = l.kind === "tpm" || l.kind === "tpd";
  const f = tokens ? fmtCompact : fmtInt;
  return `${f(l.used)} / ${f(l.limit)}`;
}

/** "Daily tokens 312k / 500k". */
export function limitText(l: LimitUse): string {
  return `${LIMIT_LABELS[l.kind] ?? l.kind} ${limitFigures(l)}`;
}

/** A limit's level, counting it full when it is used up. */
export function limitLevel(l: LimitUse): Level {
  return quotaLevel(l.limit > 0 ? l.fraction : 0);
}

/** The worst level among a backend's limits (full when the server says it is exhausted). */
export function quotaViewLevel(q: QuotaView): Level {
  if (q.exhausted) return "full";
  let worst: Level = "ok";
  for (const l of q.limits) {
    const lv = limitLevel(l);
    if (lv === "full") return "full";
    if (lv === "warn") worst = "warn";
  }
  return worst;
}

/**
 * The limit whose reset matters most for a backend: the most used limit
 * that resets; on a tie the one resetting last (the backend is back only
 * when all of them are). Null when no limit has a reset time.
 */
export function headlineLimit(q: QuotaView): LimitUse | null {
  let best: LimitUse | null = null;
  for (const l of q.limits) {
    if (!l.resets_at) continue;
    if (
      !best ||
      barFraction(l.fraction) > barFraction(best.fraction) ||
      (barFraction(l.fraction) === barFraction(best.fraction) && Date.parse(l.resets_at) > Date.parse(best.resets_at!))
    )
      best = l;
  }
  return best;
}

/** Limits in the order shown: minute, day, then concurrency, as LIMIT_KINDS lists them. */
export function sortedLimits(limits: LimitUse[]): LimitUse[] {
  return [...limits].sort((a, b) => LIMIT_KINDS.indexOf(a.kind) - LIMIT_KINDS.indexOf(b.kind));
}

export interface LimitRow {
  limit: LimitUse;
  /** Unique within the backend: "rpd", or "rpd-2" for a second one of a kind. */
  id: string;
  /** "Daily requests". */
  label: string;
}

/**
 * The rows of a backend's quota: its limits sorted, each with a unique id
 * and a label. A backend can carry the same kind twice (its provider's and
 * its own); the server does not say which is which, so the second one of a
 * kind is numbered.
 */
export function limitRows(q: QuotaView): LimitRow[] {
  const seen = new Map<string, number>();
  return sortedLimits(q.limits).map((l) => {
    const base = LIMIT_LABELS[l.kind] ?? l.kind;
    const n = (seen.get(l.kind) ?? 0) + 1;
    seen.set(l.kind, n);
    return { limit: l, id: n === 1 ? l.kind : `${l.kind}-${n}`, label: base };
  });
}

// ---- Budgets ----

export const PERIOD_WORDS: Record<BudgetPeriod, string> = { day: "daily", month: "monthly" };

export const ACTION_HELP: Record<BudgetAction, string> = {
  "free-only":
    "Free only: once the budget is spent, paid backends are skipped and free and local backends keep serving.",
  block:
    "Block: once the budget is spent, requests that would cost money get a clear error (HTTP 402) until the period resets. Free and local backends still serve.",
};

/** "all traffic", "chain coding", "provider openai". */
export function scopeLabel(scope: string): string {
  if (scope === "global") return "all traffic";
  const i = scope.indexOf(":");
  if (i > 0) return `${scope.slice(0, i)} ${scope.slice(i + 1)}`;
  return scope;
}

/** "Daily budget for all traffic". */
export function budgetTitle(b: { scope: string; period: BudgetPeriod }): string {
  const p = PERIOD_WORDS[b.period] ?? b.period;
  return `${p[0].toUpperCase()}${p.slice(1)} budget for ${scopeLabel(b.scope)}`;
}

/** "$0.42 of $1.00" plus what is held by requests in flight. */
export function budgetFigures(b: BudgetView): string {
  const held = b.reserved > 0 ? ` (+${fmtMoney(b.reserved)} in flight)` : "";
  return `${fmtMoney(b.spent)}${held} of ${fmtMoney(b.limit)}`;
}

export function budgetLevel(b: BudgetView): Level {
  return quotaLevel(b.fraction, b.exceeded);
}

/** The global budget of a period, if there is one. */
export function globalBudget(budgets: BudgetView[], period: BudgetPeriod): BudgetView | undefined {
  return budgets.find((b) => b.scope === "global" && b.period === period);
}

/** The scopes a budget may have: global, then every chain, then every provider. */
export function budgetScopes(chains: string[], providers: string[]): string[] {
  return ["global", ...chains.map((c) => `chain:${c}`), ...providers.map((p) => `provider:${p}`)];
}

/** The draft in the budget form: text as typed. */
export interface BudgetDraft {
  scope: string;
  period: BudgetPeriod | "";
  limit: string;
  action: BudgetAction | "";
}

/**
 * Checks a budget draft the way the server does, so most mistakes are
 * explained at once; `others` are the other budgets that will be saved with
 * it. Keys name the field: scope, period, limit, action.
 */
export function validateBudget(d: BudgetDraft, scopes: string[], others: BudgetInput[]): Record<string, string> {
  const e: Record<string, string> = {};
  if (!d.scope) e.scope = "Choose what the budget covers.";
  else if (!scopes.includes(d.scope)) e.scope = `There is no ${scopeLabel(d.scope)} any more; choose another scope.`;
  if (d.period !== "day" && d.period !== "month") e.period = "Choose a day or a month.";
  const t = d.limit.trim();
  const n = Number(t);
  if (!t) e.limit = "Enter the most to spend, e.g. 1.00.";
  else if (!Number.isFinite(n)) e.limit = "Enter an amount in dollars, e.g. 1.50.";
  else if (n <= 0) e.limit = "The limit must be more than $0.";
  else if (!/^\d*\.?\d+$|^\d+\.$/.test(t)) e.limit = "Enter an amount in dollars, e.g. 1.50.";
  if (d.action !== "free-only" && d.action !== "block") e.action = "Choose what happens when the budget is spent.";
  if (!e.scope && !e.period && others.some((o) => o.scope === d.scope && o.period === d.period))
    e.scope = `There is already a ${PERIOD_WORDS[d.period as BudgetPeriod]} budget for ${scopeLabel(d.scope)}; edit that one.`;
  return e;
}

// ---- Limits and reset rules ----

export type ResetForm = "daily" | "rolling" | "weekly" | "monthly";

export interface ResetParts {
  form: ResetForm;
  /** "HH:MM" */
  time: string;
  /** IANA zone or UTC. */
  zone: string;
  /** mon..sun, for weekly. */
  weekday: string;
  /** 1..31, for monthly. */
  day: string;
}

export const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

export const RESET_FORMS: { form: ResetForm; label: string; example: string }[] = [
  { form: "daily", label: "Daily at a time", example: "daily 00:00 UTC" },
  { form: "rolling", label: "Rolling 24 hours", example: "rolling 24h" },
  { form: "weekly", label: "Weekly on a day", example: "weekly mon 00:00 UTC" },
  { form: "monthly", label: "Monthly on a day", example: "monthly 1 00:00 UTC" },
];

export const RESET_HELP =
  'A reset rule is one of "daily HH:MM TZ", "rolling 24h", "weekly mon HH:MM TZ" or "monthly D HH:MM TZ", where TZ is UTC or a zone name such as Europe/Berlin.';

export const DEFAULT_RESET: ResetParts = { form: "daily", time: "00:00", zone: "UTC", weekday: "mon", day: "1" };

const TIME_RE = /^([01]\d|2[0-3]):[0-5]\d$/;
const ZONE_RE = /^(UTC|[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)+|[A-Z]{3,5})$/;

/** Reads a reset rule into its parts; null when it is none of the four forms. */
export function parseReset(s: string): ResetParts | null {
  const t = s.trim().replace(/\s+/g, " ");
  if (/^rolling 24h$/i.test(t)) return { ...DEFAULT_RESET, form: "rolling" };
  let m = /^daily (\d{1,2}:\d{2}) (\S+)$/i.exec(t);
  if (m) return { ...DEFAULT_RESET, form: "daily", time: pad5(m[1]), zone: m[2] };
  m = /^weekly ([a-z]{3}) (\d{1,2}:\d{2}) (\S+)$/i.exec(t);
  if (m && WEEKDAYS.includes(m[1].toLowerCase()))
    return { ...DEFAULT_RESET, form: "weekly", weekday: m[1].toLowerCase(), time: pad5(m[2]), zone: m[3] };
  m = /^monthly (\d{1,2}) (\d{1,2}:\d{2}) (\S+)$/i.exec(t);
  if (m) return { ...DEFAULT_RESET, form: "monthly", day: String(Number(m[1])), time: pad5(m[2]), zone: m[3] };
  return null;
}

function pad5(time: string): string {
  return time.length === 4 ? "0" + time : time;
}

/** Writes the parts as the rule the server reads. */
export function composeReset(p: ResetParts): string {
  switch (p.form) {
    case "rolling":
      return "rolling 24h";
    case "weekly":
      return `weekly ${p.weekday} ${p.time} ${p.zone.trim()}`;
    case "monthly":
      return `monthly ${Number(p.day)} ${p.time} ${p.zone.trim()}`;
    default:
      return `daily ${p.time} ${p.zone.trim()}`;
  }
}

/** Checks the parts of a reset rule; keys are time, zone, day. */
export function validateReset(p: ResetParts): Record<string, string> {
  const e: Record<string, string> = {};
  if (p.form === "rolling") return e;
  if (!TIME_RE.test(p.time)) e.time = "Enter a time as HH:MM, e.g. 08:00.";
  if (!ZONE_RE.test(p.zone.trim())) e.zone = "Enter UTC or a zone name such as Europe/Berlin.";
  if (p.form === "monthly") {
    const d = Number(p.day);
    if (!/^\d+$/.test(p.day.trim()) || d < 1 || d > 31) e.day = "Enter a day of the month from 1 to 31.";
  }
  if (p.form === "weekly" && !WEEKDAYS.includes(p.weekday)) e.day = "Choose a weekday.";
  return e;
}

/**
 * A limit as typed: blank means no limit; otherwise a whole number, 0 or
 * more. Returns the error, or "" when it is fine.
 */
export function limitFieldError(text: string): string {
  const t = text.trim();
  if (!t) return "";
  if (!/^\d+$/.test(t)) return "Enter a whole number, 0 or more (blank for no limit).";
  return "";
}

/** A price per million tokens as typed: blank or a number, 0 or more. */
export function priceFieldError(text: string): string {
  const t = text.trim();
  if (!t) return "";
  if (!/^\d*\.?\d+$|^\d+\.$/.test(t) || !Number.isFinite(Number(t))) return "Enter a price in dollars per million tokens, 0 or more.";
  return "";
}

/** A credit expiry date as typed: blank or YYYY-MM-DD. */
export function dateFieldError(text: string): string {
  const t = text.trim();
  if (!t) return "";
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(t);
  if (!m) return "Enter a date as YYYY-MM-DD.";
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  if (d.getMonth() !== Number(m[2]) - 1 || d.getDate() !== Number(m[3])) return "That date does not exist.";
  return "";
}

/** A paid model without a price, which a money budget refuses. */
export interface UnpricedModel {
  provider: string;
  model: string;
}

/**
 * The paid models without a price: for each provider, from GET /api/limits
 * when it lists the provider, else from the provider's view. A disabled
 * provider serves nothing and is left out.
 */
export function unpricedModels(providers: ProviderView[], entries?: LimitsEntry[] | null): UnpricedModel[] {
  return providers
    .filter((p) => !p.disabled)
    .flatMap((p) => {
      const listed = (entries ?? []).filter((e) => e.provider === p.name);
      const flagged = listed.length ? listed.filter((e) => e.model && e.unpriced).map((e) => e.model) : p.models.filter((m) => m.unpriced).map((m) => m.id);
      return flagged.map((model) => ({ provider: p.name, model }));
    });
}

/** What an unpriced paid model means, in one line for a flag's title. */
export const UNPRICED_HELP = "A paid model without a price: a money budget refuses it until you set its price.";
