import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { LimitsEntry } from "../lib/types";
import { fakeFetch, limits, provider } from "../test/fixtures";
import LimitsForm from "./LimitsForm.svelte";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const providers = [
  provider("groq", { models: [{ id: "llama-3.3-70b", params_b: 70, context: 131072, max_output: 0 }, { id: "meta/llama-4", params_b: 17, context: 131072, max_output: 0 }] }),
  provider("openai", { tier: "own" }),
];
const entries: LimitsEntry[] = [
  { provider: "groq", model: "", limits: { rpm: 30, rpd: 1000, tpm: 6000, tpd: 500000, concurrency: 4, reset: "weekly mon 08:00 Europe/Berlin" }, price: null, credit_expires: "" },
  { provider: "groq", model: "llama-3.3-70b", limits: limits({ rpd: 500 }), price: { input: 0.15, output: 0.6, cache_read: 0.075, cache_write: 0 }, credit_expires: "2026-12-31" },
];

const form = () => screen.getByTestId("limits-form");
const byId = (id: string) => within(form()).getByTestId(id) as HTMLInputElement;
const save = () => fireEvent.click(within(form()).getByRole("button", { name: "Save limits" }));

describe("LimitsForm", () => {
  it("loads a provider's limits and saves them", async () => {
    const f = fakeFetch(() => ({ body: {} }));
    vi.stubGlobal("fetch", f.fn);
    render(LimitsForm, { providers, entries });

    expect(byId("limits-rpm").value).toBe("30");
    expect(byId("limits-tpd").value).toBe("500000");
    expect((within(form()).getByRole("radio", { name: /Weekly on a day/ }) as HTMLInputElement).checked).toBe(true);
    expect((byId("limits-reset-weekday") as unknown as HTMLSelectElement).value).toBe("mon");
    expect(byId("limits-reset-zone").value).toBe("Europe/Berlin");
    expect(byId("limits-reset-preview").textContent).toBe("weekly mon 08:00 Europe/Berlin");
    // Prices belong to models, not to the provider.
    expect(within(form()).queryByTestId("limits-price-input")).toBeNull();

    await fireEvent.input(byId("limits-rpd"), { target: { value: "2000" } });
    await fireEvent.input(byId("limits-concurrency"), { target: { value: "" } });
    await fireEvent.click(within(form()).getByRole("radio", { name: /Daily at a time/ }));
    await fireEvent.input(byId("limits-reset-time"), { target: { value: "07:30" } });
    await fireEvent.input(byId("limits-reset-zone"), { target: { value: "UTC" } });
    await save();
    await waitFor(() => expect(f.calls).toHaveLength(1));
    expect(f.calls[0]).toEqual({
      method: "PUT",
      url: "/api/limits/groq",
      body: { limits: { rpm: 30, rpd: 2000, tpm: 6000, tpd: 500000, reset: "daily 07:30 UTC" } },
    });
    expect((await screen.findByTestId("limits-saved")).textContent).toBe("Saved the limits of groq.");
  });

  it("saves a model's limits, price and credit expiry under its own path", async () => {
    const f = fakeFetch(() => ({ body: {} }));
    vi.stubGlobal("fetch", f.fn);
    render(LimitsForm, { providers, entries });
    await fireEvent.change(byId("limits-model"), { target: { value: "llama-3.3-70b" } });
    expect(byId("limits-rpd").value).toBe("500");
    expect(byId("limits-rpm").value).toBe("");
    expect(byId("limits-price-input").value).toBe("0.15");
    expect(byId("limits-price-cache-read").value).toBe("0.075");
    expect(byId("limits-price-cache-write").value).toBe("");
    expect(byId("limits-credit").value).toBe("2026-12-31");
    // No stored rule reads as the default, daily at midnight UTC.
    expect(byId("limits-reset-preview").textContent).toBe("daily 00:00 UTC");
    await fireEvent.input(byId("limits-price-output"), { target: { value: "0.79" } });
    await save();
    await waitFor(() => expect(f.calls).toHaveLength(1));
    expect(f.calls[0]).toEqual({
      method: "PUT",
      url: "/api/limits/groq/llama-3.3-70b",
      body: { limits: { rpd: 500, reset: "daily 00:00 UTC" }, price: { input: 0.15, output: 0.79, cache_read: 0.075, cache_write: 0 }, credit_expires: "2026-12-31" },
    });

    // A model id with a slash keeps it as a path separator.
    await fireEvent.change(byId("limits-model"), { target: { value: "meta/llama-4" } });
    await fireEvent.input(byId("limits-tpm"), { target: { value: "1000" } });
    await save();
    await waitFor(() => expect(f.calls).toHaveLength(2));
    // Blank prices are sent as 0 (free): null would leave a stored price as it was.
    expect(f.calls[1]).toEqual({
      method: "PUT",
      url: "/api/limits/groq/meta/llama-4",
      body: { limits: { tpm: 1000, reset: "daily 00:00 UTC" }, price: { input: 0, output: 0, cache_read: 0, cache_write: 0 }, credit_expires: "" },
    });
  });

  it("checks numbers, dates and the reset rule before sending", async () => {
    const f = fakeFetch(() => ({ body: {} }));
    vi.stubGlobal("fetch", f.fn);
    render(LimitsForm, { providers, entries });
    await fireEvent.input(byId("limits-rpm"), { target: { value: "-1" } });
    await fireEvent.input(byId("limits-tpm"), { target: { value: "2.5" } });
    await fireEvent.input(byId("limits-reset-zone"), { target: { value: "Mars time" } });
    await save();
    expect(screen.getByTestId("limits-error-limits.rpm").textContent).toContain("whole number, 0 or more");
    expect(screen.getByTestId("limits-error-limits.tpm").textContent).toContain("whole number");
    expect(screen.getByTestId("limits-error-limits.reset").textContent).toContain("zone");
    expect(byId("limits-rpm").getAttribute("aria-invalid")).toBe("true");

    await fireEvent.change(byId("limits-model"), { target: { value: "llama-3.3-70b" } });
    await fireEvent.input(byId("limits-price-input"), { target: { value: "-0.1" } });
    await save();
    expect(screen.getByTestId("limits-error-price.input").textContent).toContain("0 or more");
    expect(f.calls).toEqual([]);
  });

  it("puts the server's message at the field it names, and the server wins", async () => {
    const message = 'limits.reset: "daily 25:00 UTC" is not a reset rule; use "daily HH:MM TZ", "rolling 24h", "weekly mon HH:MM TZ" or "monthly D HH:MM TZ"';
    const f = fakeFetch(() => ({ status: 400, body: { error: { message, type: "invalid_request_error", code: "invalid_value", param: "limits.reset" } } }));
    vi.stubGlobal("fetch", f.fn);
    render(LimitsForm, { providers, entries });
    await save();
    const err = await screen.findByTestId("limits-error-limits.reset");
    expect(err.textContent).toBe(message);
    expect(screen.queryByTestId("limits-form-error")).toBeNull();

    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 400, body: { error: { message: "rpd must be at least rpm", param: "limits.rpd" } } })).fn);
    await save();
    expect((await screen.findByTestId("limits-error-limits.rpd")).textContent).toBe("rpd must be at least rpm");
    expect(screen.queryByTestId("limits-error-limits.reset")).toBeNull();

    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 404, body: { error: { message: "no provider named groq", param: null } } })).fn);
    await save();
    expect((await screen.findByTestId("limits-form-error")).textContent).toBe("no provider named groq");
  });

  it("falls back to the provider list's own fields", () => {
    const p = provider("groq", { limits: limits({ rpd: 14400, reset: "rolling 24h" }), models: [{ id: "m", params_b: 1, context: 1, max_output: 0, price: { input: 1, output: 2, cache_read: 0, cache_write: 0 } }] });
    render(LimitsForm, { providers: [p], entries: null });
    expect(byId("limits-rpd").value).toBe("14400");
    expect((within(form()).getByRole("radio", { name: /Rolling 24 hours/ }) as HTMLInputElement).checked).toBe(true);
  });
});
