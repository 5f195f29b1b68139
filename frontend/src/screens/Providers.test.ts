import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import { catalogEntry, catalogView, fakeFetch, provider, snapshot } from "../test/fixtures";
import Providers from "./Providers.svelte";

beforeEach(() => {
  live.applySnapshot(
    snapshot({
      providers: [
        provider("groq", { key: { set: false, masked: "", source: "none", env: ["GROQ_API_KEY"], file: "" } }),
        provider("cerebras", { key: { set: true, masked: "csk-...9f3e", source: "dashboard", env: [], file: "" } }),
        provider("ollama", { keyless: true, tier: "local", key: { set: false, masked: "", source: "keyless", env: [], file: "" } }),
      ],
    }),
  );
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe("Providers", () => {
  it("lists providers with the key masked and where it comes from", () => {
    render(Providers);
    expect(screen.getByTestId("masked-cerebras").textContent).toBe("csk-...9f3e");
    expect(screen.getByTestId("key-cerebras").textContent).toContain("added in the dashboard");
    expect(screen.getByTestId("key-groq").textContent).toContain("set GROQ_API_KEY or paste one");
    expect(screen.getByTestId("key-ollama").textContent).toContain("needs no key");
    expect(within(screen.getByTestId("key-ollama")).queryByRole("button")).toBeNull();
    // The form stays closed while providers exist.
    expect(screen.queryByTestId("provider-form")).toBeNull();
  });

  it("says a key comes from the config file and offers no way to change it here", () => {
    live.applySnapshot(
      snapshot({
        providers: [
          provider("groq", { key: { set: true, masked: "gsk_...a1b2", source: "env", env: ["GROQ_API_KEY"], file: "/etc/freelane.yaml" } }),
          provider("lit", { key: { set: true, masked: "sk-...9f3e", source: "config", env: [], file: "/etc/freelane.yaml" } }),
          provider("gone", { key: { set: false, masked: "", source: "none", env: ["GONE_KEY"], file: "/etc/freelane.yaml" } }),
          provider("lab", { keyless: true, key: { set: false, masked: "", source: "keyless", env: [], file: "/etc/freelane.yaml" } }),
        ],
      }),
    );
    render(Providers);
    expect(screen.getByTestId("key-source-groq").textContent).toBe(
      "from GROQ_API_KEY, as the config file /etc/freelane.yaml says; the key comes from the config file, so change it there",
    );
    expect(screen.getByTestId("key-source-lit").textContent).toBe(
      "written in the config file /etc/freelane.yaml; the key comes from the config file, so change it there and restart FreeLane",
    );
    expect(screen.getByTestId("key-source-gone").textContent).toBe(
      "no key: set GONE_KEY and restart FreeLane (the config file /etc/freelane.yaml reads the key from it)",
    );
    expect(screen.getByTestId("key-source-lab").textContent).toBe("needs no key, as the config file /etc/freelane.yaml says");
    for (const name of ["groq", "lit", "gone", "lab"]) {
      expect(within(screen.getByTestId(`key-${name}`)).queryByRole("button")).toBeNull();
    }
  });

  it("pastes a key and shows the server's refusal next to it", async () => {
    const f = fakeFetch(() => ({ status: 400, body: { error: { message: "the key is empty or has spaces", param: "key" } } }));
    vi.stubGlobal("fetch", f.fn);
    render(Providers);
    const card = screen.getByTestId("provider-groq");
    await fireEvent.click(within(card).getByRole("button", { name: "Paste key" }));
    await fireEvent.input(within(card).getByLabelText("New key for groq"), { target: { value: "gsk test" } });
    await fireEvent.click(within(card).getByRole("button", { name: "Save key" }));
    expect((await within(card).findByTestId("key-error-groq")).textContent).toBe("the key is empty or has spaces");
    expect(f.calls[0]).toEqual({ method: "PUT", url: "/api/providers/groq/key", body: { key: "gsk test" } });
  });

  it("shows the probe's answer or error from Test", async () => {
    let ok = true;
    const f = fakeFetch(() => ({
      body: ok
        ? { ok: true, backend: "cerebras/m1", latency_ms: 212, answer: "OK", error: "" }
        : { ok: false, backend: "cerebras/m1", latency_ms: 0, answer: "", error: "HTTP 401: invalid api key" },
    }));
    vi.stubGlobal("fetch", f.fn);
    render(Providers);
    const card = screen.getByTestId("provider-cerebras");
    await fireEvent.click(within(card).getByRole("button", { name: "Test" }));
    await waitFor(() => expect(within(card).getByTestId("test-result-cerebras").textContent).toContain("OK from cerebras/m1 in 212 ms"));
    expect(f.calls[0]).toMatchObject({ method: "POST", url: "/api/providers/cerebras/test" });

    ok = false;
    await fireEvent.click(within(card).getByRole("button", { name: "Test" }));
    await waitFor(() => expect(within(card).getByTestId("test-result-cerebras").textContent).toContain("HTTP 401: invalid api key"));
  });

  it("disables and deletes only after confirming", async () => {
    const state = live.snapshot!;
    const f = fakeFetch((method, url) =>
      url === "/api/state" ? { body: state } : method === "DELETE" ? { status: 204 } : { body: provider("groq", { disabled: true }) },
    );
    vi.stubGlobal("fetch", f.fn);
    render(Providers);
    const card = screen.getByTestId("provider-groq");
    await fireEvent.click(within(card).getByRole("button", { name: "Disable" }));
    await waitFor(() => expect(f.calls[0]).toEqual({ method: "PATCH", url: "/api/providers/groq", body: { disabled: true } }));

    f.calls.length = 0;
    await fireEvent.click(within(card).getByRole("button", { name: "Delete…" }));
    expect(card.textContent).toContain("remove it from every chain?");
    expect(f.calls.filter((c) => c.method === "DELETE")).toEqual([]);
    await fireEvent.click(within(card).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(f.calls[0]).toMatchObject({ method: "DELETE", url: "/api/providers/groq" }));
  });

  it("switches usage in streams with a PATCH that carries nothing else", async () => {
    const state = live.snapshot!;
    let refuse = false;
    const f = fakeFetch((method, url) =>
      url === "/api/state"
        ? { body: state }
        : refuse
          ? { status: 500, body: { error: { message: "the change could not be saved", param: null } } }
          : { body: provider("groq", { stream_usage: false }) },
    );
    vi.stubGlobal("fetch", f.fn);
    render(Providers);
    const card = screen.getByTestId("provider-groq");
    const box = within(card).getByRole("checkbox", { name: "Ask for usage in streams" }) as HTMLInputElement;
    expect(box.checked).toBe(true);
    await fireEvent.click(box);
    await waitFor(() => expect(f.calls[0]).toEqual({ method: "PATCH", url: "/api/providers/groq", body: { stream_usage: false } }));

    // A refused change puts the box back and says why.
    refuse = true;
    f.calls.length = 0;
    const other = within(screen.getByTestId("provider-cerebras")).getByRole("checkbox", { name: "Ask for usage in streams" }) as HTMLInputElement;
    await fireEvent.click(other);
    await waitFor(() => expect(within(screen.getByTestId("provider-cerebras")).getByRole("alert").textContent).toContain("could not be saved"));
    expect(other.checked).toBe(true);
  });

  it("opens the form with an empty state when there is no provider", () => {
    live.applySnapshot(snapshot({ providers: [], backends: [], chains: [] }));
    render(Providers);
    expect(screen.getByRole("heading", { name: "Add your first key" })).toBeTruthy();
    expect(screen.getByTestId("provider-form")).toBeTruthy();
  });

  it("says which catalog entry a provider comes from, and adds one from the catalog", async () => {
    live.applySnapshot(snapshot({ providers: [provider("groq", { catalog: "groq" }), provider("mine")] }));
    const f = fakeFetch((method, url) => {
      if (method === "POST" && url === "/api/catalog/cerebras") return { status: 201, body: { provider: provider("cerebras", { catalog: "cerebras" }), models: 4, message: "The key works: 4 models." } };
      if (url === "/api/state") return { body: snapshot() };
      return { body: catalogView({ providers: [catalogEntry("groq", { configured: ["groq"] }), catalogEntry("cerebras")] }) };
    });
    vi.stubGlobal("fetch", f.fn);
    render(Providers);
    expect(screen.getByTestId("catalog-of-groq").textContent).toBe("from the catalog: groq");
    expect(screen.queryByTestId("catalog-of-mine")).toBeNull();
    // The manual form stays.
    expect(screen.getByRole("button", { name: "Add provider" })).toBeTruthy();

    await fireEvent.click(screen.getByRole("button", { name: "Add from catalog" }));
    const picker = await screen.findByTestId("catalog-picker");
    expect((await within(picker).findByTestId("added-groq")).textContent).toBe("added as groq");
    await fireEvent.input(within(picker).getByTestId("key-cerebras"), { target: { value: "csk-1" } });
    await fireEvent.click(within(picker).getByTestId("add-cerebras"));
    expect((await screen.findByText(/Added cerebras\. The key works: 4 models\./, { selector: "p.notice span" })).textContent).toContain("Added cerebras.");
    expect(f.calls.find((c) => c.method === "POST")).toEqual({ method: "POST", url: "/api/catalog/cerebras", body: { key: "csk-1" } });
  });
});
