import { fmtUntil } from "./format";
import type { BackendStatus } from "./types";

/** The colour family of a status light; the text always carries the meaning too. */
export type Tone = "ok" | "warn" | "bad" | "off";

export interface StatusInfo {
  label: string;
  tone: Tone;
  /** One sentence for the tooltip: what the status means for requests. */
  hint: string;
}

const STATUS: Record<BackendStatus, StatusInfo> = {
  serving: { label: "Serving", tone: "ok", hint: "Takes requests normally." },
  degraded: { label: "Degraded", tone: "warn", hint: "Serving, but recent failures or slow answers lowered its health." },
  half_open: { label: "Half-open", tone: "warn", hint: "Recovering: one trial request decides whether it serves again." },
  open: { label: "Open", tone: "bad", hint: "Tripped after failures; requests skip it until it is tried again." },
  cooling: { label: "Cooling down", tone: "warn", hint: "Rate limited; requests skip it until the limit resets." },
  retired: { label: "Retired", tone: "off", hint: "The model is gone or failed the daily probe." },
  key_disabled: {
    label: "Key refused",
    tone: "bad",
    hint: "The provider refused the key. FreeLane checks it again on its own and uses it as soon as a check passes; a new key under Providers & keys works at once.",
  },
  exhausted: {
    label: "Quota used up",
    tone: "warn",
    hint: "A daily or monthly quota is used up; requests skip it until the quota starts over.",
  },
  no_key: { label: "No key", tone: "off", hint: "Needs a key before it can serve; add one under Providers & keys." },
  disabled: { label: "Disabled", tone: "off", hint: "Its provider is disabled." },
};

/** Maps a backend status to the light's label, colour and hint. */
export function statusInfo(status: string): StatusInfo {
  return (
    STATUS[status as BackendStatus] ?? {
      label: status ? status.replace(/_/g, " ") : "Unknown",
      tone: "off",
      hint: "",
    }
  );
}

/**
 * When a status ends, as a sentence that follows the status reason: "Next
 * check in 2 min." for a refused key, "Back in 5 h." for a used-up quota.
 * "" when there is no time or it has passed (the next update brings the
 * new status).
 */
export function statusWhen(status: string, until: string | null | undefined, now: number): string {
  const when = fmtUntil(until, now);
  if (!when || when === "now") return "";
  switch (status) {
    case "key_disabled":
      return `Next check ${when}.`;
    case "exhausted":
      return `Back ${when}.`;
    case "cooling":
      return `Rate limited; back ${when}.`;
    case "open":
      return `Tried again ${when}.`;
    default:
      return `Ends ${when}.`;
  }
}

/**
 * A backend's status detail: the server's reason, a sentence, then when
 * the status ends. A reason written before the server ended its reasons
 * with a full stop gets one, so the two never run together as "…, in 57 min".
 */
export function statusDetail(reason: string, status: string, until: string | null | undefined, now: number): string {
  let r = reason.trim().replace(/[\s:;,]+$/, "");
  if (r && !/[.!?)]$/.test(r)) r += ".";
  return [r, statusWhen(status, until, now)].filter(Boolean).join(" ");
}

/** Statuses in which a backend takes requests. */
export function isServing(status: string): boolean {
  return status === "serving" || status === "degraded" || status === "half_open";
}
