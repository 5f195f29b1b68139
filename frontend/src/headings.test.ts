// Every screen has exactly one h1, its title, and its headings go down one
// level at a time (h1, h2, h3), so a screen reader's outline of the page
// reads as the page looks. Each screen is rendered with the test fixtures
// and the answers its loads expect, and the sign-in screen through App.

import { cleanup, render, waitFor } from "@testing-library/svelte";
import type { Component } from "svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import App from "./App.svelte";
import { auth } from "./lib/auth.svelte";
import { live } from "./lib/live.svelte";
import { budget, catalogView, fakeFetch, setupView, snapshot, trace, usageRow } from "./test/fixtures";
import Budgets from "./screens/Budgets.svelte";
import Caching from "./screens/Caching.svelte";
import Chains from "./screens/Chains.svelte";
import Connect from "./screens/Connect.svelte";
import Overview from "./screens/Overview.svelte";
import Providers from "./screens/Providers.svelte";
import Requests from "./screens/Requests.svelte";
import Setup from "./screens/Setup.svelte";
import Usage from "./screens/Usage.svelte";

/** The heading levels of el's headings, in document order. */
export function headingLevels(el: ParentNode): number[] {
  return [...el.querySelectorAll("h1, h2, h3, h4, h5, h6")].map((h) => Number(h.tagName[1]));
}

/** What is wrong with an outline: not one h1, or a level skipped. */
export function outlineProblems(levels: number[]): string[] {
  const problems: string[] = [];
  const h1s = levels.filter((l) => l === 1).length;
  if (h1s !== 1) problems.push(`${h1s} h1 headings, want 1`);
  if (levels.length && levels[0] !== 1) problems.push(`starts at h${levels[0]}, want h1`);
  for (let i = 1; i < levels.length; i++) {
    if (levels[i] > levels[i - 1] + 1) problems.push(`h${levels[i - 1]} is followed by h${levels[i]}`);
  }
  return problems;
}

// The answers each screen's loads expect, enough to draw its sections.
function answer(method: string, url: string): { status?: number; body?: unknown } {
  const path = url.split("?")[0];
  if (method !== "GET") return { status: 405, body: { error: { message: "Not in this test." } } };
  switch (path) {
    case "/api/state":
      return { body: snapshot() };
    case "/api/catalog":
      return { body: catalogView() };
    case "/api/setup":
      return { body: setupView() };
    case "/api/limits":
    case "/api/aliases":
      return { body: [] };
    case "/api/budgets":
      return { body: [budget("global", "day", { limit: 1, spent: 0.42 })] };
    case "/api/requests":
      return { body: [trace("r1"), trace("r2")] };
    case "/api/usage":
      return { body: { from: "2026-11-01", to: "2026-11-30", group_by: "day", rows: [usageRow("2026-11-30")] } };
    case "/api/caching":
      return {
        body: { window: "24h0m0s", from: "2026-11-29T12:00:00Z", to: "2026-11-30T12:00:00Z", backends: [], sessions: [], warnings: [], cache: null },
      };
    case "/api/connect":
      return {
        body: { base: "http://127.0.0.1:7788", openai_base: "http://127.0.0.1:7788/v1", token_required: false, key: "freelane", model: "auto", tools: [], sdks: [] },
      };
  }
  return { status: 404, body: { error: { message: `${path} is not answered in this test.` } } };
}

beforeEach(() => {
  live.applySnapshot(snapshot());
  vi.stubGlobal("fetch", fakeFetch(answer).fn);
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  auth.signedOut = false;
});

const screens: [string, Component][] = [
  ["Overview", Overview as Component],
  ["Chains", Chains as Component],
  ["Providers", Providers as Component],
  ["Budgets", Budgets as Component],
  ["Usage", Usage as Component],
  ["Caching", Caching as Component],
  ["Requests", Requests as Component],
  ["Connect", Connect as Component],
  ["Setup", Setup as Component],
];

describe("headings", () => {
  it("finds what is wrong with an outline", () => {
    expect(outlineProblems([1, 2, 3, 2, 3])).toEqual([]);
    expect(outlineProblems([1, 3])).toEqual(["h1 is followed by h3"]);
    expect(outlineProblems([2, 3])).toEqual(["0 h1 headings, want 1", "starts at h2, want h1"]);
    expect(outlineProblems([1, 2, 1])).toEqual(["2 h1 headings, want 1"]);
  });

  for (const [name, screen] of screens) {
    it(`${name} has one h1 and skips no level`, async () => {
      const { container } = render(screen);
      // Let the screen's loads answer and draw what they bring.
      await waitFor(() => expect(container.querySelector("h1")).toBeTruthy());
      await new Promise((r) => setTimeout(r, 30));
      const levels = headingLevels(container);
      expect(outlineProblems(levels), `${name}: h${levels.join(" h")}`).toEqual([]);
    });
  }

  it("the sign-in screen has one h1", () => {
    auth.signedOut = true;
    const { container } = render(App);
    expect(outlineProblems(headingLevels(container))).toEqual([]);
  });
});
