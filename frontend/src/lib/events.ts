import { fmtUntil } from "./format";
import type { EventKind, FreeLaneEvent } from "./types";

const KIND_WORDS: Record<EventKind, string> = {
  state: "breaker",
  cooldown: "rate limited",
  retired: "retired",
  restored: "back in service",
  key_disabled: "key rejected",
  key_restored: "key works again",
  health: "health",
  probe: "probe",
  offline: "machine offline",
  online: "machine online",
  quota_warning: "quota nearly used",
  quota_exhausted: "quota used up",
  budget_warning: "budget nearly spent",
  budget_exceeded: "budget spent",
  routing_paused: "routing paused",
  routing_resumed: "routing resumed",
  gear_switched: "gear switched",
  models_joined: "new models",
  local_found: "local server found",
  local_gone: "local server stopped",
  local_foreign: "local server of another user",
};

/** What an event's end is, in words, before "in 30 s". */
const UNTIL_WORDS: Partial<Record<EventKind, string>> = {
  cooldown: "Back",
  quota_exhausted: "Back",
  key_disabled: "Next check",
  state: "Tried again",
};

/**
 * One line describing an event, in sentences: "groq/llama — breaker
 * closed → open: 2 failures in a row. Tried again in 30 s."
 */
export function describeEvent(e: FreeLaneEvent, now: number): string {
  const subject = e.backend || e.provider || "FreeLane";
  let text = `${subject} — ${KIND_WORDS[e.kind] ?? e.kind.replace(/_/g, " ")}`;
  if (e.from && e.to) text += ` ${e.from.replace(/_/g, "-")} → ${e.to.replace(/_/g, "-")}`;
  const reason = (e.reason ?? "").trim().replace(/[\s:;,.]+$/, "");
  text += reason ? `: ${reason}.` : ".";
  const until = fmtUntil(e.until, now);
  if (until && until !== "now") text += ` ${UNTIL_WORDS[e.kind] ?? "Ends"} ${until}.`;
  return text;
}
