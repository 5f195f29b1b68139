// Hash routing: #/overview, #/chains, #/providers, #/budgets, #/usage,
// #/caching, #/requests, #/connect, #/setup.
// Hash URLs need no server support, so a reload or a bookmark of any screen
// works with the single embedded index.html.

export const SCREENS = [
  { id: "overview", label: "Overview" },
  { id: "chains", label: "Chains" },
  { id: "providers", label: "Providers & keys" },
  { id: "budgets", label: "Budgets & limits" },
  { id: "usage", label: "Usage" },
  { id: "caching", label: "Caching" },
  { id: "requests", label: "Requests" },
  { id: "connect", label: "Connect" },
  { id: "setup", label: "Setup" },
] as const;

export type ScreenId = (typeof SCREENS)[number]["id"];

export function parseHash(hash: string): ScreenId {
  const id = hash.replace(/^#\/?/, "").split(/[/?]/)[0];
  return (SCREENS.find((s) => s.id === id)?.id ?? "overview") as ScreenId;
}

/** Whether a URL hash names a screen, as a bookmark or a link does; "" and "#/" do not. */
export function hashNamesScreen(hash: string): boolean {
  return hash.replace(/^#\/?/, "").split(/[/?]/)[0] !== "";
}

class Nav {
  screen = $state<ScreenId>(typeof location === "undefined" ? "overview" : parseHash(location.hash));

  constructor() {
    if (typeof window !== "undefined") {
      window.addEventListener("hashchange", () => (this.screen = parseHash(location.hash)));
    }
  }

  go(id: ScreenId): void {
    this.screen = id;
    if (typeof location !== "undefined" && parseHash(location.hash) !== id) location.hash = `#/${id}`;
  }
}

export const nav = new Nav();

/** Settings the user picks that several screens share. */
export const ui = $state({ window: "1m" as "1m" | "5m" | "1h", chartBackend: "" });

/** A parameter of a hash's query: hashParam("#/requests?session=ab", "session") is "ab"; "" when absent. */
export function hashParam(hash: string, name: string): string {
  const i = hash.indexOf("?");
  return i < 0 ? "" : (new URLSearchParams(hash.slice(i + 1)).get(name) ?? "");
}
