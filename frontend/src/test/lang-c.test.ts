// WebKitGTK under LANG=C reports the language "c", and every Intl constructor
// then throws "RangeError: invalid language tag". These tests make Intl (and
// the toLocale* methods built on it) throw like that and check that the
// Overview, charts included, still renders with our own formatting.

import { cleanup, render, screen, waitFor } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeFetch, snapshot, update, usageRow } from "./fixtures";

const original = {
  NumberFormat: Intl.NumberFormat,
  DateTimeFormat: Intl.DateTimeFormat,
  numberToLocale: Number.prototype.toLocaleString,
  dateToLocale: Date.prototype.toLocaleString,
  dateToLocaleTime: Date.prototype.toLocaleTimeString,
  dateToLocaleDate: Date.prototype.toLocaleDateString,
  getContext: HTMLCanvasElement.prototype.getContext,
};

function invalidTag(): never {
  throw new RangeError("invalid language tag: c");
}

/** Makes every Intl entry point throw, as WebKitGTK does under LANG=C. */
function breakIntl(onlyFor?: string) {
  const throwing = (Orig: typeof Intl.NumberFormat | typeof Intl.DateTimeFormat) =>
    function (locales?: string | string[], options?: object) {
      if (onlyFor === undefined || locales === undefined || locales === onlyFor) invalidTag();
      return new (Orig as new (l?: string | string[], o?: object) => object)(locales, options);
    };
  (Intl as unknown as Record<string, unknown>).NumberFormat = throwing(original.NumberFormat);
  (Intl as unknown as Record<string, unknown>).DateTimeFormat = throwing(original.DateTimeFormat);
  Number.prototype.toLocaleString = invalidTag;
  Date.prototype.toLocaleString = invalidTag;
  Date.prototype.toLocaleTimeString = invalidTag;
  Date.prototype.toLocaleDateString = invalidTag;
}

function restoreIntl() {
  (Intl as unknown as Record<string, unknown>).NumberFormat = original.NumberFormat;
  (Intl as unknown as Record<string, unknown>).DateTimeFormat = original.DateTimeFormat;
  Number.prototype.toLocaleString = original.numberToLocale;
  Date.prototype.toLocaleString = original.dateToLocale;
  Date.prototype.toLocaleTimeString = original.dateToLocaleTime;
  Date.prototype.toLocaleDateString = original.dateToLocaleDate;
  HTMLCanvasElement.prototype.getContext = original.getContext;
}

/**
 * happy-dom has no canvas, so uPlot gets a stand-in 2D context that accepts
 * every call and records the text drawn (axis labels).
 */
function fakeCanvas(): string[] {
  const drawn: string[] = [];
  HTMLCanvasElement.prototype.getContext = function () {
    const props: Record<string | symbol, unknown> = {};
    return new Proxy(props, {
      get(target, prop) {
        if (prop in target) return target[prop];
        if (prop === "canvas") return this;
        if (prop === "measureText") return (t: string) => ({ width: t.length * 6, actualBoundingBoxAscent: 8, actualBoundingBoxDescent: 2 });
        if (prop === "fillText") return (t: string) => drawn.push(String(t));
        return () => undefined;
      },
      set(target, prop, value) {
        target[prop] = value;
        return true;
      },
    }) as unknown as CanvasRenderingContext2D;
  } as unknown as typeof HTMLCanvasElement.prototype.getContext;
  // uPlot builds its line paths with Path2D, which happy-dom lacks too.
  class FakePath2D {
    constructor() {
      return new Proxy(this, { get: (t, p) => (p in t ? t[p as keyof typeof t] : () => undefined) });
    }
  }
  (globalThis as Record<string, unknown>).Path2D ??= FakePath2D;
  return drawn;
}

afterEach(() => {
  cleanup();
  restoreIntl();
  vi.unstubAllGlobals();
});

