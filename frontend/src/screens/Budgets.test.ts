import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import { budget, fakeFetch, NOW, snapshot } from "../test/fixtures";
import Budgets from "./Budgets.svelte";

beforeEach(() => {
  live.now = NOW;
  live.applySnapshot(
    snapshot({
      budgets: [
        budget("global", "day", { limit: 1, spent: 0.42, reserved: 0.01 }),
        budget("provider:groq", "month", { limit: 10, spent: 10.5, exceeded: true, action: "block" }),
      ],
    }),
  );
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe("Budgets & limits", () => {
  it("lists budgets with their spend, hold and exceeded state", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
    render(Budgets);
    const day = screen.getByTestId("budget-row-global|day");
    expect(day.textContent).toContain("Daily budget for all traffic");
    expect(screen.getByTestId("budget-figures-global|day").textContent).toBe("$0.42 (+$0.01 in flight) of $1.00");
    expect(day.textContent).toContain("$0.57 left, resets in 12 h");
    expect(day.dataset.level).toBe("ok");
    expect(within(day).queryByText("exceeded")).toBeNull();

    const groq = screen.getByTestId("budget-row-provider:groq|month");
    expect(groq.dataset.level).toBe("full");
    expect(screen.getByTestId("budget-exceeded-provider:groq|month").textContent).toBe("exceeded");
    expect(groq.textContent).toContain("Paid requests get an error until it resets");
    // The limits form is there too, for the snapshot's providers.
    expect(screen.getByTestId("limits-form")).toBeTruthy();
  });

  it("removes a budget after asking, by sending the rest", async () => {
    const f = fakeFetch((method) => (method === "PUT" ? { body: [] } : { body: method === "GET" ? [] : snapshot() }));
    vi.stubGlobal("fetch", f.fn);
    render(Budgets);
    const row = screen.getByTestId("budget-row-global|day");
    await fireEvent.click(within(row).getByRole("button", { name: /Remove the daily budget/ }));
    await fireEvent.click(within(row).getByRole("button", { name: "Remove" }));
    await waitFor(() => expect(f.calls.some((c) => c.method === "PUT")).toBe(true));
    expect(f.calls.find((c) => c.method === "PUT")).toEqual({
      method: "PUT",
      url: "/api/budgets",
      body: [{ scope: "provider:groq", period: "month", limit: 10, action: "block" }],
    });
  });

  it("opens the form to edit a budget", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
    render(Budgets);
    await fireEvent.click(within(screen.getByTestId("budget-row-provider:groq|month")).getByRole("button", { name: /Edit/ }));
    const form = screen.getByTestId("budget-form");
    expect((within(form).getByLabelText("Covers") as HTMLSelectElement).value).toBe("provider:groq");
    expect((within(form).getByLabelText("Limit (dollars)") as HTMLInputElement).value).toBe("10");
    await fireEvent.click(within(form).getByRole("button", { name: "Cancel" }));
    expect(screen.queryByTestId("budget-form")).toBeNull();
  });
});
