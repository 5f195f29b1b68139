import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import { budget, fakeFetch, localProvider, NOW, provider, snapshot } from "../test/fixtures";
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

describe("Budgets & limits: discovered local servers", () => {
  beforeEach(() => {
    live.applySnapshot(
      snapshot({
        budgets: [budget("global", "day", { limit: 1 })],
        providers: [provider("groq"), localProvider("ollama", {}, ["qwen2.5-coder:7b"]), localProvider("ollama-11500", { port: 11500, status: "gone" })],
      }),
    );
  });

  it("offers a discovered server as a budget's scope, says what that means, and saves it", async () => {
    const f = fakeFetch((method, url) => (url === "/api/state" ? { body: live.snapshot } : { body: [] }));
    vi.stubGlobal("fetch", f.fn);
    render(Budgets);
    await fireEvent.click(screen.getByTestId("add-budget"));
    const form = screen.getByTestId("budget-form");
    const covers = within(form).getByLabelText("Covers") as HTMLSelectElement;
    const text = Object.fromEntries([...covers.options].map((o) => [o.value, o.textContent]));
    expect(text["provider:groq"]).toBe("provider groq (provider:groq)");
    expect(text["provider:ollama"]).toBe("provider ollama (provider:ollama), local, found on port 11434");
    expect(text["provider:ollama-11500"]).toBe("provider ollama-11500 (provider:ollama-11500), local, found on port 11500, stopped answering");
    expect(within(form).queryByTestId("budget-local-note")).toBeNull();

    await fireEvent.change(covers, { target: { value: "provider:ollama" } });
    expect(within(form).getByTestId("budget-local-note").textContent).toContain("ollama is a local server");
    await fireEvent.input(within(form).getByLabelText("Limit (dollars)"), { target: { value: "2" } });
    await fireEvent.click(within(form).getByRole("button", { name: "Add budget" }));
    await waitFor(() => expect(f.calls.find((c) => c.method === "PUT")).toEqual({
      method: "PUT",
      url: "/api/budgets",
      body: [
        { scope: "global", period: "day", limit: 1, action: "free-only" },
        { scope: "provider:ollama", period: "day", limit: 2, action: "free-only" },
      ],
    }));
  });

  it("offers a discovered server in the limits picker and saves its limits", async () => {
    const f = fakeFetch((method, url) => (url === "/api/state" ? { body: live.snapshot } : { body: method === "GET" ? [] : {} }));
    vi.stubGlobal("fetch", f.fn);
    render(Budgets);
    const form = screen.getByTestId("limits-form");
    const pick = within(form).getByTestId("limits-provider") as HTMLSelectElement;
    expect([...pick.options].map((o) => o.textContent)).toEqual([
      "groq",
      "ollama (local, found on port 11434)",
      "ollama-11500 (local, found on port 11500, stopped answering)",
    ]);
    await fireEvent.change(pick, { target: { value: "ollama" } });
    const model = within(form).getByTestId("limits-model") as HTMLSelectElement;
    expect([...model.options].map((o) => o.value)).toEqual(["", "qwen2.5-coder:7b"]);
    await fireEvent.input(within(form).getByTestId("limits-concurrency"), { target: { value: "1" } });
    await fireEvent.click(within(form).getByRole("button", { name: "Save limits" }));
    await waitFor(() => expect(f.calls.find((c) => c.method === "PUT")).toEqual({
      method: "PUT",
      url: "/api/limits/ollama",
      body: { limits: { concurrency: 1, reset: "daily 00:00 UTC" } },
    }));
  });

  describe("unpriced paid models", () => {
    const openai = provider("openai", {
        tier: "own",
        models: [
          { id: "gpt-5", params_b: 0, context: 400000, max_output: 0, price: { input: 1.25, output: 10, cache_read: 0.125, cache_write: 0 } },
          { id: "gpt-5-new", params_b: 0, context: 400000, max_output: 0, unpriced: true },
        ],
      });
    const limitsEntries = [
      { provider: "openai", model: "", limits: { rpm: 0, rpd: 0, tpm: 0, tpd: 0, concurrency: 0 }, price: null, credit_expires: "" },
      { provider: "openai", model: "gpt-5", limits: { rpm: 0, rpd: 0, tpm: 0, tpd: 0, concurrency: 0 }, price: { input: 1.25, output: 10, cache_read: 0.125, cache_write: 0 }, credit_expires: "" },
      { provider: "openai", model: "gpt-5-new", limits: { rpm: 0, rpd: 0, tpm: 0, tpd: 0, concurrency: 0 }, price: null, credit_expires: "", unpriced: true },
    ];
    afterEach(() => {
      location.hash = "";
    });

    it("lists them and picks one in the limits form to set its price", async () => {
      live.applySnapshot(snapshot({ providers: [provider("groq"), openai] }));
      vi.stubGlobal("fetch", fakeFetch((_m, url) => ({ body: url === "/api/limits" ? limitsEntries : [] })).fn);
      render(Budgets);
      const list = await screen.findByTestId("unpriced");
      expect(list.textContent?.replace(/\s+/g, " ")).toContain("This paid model has no price: budgets refuse it until you set one.");
      expect(list.textContent).toContain("openai/gpt-5-new");
      expect(list.textContent).not.toContain("openai/gpt-5 ");
      const form = screen.getByTestId("limits-form");
      expect((within(form).getByTestId("limits-provider") as HTMLSelectElement).value).toBe("groq");
      await fireEvent.click(screen.getByTestId("unpriced-set-openai/gpt-5-new"));
      await waitFor(() => expect((within(form).getByTestId("limits-model") as HTMLSelectElement).value).toBe("gpt-5-new"));
      expect((within(form).getByTestId("limits-provider") as HTMLSelectElement).value).toBe("openai");
      expect(within(form).getByTestId("limits-unpriced").textContent).toContain("has no price");
      await waitFor(() => expect(document.activeElement).toBe(within(form).getByTestId("limits-price-input")));
    });

    it("opens the limits form on the model a no-price flag links to", async () => {
      location.hash = "#/budgets?provider=openai&model=gpt-5-new";
      live.applySnapshot(snapshot({ providers: [provider("groq"), openai] }));
      const f = fakeFetch(() => ({ body: [] }));
      vi.stubGlobal("fetch", f.fn);
      render(Budgets);
      const form = screen.getByTestId("limits-form");
      await waitFor(() => expect((within(form).getByTestId("limits-model") as HTMLSelectElement).value).toBe("gpt-5-new"));
      expect((within(form).getByTestId("limits-provider") as HTMLSelectElement).value).toBe("openai");
      // The server's list names no model of openai: its provider view's flags stand in.
      await waitFor(() => expect(f.calls.some((c) => c.url === "/api/limits")).toBe(true));
      await Promise.resolve();
      expect(screen.getByTestId("unpriced").textContent).toContain("openai/gpt-5-new");
    });

    it("shows no list when every paid model has a price", async () => {
      vi.stubGlobal("fetch", fakeFetch(() => ({ body: [] })).fn);
      render(Budgets);
      await waitFor(() => expect(screen.getByTestId("limits-form")).toBeTruthy());
      expect(screen.queryByTestId("unpriced")).toBeNull();
    });
  });
});