describe("LANG=C", () => {
  it("renders the Overview, charts included, while every Intl call throws", async () => {
    const drawn = fakeCanvas();
    breakIntl();
    expect(() => new Intl.NumberFormat("c")).toThrow(RangeError);

    // Vitest gives each test file its own modules, and nothing above imports
    // the app, so the app and uPlot load here for the first time, with Intl
    // already broken.
    const { live } = await import("../lib/live.svelte");
    const { default: Overview } = await import("../screens/Overview.svelte");
    const snap = snapshot();
    live.applySnapshot(snap);
    live.applyUpdate(update({ time: new Date(Date.now() + 2000).toISOString(), backends: snap.backends, totals: snap.totals }));
    render(Overview);

    const row = screen.getByTestId("backend-row-groq/llama");
    expect(row.querySelector('[data-col="p50"]')?.textContent?.trim()).toBe("412 ms");
    expect(screen.getByTestId("requests-today").textContent).toBe("1,234");

    // uPlot loads lazily; wait until both charts are drawn.
    const latency = screen.getByTestId("chart-latency");
    const throughput = screen.getByTestId("chart-throughput");
    await waitFor(() => {
      expect(latency.querySelector(".uplot")).not.toBeNull();
      expect(throughput.querySelector(".uplot")).not.toBeNull();
    });
    expect(latency.textContent).not.toContain("unavailable");
    expect(throughput.textContent).not.toContain("unavailable");

    // Every label uPlot drew came from our formatters: latencies with units,
    // rates as plain numbers, times as hh:mm:ss. None of them went through
    // Intl (which would have thrown) or its stand-in (ISO strings).
    expect(drawn.length).toBeGreaterThan(0);
    for (const text of drawn) {
      expect(text, `drawn label ${JSON.stringify(text)}`).toMatch(/^(\d{2}:\d{2}(:\d{2})?|[\d.,]+( ms| s)?|—|0|[\d,]+ min( \d+ s)?)$/);
    }
    expect(drawn.some((t) => / ms$/.test(t) || / s$/.test(t))).toBe(true);
  });

  it("renders the usage chart's day axis and cost values without Intl", async () => {
    fakeCanvas();
    breakIntl();
    const { live } = await import("../lib/live.svelte");
    const { lastDays } = await import("../lib/format");
    const { default: Usage } = await import("../screens/Usage.svelte");
    live.applySnapshot(snapshot());
    const [d1, d2] = lastDays(2, Date.now());
    vi.stubGlobal(
      "fetch",
      fakeFetch(() => ({
        body: { from: d1, to: d2, group_by: "day,backend", rows: [usageRow(d1, { backend: "a/x", cost: 0.25 }), usageRow(d2, { backend: "b/y", cost: 1.5 })] },
      })).fn,
    );
    render(Usage);
    await waitFor(() => expect(screen.getByTestId("usage-row-a/x")).toBeTruthy());
    screen.getByTestId("usage-metric-cost").click();
    const chart = screen.getByTestId("usage-chart");
    await waitFor(() => expect(chart.dataset.bars).toBe("2"));
    // The bars are SVG: every axis label is text our formatters wrote.
    const labels = [...chart.querySelectorAll("svg text")].map((t) => t.textContent ?? "");
    expect(labels.length).toBeGreaterThan(0);
    for (const text of labels) {
      expect(text, `drawn label ${JSON.stringify(text)}`).toMatch(/^([A-Z][a-z]{2} \d{1,2}|\$[\d.,]+|0|)$/);
    }
    expect(labels.some((t) => /^[A-Z][a-z]{2} \d{1,2}$/.test(t))).toBe(true);
    expect(labels.some((t) => /^\$/.test(t))).toBe(true);
  });

  it("guardIntl falls back to en-US, or to a hand formatter", async () => {
    breakIntl("c");
    const { guardIntl } = await import("../lib/intl-guard");
    guardIntl();
    expect(new Intl.NumberFormat("c").format(1234.5)).toBe("1,234.5");
    expect(new Intl.NumberFormat("de-DE").format(1234.5)).toBe("1.234,5");
    expect(typeof new Intl.DateTimeFormat().resolvedOptions().timeZone).toBe("string");

    restoreIntl();
    breakIntl();
    // The guard is re-applied over the new, always-throwing constructors.
    guardIntl();
    expect(new Intl.NumberFormat("c").format(7)).toBe("7");
    expect(new Intl.DateTimeFormat().resolvedOptions().timeZone).toBe("UTC");
  });
});
