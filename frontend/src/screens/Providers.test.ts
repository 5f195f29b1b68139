import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import { catalogEntry, catalogView, fakeFetch, limits, localProvider, provider, snapshot } from "../test/fixtures";
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

describe("Providers: discovered local servers", () => {
  // Four servers discovery found, one in each state, after one configured provider.
  function withLocal() {
    live.applySnapshot(
      snapshot({
        providers: [
          provider("groq"),
          localProvider("ollama", {}, ["qwen2.5-coder:7b", "llama3.2:3b"]),
          localProvider("ollama-11500", { port: 11500, status: "gone" }, ["phi4:14b"]),
          localProvider("lmstudio", { kind: "lmstudio", port: 1234, status: "hidden" }, ["gemma-3-4b"]),
          localProvider("local", { kind: "openai", port: 8080, status: "foreign", owner: "bob" }, ["tinyllama"]),
        ],
      }),
    );
  }

  it("lists each server as a provider with its status in words, port, source and models", () => {
    withLocal();
    render(Providers);
    const card = screen.getByTestId("provider-ollama");
    expect(screen.getByTestId("local-status-ollama").textContent).toBe("serving");
    expect(screen.getByTestId("local-found-ollama").textContent).toBe("ollama, found on port 11434");
    expect(card.textContent).toContain("port 11434");
    expect(within(card).getByRole("list", { name: "Models of ollama" }).textContent).toContain("qwen2.5-coder:7b");
    expect(within(card).getByRole("list", { name: "Models of ollama" }).textContent).toContain("llama3.2:3b");
    expect(screen.getByTestId("local-detail-ollama").textContent).toContain("Serves 2 models");

    expect(screen.getByTestId("local-status-ollama-11500").textContent).toBe("stopped answering");
    expect(screen.getByTestId("local-found-ollama-11500").textContent).toBe("ollama, found on port 11500");
    expect(screen.getByTestId("local-detail-ollama-11500").textContent).toContain("listed last");
    expect(screen.getByTestId("provider-ollama-11500").textContent).toContain("phi4:14b");
    expect(screen.getByTestId("local-status-lmstudio").textContent).toBe("hidden");
    expect(screen.getByTestId("local-status-local").textContent).toBe("another account's server");
    expect(screen.getByTestId("local-detail-local").textContent).toContain("Run by bob");

    // What comes from the server itself is not edited here: no key, no
    // delete, no switch that a discovered provider refuses.
    expect(within(card).queryByRole("button", { name: /key|Delete|Disable/ })).toBeNull();
    expect(within(card).queryByRole("checkbox")).toBeNull();
    for (const name of ["Rename", "Hide", "Limits…"]) expect(within(card).getByRole("button", { name })).toBeTruthy();
    expect(within(screen.getByTestId("provider-lmstudio")).getByRole("button", { name: "Show" })).toBeTruthy();
    // The configured provider keeps its own card, and the key prompt stays away.
    expect(screen.getByTestId("key-groq")).toBeTruthy();
    expect(screen.queryByTestId("local-serving")).toBeNull();
    expect(screen.queryByText("Add your first key")).toBeNull();
  });

  it("says what is serving instead of asking for a first key, and offers a key as the next step", async () => {
    live.applySnapshot(snapshot({ providers: [localProvider("ollama", {}, ["qwen2.5-coder:7b"]), localProvider("ollama-11500", { port: 11500, status: "gone" })] }));
    const f = fakeFetch(() => ({ body: catalogView() }));
    vi.stubGlobal("fetch", f.fn);
    render(Providers);
    expect(screen.queryByText("Add your first key")).toBeNull();
    expect(screen.queryByTestId("empty-providers")).toBeNull();
    const serving = screen.getByTestId("local-serving");
    expect(within(serving).getByRole("heading").textContent).toBe("ollama is serving");
    expect(serving.textContent!.replace(/\s+/g, " ")).toContain("ollama (found on port 11434) serves qwen2.5-coder:7b. Requests to auto already go there.");
    expect(serving.textContent).toContain("Next step: add a key");
    // The hand form does not push itself forward while something serves.
    expect(screen.queryByTestId("provider-form")).toBeNull();
    await fireEvent.click(within(serving).getByRole("button", { name: "Add a key from the catalog" }));
    expect(await screen.findByTestId("catalog-picker")).toBeTruthy();
    await fireEvent.click(within(serving).getByRole("button", { name: "Add a provider by hand" }));
    expect(screen.getByTestId("provider-form")).toBeTruthy();
  });

  it("asks for a first key when the only local server stopped answering", () => {
    live.applySnapshot(snapshot({ providers: [localProvider("ollama", { status: "gone" })] }));
    render(Providers);
    expect(screen.getByRole("heading", { name: "Add your first key" })).toBeTruthy();
    expect(screen.queryByTestId("local-serving")).toBeNull();
    expect(screen.getByTestId("local-status-ollama").textContent).toBe("stopped answering");
  });

  it("renames a server with a PATCH that carries only the new name, after checking it", async () => {
    withLocal();
    let refuse = false;
    const f = fakeFetch((method, url) =>
      url === "/api/state"
        ? { body: live.snapshot }
        : refuse
          ? { status: 400, body: { error: { message: "ollama-gpu is taken by a chain", param: "rename" } } }
          : { body: localProvider("ollama-gpu") },
    );
    vi.stubGlobal("fetch", f.fn);
    render(Providers);
    const card = screen.getByTestId("provider-ollama");
    await fireEvent.click(within(card).getByRole("button", { name: "Rename" }));
    const input = within(card).getByLabelText("New name for ollama");
    for (const [bad, why] of [["Ollama GPU", "lower-case letters"], ["groq", "A provider named groq already exists."], ["", "Enter the new name."]]) {
      await fireEvent.input(input, { target: { value: bad } });
      await fireEvent.click(within(card).getByRole("button", { name: "Save name" }));
      expect(screen.getByTestId("local-error-rename-ollama").textContent).toContain(why);
    }
    expect(f.calls).toEqual([]);

    await fireEvent.input(input, { target: { value: "ollama-gpu" } });
    await fireEvent.click(within(card).getByRole("button", { name: "Save name" }));
    await waitFor(() => expect(f.calls[0]).toEqual({ method: "PATCH", url: "/api/providers/ollama", body: { rename: "ollama-gpu" } }));
    expect((await within(card).findByTestId("local-note-ollama")).textContent).toContain("Renamed ollama to ollama-gpu");

    // The server's refusal shows next to the name.
    refuse = true;
    f.calls.length = 0;
    await fireEvent.click(within(card).getByRole("button", { name: "Rename" }));
    await fireEvent.input(within(card).getByLabelText("New name for ollama"), { target: { value: "ollama-gpu" } });
    await fireEvent.click(within(card).getByRole("button", { name: "Save name" }));
    expect((await within(card).findByTestId("local-error-rename-ollama")).textContent).toBe("ollama-gpu is taken by a chain");
  });

  it("hides a serving server and shows a hidden one with a PATCH of hidden alone", async () => {
    withLocal();
    const f = fakeFetch((method, url) => (url === "/api/state" ? { body: live.snapshot } : { body: localProvider("x") }));
    vi.stubGlobal("fetch", f.fn);
    render(Providers);
    await fireEvent.click(screen.getByTestId("local-hide-ollama"));
    await waitFor(() => expect(f.calls[0]).toEqual({ method: "PATCH", url: "/api/providers/ollama", body: { hidden: true } }));
    expect((await screen.findByTestId("local-note-ollama")).textContent).toContain("ollama is hidden");
    f.calls.length = 0;
    await fireEvent.click(screen.getByTestId("local-hide-lmstudio"));
    await waitFor(() => expect(f.calls[0]).toEqual({ method: "PATCH", url: "/api/providers/lmstudio", body: { hidden: false } }));
  });

  it("sets a server's limits with the limits form, starting from what is stored", async () => {
    withLocal();
    const f = fakeFetch((method, url) => {
      if (url === "/api/limits") return { body: [{ provider: "ollama", model: "", limits: limits({ concurrency: 1 }), price: null, credit_expires: "" }] };
      if (url === "/api/state") return { body: live.snapshot };
      return { body: {} };
    });
    vi.stubGlobal("fetch", f.fn);
    render(Providers);
    const card = screen.getByTestId("provider-ollama");
    await fireEvent.click(within(card).getByRole("button", { name: "Limits…" }));
    const form = await within(card).findByTestId("limits-form");
    const pick = within(form).getByTestId("limits-provider") as HTMLSelectElement;
    expect([...pick.options].map((o) => o.value)).toEqual(["ollama"]);
    expect((within(form).getByTestId("limits-concurrency") as HTMLInputElement).value).toBe("1");
    await fireEvent.input(within(form).getByTestId("limits-rpm"), { target: { value: "20" } });
    await fireEvent.click(within(form).getByRole("button", { name: "Save limits" }));
    await waitFor(() => expect(f.calls.find((c) => c.method === "PUT")).toEqual({
      method: "PUT",
      url: "/api/limits/ollama",
      body: { limits: { rpm: 20, concurrency: 1, reset: "daily 00:00 UTC" } },
    }));
    expect((await within(card).findByTestId("limits-saved")).textContent).toBe("Saved the limits of ollama.");
  });

  it("flags a paid model without a price and links to setting it", () => {
    live.applySnapshot(snapshot({ providers: [provider("openai", {
        tier: "own",
        models: [
          { id: "gpt-5", params_b: 0, context: 400000, max_output: 0, price: { input: 1.25, output: 10, cache_read: 0.125, cache_write: 0 } },
          { id: "gpt-5-new", params_b: 0, context: 400000, max_output: 0, unpriced: true },
        ],
      })] }));
    render(Providers);
    const flag = screen.getByTestId("unpriced-openai/gpt-5-new");
    expect(flag.textContent).toBe("no price");
    expect(flag.getAttribute("href")).toBe("#/budgets?provider=openai&model=gpt-5-new");
    expect(flag.getAttribute("title")).toContain("budget refuses it");
    expect(screen.queryByTestId("unpriced-openai/gpt-5")).toBeNull();
  });
});
