import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import App from "./App.svelte";
import { live } from "./lib/live.svelte";
import { nav } from "./lib/nav.svelte";
import { fakeFetch, snapshot } from "./test/fixtures";

beforeEach(() => {
  live.snapshot = null;
  live.online = false;
  live.failures = 0;
  nav.go("overview");
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe("App", () => {
  it("says it is connecting before the first snapshot", () => {
    render(App);
    expect(screen.getByRole("status").textContent).toContain("Connecting to FreeLane");
    expect(screen.queryByTestId("offline-banner")).toBeNull();
  });

  it("shows the offline banner while reconnecting, over the last data", async () => {
    live.applySnapshot(snapshot());
    live.failures = 1;
    render(App);
    expect(screen.getByTestId("offline-banner").textContent).toContain("Offline — reconnecting…");
    expect(screen.getByTestId("backend-row-groq/llama")).toBeTruthy();
  });

  it("says when the config file seeded the dashboard", () => {
    live.applySnapshot(snapshot({ seeded_from: "/etc/freelane.yaml" }));
    live.online = true;
    render(App);
    expect(screen.getByTestId("seeded-notice").textContent).toContain("/etc/freelane.yaml");
    expect(screen.queryByTestId("offline-banner")).toBeNull();
  });

  it("switches screens from the navigation", async () => {
    live.applySnapshot(snapshot());
    render(App);
    nav.go("connect");
    await Promise.resolve();
    expect(screen.getByTestId("endpoint").textContent).toBe("http://127.0.0.1:7788/v1");
    expect(screen.getByTestId("snippet-continue").textContent).toContain("apiBase: http://127.0.0.1:7788/v1");
    expect(screen.getByRole("link", { name: "Connect" }).getAttribute("aria-current")).toBe("page");
  });

  it("has a link for every screen, Budgets & limits and Usage included", async () => {
    live.applySnapshot(snapshot());
    render(App);
    expect(screen.getByTestId("nav-budgets").getAttribute("href")).toBe("#/budgets");
    expect(screen.getByTestId("nav-usage").getAttribute("href")).toBe("#/usage");
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
    nav.go("budgets");
    await Promise.resolve();
    expect(screen.getByRole("heading", { name: "Budgets & limits" })).toBeTruthy();
    expect(screen.getByTestId("nav-budgets").getAttribute("aria-current")).toBe("page");
  });

  it("says routing is paused and resumes it", async () => {
    live.applySnapshot(snapshot({ routing_paused: true, paused: false }));
    const f = fakeFetch((method, url) => {
      if (method === "PUT" && url === "/api/routing") return { body: { paused: false } };
      return { body: snapshot({ routing_paused: false }) };
    });
    vi.stubGlobal("fetch", f.fn);
    render(App);
    const notice = screen.getByTestId("routing-paused-notice");
    expect(notice.textContent).toContain("Routing is paused: /v1 answers 503 until you resume.");
    // The probe pause is another thing and stays hidden.
    expect(screen.queryByTestId("paused-notice")).toBeNull();
    await fireEvent.click(within(notice).getByRole("button", { name: "Resume" }));
    await waitFor(() => expect(screen.queryByTestId("routing-paused-notice")).toBeNull());
    expect(f.calls[0]).toEqual({ method: "PUT", url: "/api/routing", body: { paused: false } });
  });

  it("shows why resuming failed", async () => {
    live.applySnapshot(snapshot({ routing_paused: true }));
    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 500, body: { error: { message: "database is locked" } } })).fn);
    render(App);
    await fireEvent.click(screen.getByRole("button", { name: "Resume" }));
    expect((await screen.findByRole("alert")).textContent).toBe("database is locked");
    expect(screen.getByTestId("routing-paused-notice")).toBeTruthy();
  });
});
