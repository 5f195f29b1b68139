// How the dashboard sorts and searches the provider catalog.

import type { CatalogEntry, Offer } from "./types";

/**
 * The heading of each of the catalog's offers, in the order the picker
 * shows them. It is keyed by the generated union, so an offer the server
 * gains cannot go without a heading.
 */
const OFFER_HEADINGS: Record<Offer, string> = {
  free: "Free",
  trial: "Trial credit",
  paid: "Paid (your key)",
  local: "Local",
};

/** The catalog's offers in the order the picker shows them, with their headings. */
export const CATALOG_GROUPS = (Object.entries(OFFER_HEADINGS) as [Offer, string][]).map(([tier, label]) => ({ tier, label }));

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
 * The entries grouped by offer, in the picker's order, empty groups left
 * out. The server refuses a catalog with any other offer, so every entry
 * has a group.
 */
export function groupCatalog(entries: CatalogEntry[]): { tier: Offer; label: string; entries: CatalogEntry[] }[] {
  return CATALOG_GROUPS.map((g) => ({ ...g, entries: entries.filter((e) => e.tier === g.tier) })).filter((g) => g.entries.length);
}
