import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import { budget, fakeFetch } from "../test/fixtures";
import BudgetForm from "./BudgetForm.svelte";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const form = () => screen.getByTestId("budget-form");
const field = (label: string | RegExp) => within(form()).getByLabelText(label) as HTMLInputElement | HTMLSelectElement;
const submit = (name: RegExp = /^(Add|Save) budget$/) => fireEvent.click(within(form()).getByRole("button", { name }));

const existing = [budget("global", "day", { limit: 1, spent: 0.2 }), budget("chain:coding", "month", { limit: 20, action: "block" })];
const props = { budgets: existing, chains: ["auto", "coding"], providers: ["groq", "openai"] };

describe("BudgetForm", () => {
  it("offers every scope and explains both actions", () => {
    render(BudgetForm, props);
    const options = [...(field("Covers") as HTMLSelectElement).options].map((o) => o.value);
    expect(options).toEqual(["global", "chain:auto", "chain:coding", "provider:groq", "provider:openai"]);
    expect(screen.getByTestId("budget-action-help-free-only").textContent).toContain("paid backends are skipped");
    expect(screen.getByTestId("budget-action-help-block").textContent).toContain("HTTP 402");
  });

  it("checks the fields before calling the server", async () => {
    const f = fakeFetch(() => ({ status: 500 }));
    vi.stubGlobal("fetch", f.fn);
    render(BudgetForm, props);

    await submit();
    expect(screen.getByTestId("budget-error-limit").textContent).toBe("Enter the most to spend, e.g. 1.00.");
    // A daily global budget exists already.
    expect(screen.getByTestId("budget-error-scope").textContent).toContain("already a daily budget for all traffic");
    expect(field("Limit (dollars)").getAttribute("aria-invalid")).toBe("true");
    expect(screen.getByTestId("budget-form-error").textContent).toContain("Fix the fields");

    await fireEvent.input(field("Limit (dollars)"), { target: { value: "0" } });
    await submit();
    expect(screen.getByTestId("budget-error-limit").textContent).toBe("The limit must be more than $0.");
    await fireEvent.input(field("Limit (dollars)"), { target: { value: "-3" } });
    await submit();
    expect(screen.getByTestId("budget-error-limit").textContent).toBe("The limit must be more than $0.");
    expect(f.calls).toEqual([]);
  });

  it("adds a budget by sending the whole list", async () => {
    const f = fakeFetch((_m, _u, body) => ({ body: (body as object[]).map(() => budget("global", "day")) }));
    vi.stubGlobal("fetch", f.fn);
    const onsaved = vi.fn();
    render(BudgetForm, { ...props, onsaved });

    await fireEvent.change(field("Covers"), { target: { value: "provider:openai" } });
    await fireEvent.change(field("Per"), { target: { value: "month" } });
    await fireEvent.input(field("Limit (dollars)"), { target: { value: "10" } });
    await fireEvent.click(within(form()).getByRole("radio", { name: /^block/ }));
    await submit();

    await waitFor(() => expect(onsaved).toHaveBeenCalled());
    expect(f.calls).toEqual([
      {
        method: "PUT",
        url: "/api/budgets",
        body: [
          { scope: "global", period: "day", limit: 1, action: "free-only" },
          { scope: "chain:coding", period: "month", limit: 20, action: "block" },
          { scope: "provider:openai", period: "month", limit: 10, action: "block" },
        ],
      },
    ]);
  });

  it("edits a budget in place", async () => {
    const f = fakeFetch(() => ({ body: [] }));
    vi.stubGlobal("fetch", f.fn);
    render(BudgetForm, { ...props, editing: "chain:coding|month" });
    expect(screen.getByRole("heading", { name: "Edit budget" })).toBeTruthy();
    expect(field("Limit (dollars)").value).toBe("20");
    await fireEvent.input(field("Limit (dollars)"), { target: { value: "25.5" } });
    await submit(/Save budget/);
    await waitFor(() => expect(f.calls).toHaveLength(1));
    expect(f.calls[0].body).toEqual([
      { scope: "global", period: "day", limit: 1, action: "free-only" },
      { scope: "chain:coding", period: "month", limit: 25.5, action: "block" },
    ]);
  });

  it("shows the server's message next to the field its param names", async () => {
    const f = fakeFetch(() => ({
      status: 400,
      body: { error: { message: "chain \"ghost\" does not exist", type: "invalid_request_error", code: "invalid_value", param: "budgets[2].scope" } },
    }));
    vi.stubGlobal("fetch", f.fn);
    render(BudgetForm, props);
    await fireEvent.change(field("Covers"), { target: { value: "chain:auto" } });
    await fireEvent.input(field("Limit (dollars)"), { target: { value: "5" } });
    await submit();
    const err = await screen.findByTestId("budget-error-scope");
    expect(err.textContent).toBe('chain "ghost" does not exist');
    expect(field("Covers").getAttribute("aria-describedby")).toBe(err.id);
    expect(screen.queryByTestId("budget-form-error")).toBeNull();
  });

  it("shows an error about another budget, or none, at the button", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 400, body: { error: { message: "budgets[0].limit must be more than 0", param: "budgets[0].limit" } } })).fn);
    render(BudgetForm, props);
    await fireEvent.change(field("Covers"), { target: { value: "provider:groq" } });
    await fireEvent.input(field("Limit (dollars)"), { target: { value: "5" } });
    await submit();
    expect((await screen.findByTestId("budget-form-error")).textContent).toBe("budgets[0].limit must be more than 0");
    expect(screen.queryByTestId("budget-error-limit")).toBeNull();
  });
});
