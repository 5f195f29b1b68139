import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import { catalogEntry, catalogView, fakeFetch, provider, setupView, snapshot } from "../test/fixtures";
import type { CatalogView, SetupView } from "../lib/types";
import Setup from "./Setup.svelte";

type Handler = Parameters<typeof fakeFetch>[0];

/** The owner fields of a server run by this account. */
const trusted = { foreign: false, allowed: false, owner_uid: 1000, owner_name: "", dropped: 0 };

let setup: SetupView;
let catalog: CatalogView;
/** What GET /api/state answers; undefined for the fixture's snapshot. */
let state: ReturnType<typeof snapshot> | undefined;

/** Answers the screen's own loads from setup and catalog, and the rest from handler. */
function setupFetch(handler: Handler = () => ({ status: 404, body: { error: { message: "not in this test" } } })) {
  const f = fakeFetch((method, url, body) => {
    if (method === "GET" && url === "/api/setup") return { body: setup };
    if (method === "GET" && url === "/api/catalog") return { body: catalog };
    if (method === "GET" && url === "/api/state") return { body: state ?? snapshot() };
    return handler(method, url, body);
  });
  vi.stubGlobal("fetch", f.fn);
  return f;
}

beforeEach(() => {
  setup = setupView();
  catalog = catalogView();
  state = undefined;
  live.applySnapshot(snapshot({ backends: [], providers: [] }));
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe("Setup", () => {
  it("says nothing can serve yet, where it looked for local servers, and lists the free tiers then the trials", async () => {
    setupFetch();
    render(Setup);
    expect((await screen.findByTestId("setup-needed")).textContent).toContain("Nothing can serve yet");
    expect(screen.getByRole("heading", { level: 1 }).textContent).toBe("Setup");
    const localBox = screen.getByTestId("setup-local");
    expect(within(localBox).getByTestId("local-none").textContent).toContain("on ports 11434, 1234, 8080");
    expect(within(localBox).getByTestId("local-none").textContent).toContain("Ollama");
    expect(within(localBox).getByRole("button", { name: "Look again" })).toBeTruthy();

    const free = await screen.findByTestId("setup-free");
    const cards = [...free.querySelectorAll("[data-testid^='catalog-card-']")].map((c) => c.getAttribute("data-testid"));
    // Free first, then trial; paid entries have their own section, and
    // local servers are found rather than added from the catalog.
    expect(cards).toEqual(["catalog-card-groq", "catalog-card-cloudflare", "catalog-card-nebius"]);
    const own = screen.getByTestId("setup-own");
    expect(within(own).getByRole("heading", { name: "Your own keys" })).toBeTruthy();
    expect([...own.querySelectorAll("[data-testid^='catalog-card-']")].map((c) => c.getAttribute("data-testid"))).toEqual(["catalog-card-openai"]);
    expect(screen.queryByTestId("catalog-card-ollama")).toBeNull();
    // The route test comes first, above the catalog.
    const order = [...document.querySelectorAll("[data-testid='setup-tryit'], [data-testid='setup-free']")].map((e) => e.getAttribute("data-testid"));
    expect(order).toEqual(["setup-tryit", "setup-free"]);
    const groq = screen.getByTestId("catalog-card-groq");
    expect(groq.textContent).toContain("30 requests a minute");
    expect(groq.textContent).toContain("groq answers fast.");
    const signup = within(groq).getByTestId("signup-groq");
    expect(signup.getAttribute("href")).toBe("https://groq.example/keys");
    expect(signup.getAttribute("target")).toBe("_blank");
    expect(signup.getAttribute("rel")).toBe("noopener noreferrer");
    expect(screen.getByTestId("key-groq").getAttribute("type")).toBe("password");
    expect(screen.getByTestId("catalog-card-nebius").textContent).toContain("$1 of credit on sign-up");
    // Cloudflare needs its account id as well as the key.
    expect(within(screen.getByTestId("catalog-card-cloudflare")).getByLabelText("CLOUDFLARE_ACCOUNT_ID")).toBeTruthy();
  });

  it("shows what serves, keys found in the environment, entries already added, and local servers with their models", async () => {
    setup = setupView({
      needed: false,
      serving: 3,
      env_keys: [{ env: "GROQ_API_KEY", provider: "groq", adopted: true }],
      local: [
        {
          kind: "ollama",
          name: "Ollama",
          port: 11434,
          base_url: "http://127.0.0.1:11434/v1",
          provider: "ollama",
          up: true,
          needs_key: false,
          foreign: false,
          allowed: false,
          owner_uid: 1000,
          owner_name: "",
          dropped: 0,
          models: [
            { id: "qwen2.5-coder:7b", context: 8192, params_b: 7.6, embedding: false },
            { id: "nomic-embed-text", context: 2048, params_b: 0, embedding: true },
          ],
        },
        { kind: "vllm", name: "vLLM", port: 8000, base_url: "http://127.0.0.1:8000/v1", provider: "", up: false, needs_key: true, ...trusted, models: [] },
      ],
    });
    catalog = catalogView({
      providers: [catalogEntry("groq", { configured: ["groq"], env_found: "GROQ_API_KEY" }), catalogEntry("cerebras", { env_found: "CEREBRAS_API_KEY" })],
    });
    setupFetch();
    render(Setup);
    expect((await screen.findByTestId("setup-serving")).textContent).toContain("serving 3 backends");
    expect(screen.queryByTestId("setup-needed")).toBeNull();
    expect(screen.getByTestId("env-key-GROQ_API_KEY").textContent).toContain("groq");

    const ollama = screen.getByTestId("local-11434");
    expect(ollama.textContent).toContain("Ollama");
    expect(ollama.textContent).toContain("port 11434");
    expect(ollama.textContent).toContain("up");
    expect(ollama.textContent).toContain("ctx 8,192");
    expect(ollama.textContent).toContain("embeddings");
    const vllm = screen.getByTestId("local-8000");
    expect(vllm.textContent).toContain("stopped");
    expect(vllm.textContent).toContain("wants a key");

    expect((await screen.findByTestId("added-groq")).textContent).toBe("added as groq");
    expect(screen.queryByTestId("key-groq")).toBeNull();
    expect(screen.getByTestId("env-found-cerebras").textContent).toContain("CEREBRAS_API_KEY");
    expect(screen.getByTestId("key-cerebras")).toBeTruthy();
  });

  it("says when looking for local servers is off, and looks again on request", async () => {
    setup = setupView({ discovery: { enabled: false, ports: [] } });
    const f = setupFetch((method, url) => {
      if (method === "POST" && url === "/api/setup/scan") {
        return {
          body: setupView({
            discovery: { enabled: false, ports: [] },
            local: [{ kind: "lmstudio", name: "LM Studio", port: 1234, base_url: "http://127.0.0.1:1234/v1", provider: "lmstudio", up: true, needs_key: false, ...trusted, models: [] }],
          }),
        };
      }
      return { status: 404 };
    });
    render(Setup);
    expect((await screen.findByTestId("discovery-off")).textContent).toContain("turned off");
    await fireEvent.click(screen.getByTestId("setup-scan"));
    expect((await screen.findByTestId("local-1234")).textContent).toContain("LM Studio");
    expect(f.calls.some((c) => c.method === "POST" && c.url === "/api/setup/scan")).toBe(true);
  });

  it("adds a free tier with its key and account id, shows the server's message and refreshes", async () => {
    const f = setupFetch((method, url) => {
      if (method === "POST" && url === "/api/catalog/cloudflare") {
        catalog = catalogView({ providers: [catalogEntry("cloudflare", { name: "Cloudflare Workers AI", configured: ["cloudflare"] })] });
        setup = setupView({ needed: false, serving: 1 });
        return { status: 201, body: { provider: provider("cloudflare"), models: 12, message: "The key works: 12 models." } };
      }
      return { status: 404 };
    });
    render(Setup);
    const card = await screen.findByTestId("catalog-card-cloudflare");
    await fireEvent.input(within(card).getByLabelText("CLOUDFLARE_ACCOUNT_ID"), { target: { value: " acc123 " } });
    await fireEvent.input(screen.getByTestId("key-cloudflare"), { target: { value: "cf-secret" } });
    await fireEvent.click(screen.getByTestId("add-cloudflare"));

    expect((await screen.findByTestId("add-result-cloudflare")).textContent).toBe("Added cloudflare. The key works: 12 models.");
    expect(f.calls.find((c) => c.method === "POST")).toEqual({
      method: "POST",
      url: "/api/catalog/cloudflare",
      body: { key: "cf-secret", values: { CLOUDFLARE_ACCOUNT_ID: "acc123" } },
    });
    // Setup, catalog and the live state are read again, so the new backend shows as serving.
    await waitFor(() => expect(screen.getByTestId("setup-serving").textContent).toContain("serving 1 backend."));
    expect(screen.getByTestId("added-cloudflare").textContent).toBe("added as cloudflare");
    expect(f.calls.filter((c) => c.url === "/api/setup").length).toBe(2);
    expect(f.calls.filter((c) => c.url === "/api/catalog" && c.method === "GET").length).toBe(2);
    expect(f.calls.some((c) => c.url === "/api/state")).toBe(true);
  });

  it("shows a refused key next to its card, and asks for the key before sending", async () => {
    const f = setupFetch((method, url) => {
      if (method === "POST" && url === "/api/catalog/groq") {
        return { status: 400, body: { error: { message: "Groq refused the key (HTTP 401): check it and paste it again", param: "key" } } };
      }
      return { status: 404 };
    });
    render(Setup);
    await screen.findByTestId("catalog-card-groq");
    await fireEvent.click(screen.getByTestId("add-groq"));
    expect((await screen.findByTestId("add-error-groq")).textContent).toBe("Paste the key first.");
    expect(f.calls.some((c) => c.method === "POST")).toBe(false);

    await fireEvent.input(screen.getByTestId("key-groq"), { target: { value: "gsk-wrong" } });
    await fireEvent.click(screen.getByTestId("add-groq"));
    await waitFor(() => expect(screen.getByTestId("add-error-groq").textContent).toBe("Groq refused the key (HTTP 401): check it and paste it again."));
    expect(screen.queryByTestId("add-anyway-groq")).toBeNull();
    expect(screen.getByTestId("key-groq").getAttribute("aria-invalid")).toBe("true");
    expect(screen.queryByTestId("add-error-cloudflare")).toBeNull();
    expect(screen.queryByTestId("add-result-groq")).toBeNull();
  });

  it("tests the route and shows the backend that answered and every attempt", async () => {
    const f = setupFetch((method, url) => {
      if (method === "POST" && url === "/api/setup/test") {
        return {
          body: {
            ok: true,
            model: "auto",
            chain: "auto",
            backend: "cerebras/qwen",
            answer: "Hello!",
            latency_ms: 412,
            error: "",
            attempts: [
              { backend: "groq/llama", class: "quota", skipped: true, skip: "cooling", reason: "cooling down after HTTP 429", latency_ns: 0 },
              { backend: "mistral/small", class: "rate_limited", status: 429, latency_ns: 120_000_000, reason: "HTTP 429" },
              { backend: "cerebras/qwen", class: "ok", status: 200, latency_ns: 400_000_000 },
            ],
          },
        };
      }
      return { status: 404 };
    });
    render(Setup);
    await fireEvent.click(screen.getByTestId("setup-test"));
    const result = await screen.findByTestId("route-result");
    expect(within(result).getByTestId("route-backend").textContent).toBe("cerebras/qwen");
    expect(result.textContent).toContain("412 ms");
    expect(within(result).getByTestId("route-answer").textContent).toBe("Hello!");
    expect(within(result).getByTestId("attempt-0").textContent).toBe("skip(cooling down)");
    expect(within(result).getByTestId("attempt-1").textContent).toBe("429 rate limited");
    expect(within(result).getByTestId("attempt-2").textContent).toBe("ok");
    expect(f.calls.find((c) => c.url === "/api/setup/test")).toEqual({ method: "POST", url: "/api/setup/test", body: {} });
  });

  it("shows what to do when the test cannot be served", async () => {
    setupFetch((method, url) => {
      if (method === "POST" && url === "/api/setup/test") {
        return { status: 503, body: { error: { message: "No backend can serve yet: add a free-tier key or start Ollama.", type: "server_error" } } };
      }
      return { status: 404 };
    });
    render(Setup);
    await fireEvent.click(screen.getByTestId("setup-test"));
    expect((await screen.findByTestId("route-result")).textContent).toBe("No backend can serve yet: add a free-tier key or start Ollama.");
    expect(screen.queryByTestId("route-backend")).toBeNull();
  });

  it("shows a local server of another user as found but not used, allows it with its owner, and withdraws it", async () => {
    const foreign = {
      kind: "ollama",
      name: "Ollama",
      port: 11500,
      base_url: "http://127.0.0.1:11500/v1",
      provider: "",
      up: true,
      needs_key: false,
      foreign: true,
      allowed: false,
      owner_uid: 1001,
      owner_name: "bob",
      dropped: 2,
      models: [{ id: "qwen2.5:7b", context: 8192, params_b: 7.6, embedding: false }],
    };
    setup = setupView({ local: [foreign] });
    const f = setupFetch((method, url) => {
      if (method === "POST" && url === "/api/setup/local/allow") {
        return { body: setupView({ needed: false, serving: 1, local: [{ ...foreign, allowed: true, provider: "ollama-11500" }] }) };
      }
      if (method === "POST" && url === "/api/setup/local/withdraw") return { body: setupView({ local: [foreign] }) };
      return { status: 404, body: { error: { message: "not in this test" } } };
    });
    render(Setup);
    const row = await screen.findByTestId("local-11500");
    expect(within(row).getByTestId("local-11500-foreign").textContent).toBe("found, owned by another user");
    expect(row.textContent).toContain("Run by bob (user id 1001), not by you");
    expect(row.textContent).not.toContain("served as");
    expect(within(row).getByTestId("local-11500-dropped").textContent).toContain("2 model names were not valid");

    await fireEvent.click(within(row).getByTestId("local-11500-allow"));
    await waitFor(() => expect(screen.getByTestId("local-11500").textContent).toContain("you allowed it to serve"));
    const allow = f.calls.find((c) => c.url === "/api/setup/local/allow");
    expect(allow?.body).toEqual({ port: 11500, kind: "ollama", uid: 1001 });
    const allowed = screen.getByTestId("local-11500");
    expect(allowed.textContent).toContain("served as ollama-11500");
    expect(within(allowed).queryByTestId("local-11500-foreign")).toBeNull();
    expect(within(allowed).queryByTestId("local-11500-allow")).toBeNull();

    const withdraw = within(allowed).getByTestId("local-11500-withdraw") as HTMLButtonElement;
    await waitFor(() => expect(withdraw.disabled).toBe(false));
    await fireEvent.click(withdraw);
    await waitFor(() => expect(screen.getByTestId("local-11500-allow")).toBeTruthy());
    expect(f.calls.find((c) => c.url === "/api/setup/local/withdraw")?.body).toEqual({ port: 11500, kind: "ollama", uid: 1001 });
  });

  it("says why allowing failed", async () => {
    setup = setupView({
      local: [{ kind: "ollama", name: "Ollama", port: 11500, base_url: "http://127.0.0.1:11500/v1", provider: "", up: true, needs_key: false,
        foreign: true, allowed: false, owner_uid: 1001, owner_name: "", dropped: 0, models: [] }],
    });
    setupFetch((method, url) =>
      method === "POST" && url === "/api/setup/local/allow"
        ? { status: 404, body: { error: { message: "no local server of another user answers on port 11500 as \"ollama\" run by user id 1001; press Look again and allow it from the list" } } }
        : { status: 404 },
    );
    render(Setup);
    const row = await screen.findByTestId("local-11500");
    expect(row.textContent).toContain("Run by user id 1001, not by you");
    await fireEvent.click(within(row).getByTestId("local-11500-allow"));
    expect((await screen.findByTestId("allow-error")).textContent).toContain("press Look again");
  });

  it("names the variables FreeLane reads while none is set, and reads the setup again when a local server is found", async () => {
    const f = setupFetch();
    render(Setup);
    expect((await screen.findByTestId("setup-env-names")).textContent).toContain("GROQ_API_KEY, CEREBRAS_API_KEY");
    expect(f.calls.filter((c) => c.url === "/api/setup").length).toBe(1);

    setup = setupView({
      local: [{ kind: "ollama", name: "Ollama", port: 11434, base_url: "http://127.0.0.1:11434/v1", provider: "ollama", up: true, needs_key: false, ...trusted, models: [] }],
    });
    const s = snapshot({ backends: [], providers: [] });
    live.applySnapshot({ ...s, events: [...s.events, { time: "2025-03-01T12:00:09Z", kind: "local_found", level: "info", reason: "Ollama on port 11434" }] });
    expect((await screen.findByTestId("local-11434")).textContent).toContain("Ollama");
    expect(f.calls.filter((c) => c.url === "/api/setup").length).toBe(2);
  });

  it("filters the catalog by a search of names, ids and model ids, and says when nothing matches", async () => {
    setupFetch();
    render(Setup);
    const search = await screen.findByTestId("setup-search");
    expect(screen.getByTestId("setup-search-count").textContent).toBe("4 providers");
    await fireEvent.input(search, { target: { value: "CLOUD" } });
    expect([...document.querySelectorAll("[data-testid^='catalog-card-']")].map((c) => c.getAttribute("data-testid"))).toEqual(["catalog-card-cloudflare"]);
    expect(screen.getByTestId("setup-search-count").textContent).toBe("1 of 4 providers match");
    expect(screen.queryByTestId("setup-own")).toBeNull();
    // A model id finds its provider.
    await fireEvent.input(search, { target: { value: "gpt-4.1" } });
    expect([...document.querySelectorAll("[data-testid^='catalog-card-']")].map((c) => c.getAttribute("data-testid"))).toEqual(["catalog-card-openai"]);
    await fireEvent.input(search, { target: { value: "nothing-like-it" } });
    expect(screen.getByTestId("setup-search-none").textContent).toContain("No provider of the catalog matches");
    expect(document.querySelectorAll("[data-testid^='catalog-card-']").length).toBe(0);
    await fireEvent.input(search, { target: { value: "" } });
    expect(document.querySelectorAll("[data-testid^='catalog-card-']").length).toBe(4);
  });

  it("offers to add a key anyway when the vendor cannot be reached, and adds it on request", async () => {
    const f = setupFetch((method, url, body) => {
      if (method === "POST" && url === "/api/catalog/groq") {
        if (!(body as { unreachable_ok?: boolean }).unreachable_ok) {
          return {
            status: 502,
            body: { error: { message: "FreeLane could not reach Groq to check the key: add it anyway, or try again.", code: "provider_unreachable", param: "key" } },
          };
        }
        catalog = catalogView({ providers: [catalogEntry("groq", { configured: ["groq"] })] });
        state = snapshot({ backends: [], providers: [{ ...provider("groq"), key: { ...provider("groq").key, set: true, unchecked: true } }] });
        return {
          status: 201,
          body: { provider: provider("groq"), models: 0, checked: false, message: "The key is not checked yet: FreeLane could not reach Groq." },
        };
      }
      return { status: 404 };
    });
    render(Setup);
    await screen.findByTestId("catalog-card-groq");
    await fireEvent.input(screen.getByTestId("key-groq"), { target: { value: "gsk-offline" } });
    await fireEvent.click(screen.getByTestId("add-groq"));
    expect((await screen.findByTestId("add-error-groq")).textContent).toBe("FreeLane could not reach Groq to check the key: add it anyway, or try again.");
    expect(screen.getByTestId("try-again-groq")).toBeTruthy();
    await fireEvent.click(screen.getByTestId("add-anyway-groq"));
    expect((await screen.findByTestId("add-result-groq")).textContent).toContain("The key is not checked yet");
    const posts = f.calls.filter((c) => c.method === "POST" && c.url === "/api/catalog/groq").map((c) => c.body);
    expect(posts).toEqual([{ key: "gsk-offline" }, { key: "gsk-offline", unreachable_ok: true }]);
    await waitFor(() => expect(screen.getByTestId("added-groq").textContent).toBe("added as groq"));
    expect(screen.getByTestId("unchecked-groq").textContent).toContain("The key is not checked yet");
    expect(screen.queryByTestId("add-anyway-groq")).toBeNull();
  });
});
