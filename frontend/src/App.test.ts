import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import App from "./App.svelte";
import { auth } from "./lib/auth.svelte";
import { live } from "./lib/live.svelte";
import { nav } from "./lib/nav.svelte";
import { catalogView, fakeFetch, setupView, snapshot } from "./test/fixtures";

beforeEach(() => {
  live.snapshot = null;
  live.online = false;
  live.failures = 0;
  auth.signedOut = false;
  auth.loginFailed = false;
  // A page opened on a named screen, so the first-run check stays out of
  // the tests that are not about it.
  history.replaceState(null, "", "#/overview");
  nav.go("overview");
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe("App", () => {
  it("shows how to sign in instead of the screens when FreeLane answers 401", async () => {
    auth.signedOut = true;
    auth.loginFailed = true;
    render(App);
    const card = screen.getByTestId("signed-out");
    expect(card.textContent).toContain("freelane dashboard-url");
    expect(screen.getByTestId("login-failed").textContent).toContain("already used or has expired");
    expect(screen.getByTestId("connection").textContent).toContain("Signed out");
    expect(screen.queryByTestId("nav-overview")).toBeTruthy();
  });

  it("checks the session when the live feed drops, and signs out on 401", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 401, body: { error: { message: "run freelane dashboard-url" } } })).fn);
    live.failures = 1;
    render(App);
    await waitFor(() => expect(screen.getByTestId("signed-out")).toBeTruthy());
    expect(screen.queryByTestId("offline-banner")).toBeNull();
  });

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
    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 503, body: { error: { message: "not in this test", type: "server_error", param: null } } })).fn);
    render(App);
    nav.go("connect");
    await Promise.resolve();
    // Until the settings arrive, the address is the page's own: the
    // dashboard and /v1 share FreeLane's origin, whatever its port.
    expect(screen.getByTestId("endpoint").textContent).toBe(`${location.origin}/v1`);
    expect(screen.getByTestId("snippet-env").textContent).toContain(`OPENAI_BASE_URL=${location.origin}/v1`);
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
    expect(f.calls.find((c) => c.method === "PUT")).toEqual({ method: "PUT", url: "/api/routing", body: { paused: false } });
  });

  it("shows why resuming failed", async () => {
    live.applySnapshot(snapshot({ routing_paused: true }));
    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 500, body: { error: { message: "database is locked" } } })).fn);
    render(App);
    await fireEvent.click(screen.getByRole("button", { name: "Resume" }));
    expect((await screen.findByRole("alert")).textContent).toBe("database is locked");
    expect(screen.getByTestId("routing-paused-notice")).toBeTruthy();
  });

  describe("first run", () => {
    function firstRunFetch(needed: boolean) {
      const f = fakeFetch((method, url) => {
        if (url === "/api/setup") return { body: setupView({ needed }) };
        if (url === "/api/catalog") return { body: catalogView() };
        return { status: 404, body: { error: { message: `unexpected ${method} ${url}` } } };
      });
      vi.stubGlobal("fetch", f.fn);
      return f;
    }

    it("opens on the setup when nothing can serve and the URL names no screen", async () => {
      history.replaceState(null, "", location.pathname);
      live.applySnapshot(snapshot({ backends: [], providers: [] }));
      const f = firstRunFetch(true);
      render(App);
      await waitFor(() => expect(nav.screen).toBe("setup"));
      expect(location.hash).toBe("#/setup");
      expect(await screen.findByTestId("setup-needed")).toBeTruthy();
      expect(screen.getByTestId("nav-setup").getAttribute("aria-current")).toBe("page");
      // Only once: the user can go elsewhere and stay there.
      const asked = f.calls.length;
      nav.go("providers");
      await new Promise((r) => setTimeout(r, 20));
      expect(screen.getByRole("heading", { name: "Providers & keys" })).toBeTruthy();
      expect(nav.screen).toBe("providers");
      expect(f.calls.slice(asked).some((c) => c.url === "/api/setup")).toBe(false);
    });

    it("stays on the screen the URL names, and on the overview when something serves", async () => {
      live.applySnapshot(snapshot());
      let f = firstRunFetch(true);
      history.replaceState(null, "", "#/chains");
      nav.go("chains");
      render(App);
      await Promise.resolve();
      expect(f.calls.some((c) => c.url === "/api/setup")).toBe(false);
      expect(nav.screen).toBe("chains");
      cleanup();

      history.replaceState(null, "", location.pathname);
      nav.go("overview");
      f = firstRunFetch(false);
      render(App);
      await waitFor(() => expect(f.calls.some((c) => c.url === "/api/setup")).toBe(true));
      await Promise.resolve();
      expect(nav.screen).toBe("overview");
    });
  });
});
