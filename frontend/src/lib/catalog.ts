// How the dashboard sorts and searches the provider catalog.

import type { CatalogEntry } from "./types";

/** The catalog's tiers in the order the picker shows them, with their headings. */
export const CATALOG_GROUPS: { tier: string; label: string }[] = [
  { tier: "free", label: "Free" },
  { tier: "trial", label: "Trial credit" },
  { tier: "paid", label: "Paid (your key)" },
  { tier: "local", label: "Local" },
];

/**
 * Whether an entry matches every word of a search, by its name, its id or
 * one of its model ids, ignoring case.
 */
export function catalogMatches(e: CatalogEntry, q: string): boolean {
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return true;
  const hay = [e.name, e.id, ...(e.models ?? []).map((m) => m.id)].join(" ").toLowerCase();
  return words.every((w) => hay.includes(w));
}

/**
 * The entries grouped by tier, in the picker's order, empty groups left out.
 * A tier a newer catalog brings that this page has no heading for is still
 * shown, under "Other".
 */
export function groupCatalog(entries: CatalogEntry[]): { tier: string; label: string; entries: CatalogEntry[] }[] {
  const known = new Set(CATALOG_GROUPS.map((g) => g.tier));
  const out = CATALOG_GROUPS.map((g) => ({ ...g, entries: entries.filter((e) => e.tier === g.tier) }));
  out.push({ tier: "other", label: "Other", entries: entries.filter((e) => !known.has(e.tier)) });
  return out.filter((g) => g.entries.length);
}
