// Discovered local model servers as the dashboard shows them: they are
// providers like the configured ones, with a status of their own (serving,
// stopped answering, hidden, another account's) and the place they were
// found. Every screen that names a provider or a backend words them here,
// so that Providers, Chains, Budgets and the limit pickers say the same.

import type { ProviderLocal, ProviderView } from "./types";

/** A provider discovery found, with its server's details present. */
export type DiscoveredProvider = ProviderView & { local: ProviderLocal };

/** Whether discovery found the provider (rather than the config, the catalog or the environment). */
export function isDiscovered(p: ProviderView): p is DiscoveredProvider {
  return p.source === "discovered" && !!p.local;
}

/** Whether a discovered provider's server answers and may be sent requests now. */
export function isServingLocal(p: ProviderView): boolean {
  return isDiscovered(p) && p.local.status === "serving";
}

/** The status of a discovered server in a few words, and one sentence on what it means. */
export interface LocalStatusWords {
  label: string;
  tone: "ok" | "warn" | "off";
  detail: string;
}

export function localStatusWords(p: DiscoveredProvider): LocalStatusWords {
  const n = p.models.length;
  switch (p.local.status) {
    case "serving":
      return {
        label: "serving",
        tone: "ok",
        detail: n ? `Serves ${n === 1 ? "1 model" : `${n} models`} to auto and to any chain that names them.` : "Answers, but lists no model yet.",
      };
    case "gone":
      return {
        label: "stopped answering",
        tone: "warn",
        detail:
          "Its entries stay in your chains, shown as gone, and serve again as soon as it answers. The models below are the ones it listed last.",
      };
    case "hidden":
      return {
        label: "hidden",
        tone: "off",
        detail: "Neither auto nor any chain sends it requests; chains keep its entries, shown as gone. Show it to use it again.",
      };
    case "foreign":
      return {
        label: "another account's server",
        tone: "off",
        detail: `${p.local.owner ? `Run by ${p.local.owner}` : "Run by another account"} on this machine: it gets no request, since it would see every prompt. Allow it on the Setup screen if you trust it.`,
      };
    default:
      return { label: String(p.local.status || "unknown"), tone: "off", detail: "" };
  }
}

/**
 * A few words that set a discovered provider apart in a picker: "local,
 * found on port 11434", with its status when it cannot serve. "" for a
 * configured provider, which needs no note.
 */
export function providerNote(p: ProviderView): string {
  if (!isDiscovered(p)) return "";
  const found = p.local.found || `found on port ${p.local.port}`;
  const status = p.local.status === "serving" ? "" : `, ${localStatusWords(p).label}`;
  return `local, ${found}${status}`;
}

/** A provider's name with its note, for an option of a select. */
export function providerLabel(p: ProviderView): string {
  const note = providerNote(p);
  return note ? `${p.name} (${note})` : p.name;
}

/**
 * The provider and model a backend's text names: "provider/model" or
 * "provider@key/model"; the model may hold slashes of its own.
 */
export function splitBackend(backend: string): { provider: string; model: string } {
  const i = backend.indexOf("/");
  const head = i < 0 ? backend : backend.slice(0, i);
  const at = head.indexOf("@");
  return { provider: at < 0 ? head : head.slice(0, at), model: i < 0 ? "" : backend.slice(i + 1) };
}

/**
 * Why a backend a chain names cannot serve now, in words, from what the
 * provider list says of its provider. The chain keeps the entry and can be
 * saved with it; this only explains the "gone" next to it.
 */
export function goneReason(backend: string, providers: ProviderView[]): string {
  const { provider, model } = splitBackend(backend);
  const p = providers.find((x) => x.name === provider);
  if (!p) return `no provider is called ${provider} now`;
  if (isDiscovered(p)) {
    const where = p.local.found || `found on port ${p.local.port}`;
    switch (p.local.status) {
      case "gone":
        return `the local server ${p.name} (${where}) stopped answering; it serves again when it answers`;
      case "hidden":
        return `${p.name} is hidden; show it under Providers & keys to use it`;
      case "foreign":
        return `${p.name} is another account's server and is not allowed to serve`;
    }
  }
  if (p.disabled) return `${p.name} is disabled`;
  if (model && !p.models.some((m) => m.id === model)) return `${p.name} no longer lists the model ${model}`;
  return "it cannot serve now";
}

/** Names a list in words: "a", "a and b", "a, b and c". */
export function andList(items: string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}
