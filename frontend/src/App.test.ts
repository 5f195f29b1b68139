import { cleanup, render, screen } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import App from "./App.svelte";
import { live } from "./lib/live.svelte";
import { nav } from "./lib/nav.svelte";
import { snapshot } from "./test/fixtures";

beforeEach(() => {
  live.snapshot = null;
  live.online = false;
  live.failures = 0;
  nav.go("overview");
});
afterEach(() => cleanup());

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
});
