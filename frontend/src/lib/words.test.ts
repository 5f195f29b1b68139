// Scans the dashboard's own words for raw Go and wire error text: every
// message a person reads is a sentence of the dashboard's or the server's,
// never Go's "dial tcp ...: no such host" or a bare "HTTP 401:".
import { describe, expect, it } from "vitest";

const sources = import.meta.glob(["../**/*.svelte", "../**/*.ts", "!../**/*.test.ts", "!../test/**", "!../lib/wire.gen.ts"], {
  query: "?raw",
  import: "default",
  eager: true,
}) as Record<string, string>;

/** Go's and the wire's error text, which the dashboard must never show. */
export const RAW: [string, RegExp][] = [
  ["a dial error", /dial (tcp|unix)/],
  ["a DNS error", /no such host/],
  ["a socket error", /connection refused|connection reset by peer|broken pipe/],
  ["an EOF", /\bEOF\b/],
  ["a context error", /context deadline exceeded|context canceled/],
  ["an HTTP status with a colon", /HTTP (\d+|\$\{[^}]+\}):/],
  ["a formatting error", /%!|<nil>/],
];

/** The words a file shows: its string literals and, for a component, its markup's text. */
function words(path: string, src: string): string[] {
  let code = src.replace(/<style[\s\S]*?<\/style>/g, "");
  const out: string[] = [];
  // Comments are for developers, not shown.
  code = code.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1").replace(/<!--[\s\S]*?-->/g, "");
  for (const m of code.matchAll(/"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'|`((?:[^`\\]|\\.)*)`/g)) {
    out.push(m[1] ?? m[2] ?? m[3] ?? "");
  }
  if (path.endsWith(".svelte")) {
    const markup = code.replace(/<script[\s\S]*?<\/script>/g, "");
    for (const m of markup.matchAll(/>([^<>{}]+)</g)) {
      const t = m[1].replace(/\s+/g, " ").trim();
      if (t) out.push(t);
    }
  }
  return out;
}

/**
 * The messages a file sets as an error, whole: the literal assigned to a
 * name with "error" in it (error = "...", errors[c] = `...`, loadError =
 * "...") or thrown as an ApiError.
 */
function errorMessages(src: string): string[] {
  const out: string[] = [];
  const re = /(?:\b\w*[eE]rror\w*(?:\[[^\]]*\])?\s*=(?!=)\s*|new ApiError\(\s*)(?:"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\]|\\.)*)`)/g;
  for (const m of src.matchAll(re)) out.push(m[1] ?? m[2] ?? "");
  // "" clears an error, and a single word is a field's name (errorParam).
  return out.filter((w) => /\s/.test(w.trim()));
}

describe("the dashboard's words", () => {
  const files = Object.entries(sources);

  it("are read from every screen and component", () => {
    expect(files.some(([p]) => p.endsWith("screens/Setup.svelte"))).toBe(true);
    expect(files.some(([p]) => p.endsWith("components/CatalogCard.svelte"))).toBe(true);
    expect(files.length).toBeGreaterThan(40);
  });

  it("carry no raw Go or wire error text", () => {
    const found: string[] = [];
    for (const [path, src] of files) {
      for (const w of words(path, src)) {
        for (const [what, re] of RAW) {
          if (re.test(w)) found.push(`${path}: ${what} in ${JSON.stringify(w)}`);
        }
      }
    }
    expect(found).toEqual([]);
  });

  it("set errors that never end with a colon or start with a comma", () => {
    const found: string[] = [];
    let read = 0;
    for (const [path, src] of files) {
      for (const w of errorMessages(src)) {
        read++;
        if (/:\s*$/.test(w)) found.push(`${path}: ends with a colon: ${JSON.stringify(w)}`);
        if (/^\s*,/.test(w)) found.push(`${path}: starts with a comma: ${JSON.stringify(w)}`);
        if (!/[.!?…)"”}]\s*$/.test(w)) found.push(`${path}: does not end a sentence: ${JSON.stringify(w)}`);
      }
    }
    expect(read).toBeGreaterThan(10);
    expect(found).toEqual([]);
  });

  it("would catch what a user once saw", () => {
    const seen = [
      'the key could not be checked: Get "https://api.groq.com/openai/v1/models": dial tcp: lookup api.groq.com on 10.255.255.53:53: no such host',
      "credential: HTTP 401:",
      "Could not save: EOF",
    ];
    for (const s of seen) expect(RAW.some(([, re]) => re.test(s)), s).toBe(true);
  });
});
