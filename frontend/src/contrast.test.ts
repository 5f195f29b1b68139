// The status colours of app.css are text colours as much as fills: "Open"
// in red, "Cooling down" in amber, "serving" in green, on cards, on the
// page and on their own tinted backgrounds. This reads the variables of
// both themes from the stylesheet itself and checks every such pair meets
// WCAG AA for normal text (4.5:1), so a colour made lighter later fails here.

/// <reference types="node" />
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// Read from disk (Vitest runs in the frontend directory): it hands CSS
// imports, ?raw ones too, to its CSS handling, which leaves them empty,
// and under happy-dom import.meta.url is no file URL.
const css = readFileSync("src/app.css", "utf8");

/** The custom properties of the first `:root { … }` rule in text. */
function rootVars(text: string): Record<string, string> {
  const m = /:root\s*\{([^}]*)\}/.exec(text);
  if (!m) throw new Error("no :root rule");
  const vars: Record<string, string> = {};
  for (const d of m[1].matchAll(/--([\w-]+)\s*:\s*([^;]+);/g)) vars[d[1]] = d[2].trim();
  return vars;
}

/** The light theme, and the dark one laid over it as the browser does. */
export function themes(text: string): { light: Record<string, string>; dark: Record<string, string> } {
  const light = rootVars(text);
  const at = text.indexOf("@media (prefers-color-scheme: dark)");
  if (at < 0) throw new Error("no dark theme");
  return { light, dark: { ...light, ...rootVars(text.slice(at)) } };
}

function channels(hex: string): [number, number, number] {
  const m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(hex);
  if (!m) throw new Error(`${hex} is not a #rgb or #rrggbb colour`);
  const h = m[1].length === 3 ? [...m[1]].map((c) => c + c).join("") : m[1];
  return [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16)) as [number, number, number];
}

/** WCAG 2 relative luminance. */
function luminance(hex: string): number {
  const [r, g, b] = channels(hex).map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG 2 contrast ratio of two colours, 1 to 21. */
export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

const AA = 4.5;
/** Colours that carry text. */
const TEXT = ["text", "muted", "accent", "ok", "warn", "bad", "off"];
/** Everything text is set on. */
const BACKGROUNDS = ["bg", "surface", "surface-2", "ok-bg", "warn-bg", "bad-bg", "info-bg"];
/** Text on a filled colour: a primary button, a danger button or count. */
const ON = [
  ["accent-text", "accent"],
  ["bad-on", "bad"],
];

describe("contrast", () => {
  it("computes WCAG ratios", () => {
    expect(contrast("#000000", "#ffffff")).toBeCloseTo(21, 5);
    expect(contrast("#fff", "#fff")).toBe(1);
    // #777 on white is the classic near miss.
    expect(contrast("#777777", "#ffffff")).toBeLessThan(AA);
    expect(contrast("#767676", "#ffffff")).toBeGreaterThanOrEqual(AA);
  });

  it("reads both themes from app.css", () => {
    const t = themes(css);
    for (const th of [t.light, t.dark]) for (const v of [...TEXT, ...BACKGROUNDS, "accent-text", "bad-on"]) expect(th[v], v).toMatch(/^#/);
    expect(t.dark.bg).not.toBe(t.light.bg);
  });

  for (const [name, vars] of Object.entries(themes(css))) {
    it(`every status colour is AA on every background (${name})`, () => {
      const fails: string[] = [];
      for (const fg of TEXT) {
        for (const bg of BACKGROUNDS) {
          const r = contrast(vars[fg], vars[bg]);
          if (r < AA) fails.push(`--${fg} ${vars[fg]} on --${bg} ${vars[bg]}: ${r.toFixed(2)}:1`);
        }
      }
      for (const [fg, bg] of ON) {
        const r = contrast(vars[fg], vars[bg]);
        if (r < AA) fails.push(`--${fg} ${vars[fg]} on --${bg} ${vars[bg]}: ${r.toFixed(2)}:1`);
      }
      expect(fails, `below ${AA}:1`).toEqual([]);
    });
  }
});
