// Number and time formatting done by hand.
//
// WebKitGTK under LANG=C reports the page language as "c", and every Intl
// constructor (and toLocaleString, which uses them) then throws
// "RangeError: invalid language tag". The dashboard must render there, so
// nothing in it formats through Intl: only toFixed, string padding and the
// Date getters, which do not depend on a locale.

const DASH = "—";

function finite(n: unknown): n is number {
  return typeof n === "number" && Number.isFinite(n);
}

/** Groups the digits of an integer in threes: 1234567 -> "1,234,567". */
export function fmtInt(n: number): string {
  if (!finite(n)) return DASH;
  const sign = n < 0 ? "-" : "";
  const digits = String(Math.round(Math.abs(n)));
  let out = "";
  for (let i = 0; i < digits.length; i++) {
    if (i > 0 && (digits.length - i) % 3 === 0) out += ",";
    out += digits[i];
  }
  return sign + out;
}

/**
 * Formats a number with at most `digits` decimals, dropping trailing zeros:
 * fmtNum(2.50, 2) -> "2.5".
 */
export function fmtNum(n: number, digits = 1): string {
  if (!finite(n)) return DASH;
  const fixed = n.toFixed(digits);
  const trimmed = fixed.includes(".") ? fixed.replace(/\.?0+$/, "") : fixed;
  const [int, frac] = trimmed.split(".");
  const grouped = fmtInt(Number(int));
  // Number("-0") loses the sign of values like -0.4, so put it back.
  const sign = int.startsWith("-") && !grouped.startsWith("-") ? "-" : "";
  return sign + grouped + (frac ? "." + frac : "");
}

/** Milliseconds as a person reads them: "412 ms", "1.23 s", "2 min 5 s". */
export function fmtMs(ms: number): string {
  if (!finite(ms)) return DASH;
  if (ms < 0) ms = 0;
  if (ms < 10) return `${fmtNum(ms, 1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${fmtNum(ms / 1000, 2)} s`;
  if (ms < 60_000) return `${fmtNum(ms / 1000, 1)} s`;
  const totalS = Math.round(ms / 1000);
  const m = Math.floor(totalS / 60);
  const s = totalS % 60;
  return s ? `${m} min ${s} s` : `${m} min`;
}

/** A latency percentile: 0 means no data and shows as a dash. */
export function fmtLatency(ms: number): string {
  return finite(ms) && ms > 0 ? fmtMs(ms) : DASH;
}

/** Nanoseconds (Go's time.Duration in JSON) to milliseconds. */
export function nsToMs(ns: number | undefined): number {
  return finite(ns) ? ns / 1e6 : 0;
}

/** A ratio 0..1 as a percentage: 0.987 -> "98.7%", 1 -> "100%". */
export function fmtPct(ratio: number): string {
  if (!finite(ratio)) return DASH;
  return `${fmtNum(ratio * 100, ratio >= 0.9995 || ratio <= 0 ? 0 : 1)}%`;
}

/** A rate such as requests per minute: "0", "0.5", "12", "1,204". */
export function fmtRate(n: number): string {
  if (!finite(n)) return DASH;
  if (n === 0) return "0";
  if (n < 10) return fmtNum(n, 1);
  return fmtInt(n);
}

function pad2(n: number): string {
  return n < 10 ? "0" + n : String(n);
}

