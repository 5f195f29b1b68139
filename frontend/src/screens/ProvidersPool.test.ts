import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import { backend, fakeFetch, provider, snapshot } from "../test/fixtures";
import Providers from "./Providers.svelte";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe("Providers key pool", () => {
  it("shows each key's label, state and calls, and adds a pasted key to the pool", async () => {
    live.applySnapshot(
      snapshot({
        providers: [
          provider("groq", {
            keys: [
              { label: "k11111111", from: "api_key" },
              { label: "k22222222", from: "api_keys" },
            ],
          }),
        ],
        backends: [
          backend("groq@k11111111/m1", { provider: "groq", key: "k11111111", model: "m1", status: "cooling", reason: "HTTP 429", until: "2026-12-01T12:00:05Z", today: { calls: 3, failures: 1 } }),
          backend("groq@k22222222/m1", { provider: "groq", key: "k22222222", model: "m1", status: "key_disabled", reason: "the provider refused the key", today: { calls: 1, failures: 1 } }),
        ],
      }),
    );
    const f = fakeFetch(() => ({ status: 201, body: provider("groq") }));
    vi.stubGlobal("fetch", f.fn);
    render(Providers);
    expect(screen.getByTestId("pool-state-groq-k11111111").textContent).toContain("cooling until");
    expect(screen.getByTestId("pool-key-groq-k11111111").textContent).toContain("3 calls today");
    expect(screen.getByTestId("pool-state-groq-k22222222").textContent).toContain("refused");
    expect(screen.getByTestId("pool-key-groq-k22222222").textContent).toContain("the provider refused the key");
    await fireEvent.click(screen.getByTestId("add-key-groq"));
    await fireEvent.input(screen.getByLabelText("Another key for groq"), { target: { value: " gsk_third " } });
    await fireEvent.click(screen.getByRole("button", { name: "Add key" }));
    await waitFor(() => expect(f.calls.some((c) => c.method === "POST")).toBe(true));
    const call = f.calls.find((c) => c.method === "POST")!;
    expect(call.url).toContain("/api/providers/groq/keys");
    expect(call.body).toEqual({ key: "gsk_third" });
  });
});