function toDate(t: Date | string | number): Date | null {
  const d = t instanceof Date ? t : new Date(t);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** Local wall-clock time "14:03:07". */
export function fmtClock(t: Date | string | number): string {
  const d = toDate(t);
  if (!d) return DASH;
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

/** Local "hh:mm" for coarse axis ticks. */
export function fmtHourMinute(t: Date | string | number): string {
  const d = toDate(t);
  if (!d) return DASH;
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
}

/** Local date and time "2025-03-01 14:03:07". */
export function fmtDateTime(t: Date | string | number): string {
  const d = toDate(t);
  if (!d) return DASH;
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${fmtClock(d)}`;
}

/** A span of time in words: "42 s", "3 min", "2 h 5 min", "3 days". */
export function fmtSpan(ms: number): string {
  if (!finite(ms)) return DASH;
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  return `${Math.floor(h / 24)} days`;
}

/**
 * How long until a moment: "in 42 s"; a moment already past reads "now".
 * Times from far away (more than a day) get their date instead.
 */
export function fmtUntil(t: string | null | undefined, now: number): string {
  if (!t) return "";
  const d = toDate(t);
  if (!d) return "";
  const left = d.getTime() - now;
  if (left <= 500) return "now";
  if (left > 86_400_000) return `until ${fmtDateTime(d)}`;
  return `in ${fmtSpan(left)}`;
}

/** How long ago a moment was: "12 s ago". */
export function fmtAgo(t: string | null | undefined, now: number): string {
  if (!t) return "";
  const d = toDate(t);
  if (!d) return "";
  const ago = now - d.getTime();
  if (ago < 1500) return "just now";
  return `${fmtSpan(ago)} ago`;
}

/** A token count: 1234 -> "1,234"; large counts shorten: "1.2 M". */
export function fmtTokens(n: number): string {
  if (!finite(n)) return DASH;
  if (n >= 1_000_000) return `${fmtNum(n / 1_000_000, 1)} M`;
  return fmtInt(n);
}

/** A context window in tokens, as model cards write it: 131072 -> "128k". */
export function fmtContext(n: number): string {
  if (!finite(n) || n <= 0) return DASH;
  if (n >= 1_000_000) return `${fmtNum(n / 1_048_576, 1)}M`;
  if (n >= 1024) return `${fmtNum(n / 1024, 0)}k`;
  return String(n);
}

/**
 * A countdown to a moment, to the minute: "42 s", "12 min", "3 h 12 min",
 * "2 days 4 h". Counts down (floors), so it never shows more time than is
 * left. Empty for a missing or unreadable time; "0 s" once it has passed.
 */
export function fmtCountdown(t: string | null | undefined, now: number): string {
  if (!t) return "";
  const d = toDate(t);
  if (!d) return "";
  const s = Math.max(0, Math.floor((d.getTime() - now) / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const days = Math.floor(h / 24);
  const word = days === 1 ? "day" : "days";
  return h % 24 ? `${days} ${word} ${h % 24} h` : `${days} ${word}`;
}

/** "resets in 3 h 12 min"; "resets now" when the moment has passed; "" without a time. */
export function fmtResetsIn(t: string | null | undefined, now: number): string {
  const left = fmtCountdown(t, now);
  if (!left) return "";
  return left === "0 s" ? "resets now" : `resets in ${left}`;
}

/**
 * Money in dollars: "$1.02", "$20.00", "$1,250.00"; amounts under a dollar
 * keep up to four decimals ("$0.42", "$0.0012") and tinier ones read "<$0.0001".
 */
export function fmtMoney(n: number): string {
  if (!finite(n)) return DASH;
  const sign = n < 0 ? "-" : "";
  const a = Math.abs(n);
  if (a === 0) return "$0.00";
  if (a < 0.0001) return `${sign}<$0.0001`;
  // Under a dollar, keep up to four decimals (at least two): requests cost fractions of a cent.
  if (a < 1) return `${sign}$${a.toFixed(4).replace(/(\.\d\d\d*?)0+$/, "$1")}`;
  const [int, frac] = a.toFixed(2).split(".");
  return `${sign}$${fmtInt(Number(int))}.${frac}`;
}

/** A price per million tokens: "$0.15", "$0.075", "$3". */
export function fmtPrice(n: number): string {
  if (!finite(n)) return DASH;
  return `$${fmtNum(n, 4)}`;
}

/** A count shortened for a bar label: 950 -> "950", 312400 -> "312k", 1250000 -> "1.25M". */
export function fmtCompact(n: number): string {
  if (!finite(n)) return DASH;
  const a = Math.abs(n);
  if (a < 1000) return fmtInt(n);
  if (a < 10_000) return `${fmtNum(n / 1000, 1)}k`;
  if (a < 1_000_000) return `${fmtNum(n / 1000, 0)}k`;
  return `${fmtNum(n / 1_000_000, 2)}M`;
}

/** The local calendar date of a moment as "2026-11-30". */
export function fmtDay(t: Date | string | number): string {
  const d = toDate(t);
  if (!d) return DASH;
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** A "2026-11-30" day as a short axis label "Nov 30"; other text comes back as is. */
export function fmtDayShort(day: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return day;
  return `${MONTHS[Number(m[2]) - 1] ?? m[2]} ${Number(m[3])}`;
}

/**
 * The last `n` local calendar days ending with the day of `now`, oldest
 * first: lastDays(3, now) -> ["2026-11-28", "2026-11-29", "2026-11-30"].
 */
export function lastDays(n: number, now: number): string[] {
  const end = new Date(now);
  const out: string[] = [];
  for (let i = n - 1; i >= 0; i--) {
    // Noon, so a daylight-saving change never lands on the previous day.
    out.push(fmtDay(new Date(end.getFullYear(), end.getMonth(), end.getDate() - i, 12)));
  }
  return out;
}

/** A size in bytes: "512 B", "1.5 KB", "256 MB". */
export function fmtBytes(n: number): string {
  if (!finite(n)) return DASH;
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? fmtInt(n) : fmtNum(n, 1)} ${units[i]}`;
}
