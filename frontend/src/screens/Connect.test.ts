import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import type { ConnectSetup, ToolSetup } from "../lib/types";
import { fakeFetch, NOW, snapshot } from "../test/fixtures";
import Connect from "./Connect.svelte";

const BASE = "http://127.0.0.1:7788";

function tool(over: Partial<ToolSetup> & Pick<ToolSetup, "id" | "name">): ToolSetup {
  return {
    dialect: "openai",
    endpoint: `${BASE}/v1/chat/completions`,
    env: [],
    shell: "",
    file: null,
    steps: [],
    write: "",
    notes: [],
    ...over,
  };
}

/** What GET /api/connect answers, shaped like the server's. */
function setup(model = "auto", tokenRequired = false): ConnectSetup {
  const key = tokenRequired ? "$FREELANE_TOKEN" : "freelane";
  return {
    base: BASE,
    openai_base: `${BASE}/v1`,
    token_required: tokenRequired,
    key,
    model,
    tools: [
      tool({
        id: "claude-code",
        name: "Claude Code",
        dialect: "anthropic",
        endpoint: `${BASE}/v1/messages`,
        env: [{ name: "ANTHROPIC_BASE_URL", value: BASE }],
        shell: `export ANTHROPIC_BASE_URL="${BASE}"\nexport ANTHROPIC_AUTH_TOKEN="${key}"\n`,
        file: { path: ".claude/settings.json", windows: ".claude\\settings.json", format: "json", content: `{\n  "env": {\n    "ANTHROPIC_MODEL": "${model}"\n  }\n}\n` },
        write: `freelane connect claude-code --write${model === "auto" ? "" : " --model " + model}`,
        notes: ["ANTHROPIC_BASE_URL is FreeLane's address without /v1."],
      }),
      tool({
        id: "codex",
        name: "Codex CLI",
        dialect: "openai-responses",
        endpoint: `${BASE}/v1/responses`,
        file: { path: ".codex/config.toml", windows: ".codex\\config.toml", format: "toml", content: `model_provider = "freelane"\nmodel = "${model}"\n` },
        write: "freelane connect codex --write",
      }),
      tool({
        id: "cline",
        name: "Cline",
        steps: ["API Provider: OpenAI Compatible", `Base URL: ${BASE}/v1`, `Model ID: ${model}`],
        notes: ["Roo Code has the same fields."],
      }),
    ],
  };
}

function connectFetch(answer: (url: string) => { status?: number; body?: unknown }) {
  return fakeFetch((_method, url) => answer(url));
}

beforeEach(() => {
  live.now = NOW;
  live.applySnapshot(snapshot());
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe("Connect", () => {
  it("shows a card per tool with its file, its write command and copy buttons", async () => {
    const f = connectFetch(() => ({ body: setup() }));
    vi.stubGlobal("fetch", f.fn);
    render(Connect);
    const claude = await screen.findByTestId("tool-claude-code");
    expect(f.calls[0]).toEqual({ method: "GET", url: "/api/connect?model=auto", body: undefined });
    expect(within(claude).getByRole("heading", { name: "Claude Code" })).toBeTruthy();
    expect(claude.textContent).toContain(`speaks anthropic at ${BASE}/v1/messages`);
    expect(screen.getByTestId("tool-claude-code-shell").textContent).toContain(`export ANTHROPIC_BASE_URL="${BASE}"`);
    expect(screen.getByTestId("tool-claude-code-path").textContent).toBe("~/.claude/settings.json");
    expect(claude.textContent).toContain("%USERPROFILE%\\.claude\\settings.json");
    expect(screen.getByTestId("tool-claude-code-file").textContent).toContain('"ANTHROPIC_MODEL": "auto"');
    expect(screen.getByTestId("tool-claude-code-write").textContent).toBe("freelane connect claude-code --write");
    for (const what of ["environment variables", "config file", "write command"]) {
      expect(within(claude).getByRole("button", { name: `Copy Claude Code ${what}` })).toBeTruthy();
    }
    expect(claude.textContent).toContain("without /v1");

    // Codex has a file and no variables: "In", not "Or in".
    const codex = screen.getByTestId("tool-codex");
    expect(codex.textContent).toContain("In ~/.codex/config.toml");
    expect(codex.textContent).not.toContain("Or in");
    expect(screen.getByTestId("endpoint").textContent).toBe(`${BASE}/v1`);
    expect(screen.getByTestId("api-key").textContent).toBe("freelane");
  });

  it("lists the steps of tools set up in their settings screen, without a file", async () => {
    vi.stubGlobal("fetch", connectFetch(() => ({ body: setup() })).fn);
    render(Connect);
    const cline = await screen.findByTestId("tool-cline");
    const steps = within(screen.getByTestId("tool-cline-steps")).getAllByRole("listitem").map((li) => li.textContent);
    expect(steps).toEqual(["API Provider: OpenAI Compatible", `Base URL: ${BASE}/v1`, "Model ID: auto"]);
    expect(within(cline).getByRole("button", { name: "Copy Cline settings" })).toBeTruthy();
    expect(screen.queryByTestId("tool-cline-write")).toBeNull();
    expect(screen.queryByTestId("tool-cline-file")).toBeNull();
  });

  it("asks for the settings again when the model changes, and the SDK snippets follow", async () => {
    live.applySnapshot(snapshot({ chains: [{ name: "auto", backends: [], strategy: "priority", gear: "auto", max_wait: "", generated: true, default: true, warning: "" }, { name: "coding", backends: [], strategy: "priority", gear: "auto", max_wait: "", generated: false, default: false, warning: "" }] }));
    const f = connectFetch((url) => ({ body: setup(new URL(url, "http://x").searchParams.get("model") ?? "auto") }));
    vi.stubGlobal("fetch", f.fn);
    render(Connect);
    await screen.findByTestId("tool-codex");
    await fireEvent.change(screen.getByLabelText("Model in the settings"), { target: { value: "coding" } });
    await waitFor(() => expect(screen.getByTestId("tool-codex-file").textContent).toContain(`model = "coding"`));
    expect(f.calls.map((c) => c.url)).toContain("/api/connect?model=coding");
    expect(screen.getByTestId("tool-claude-code-write").textContent).toBe("freelane connect claude-code --write --model coding");
    expect(screen.getByTestId("snippet-python").textContent).toContain('model="coding"');
  });

  it("names the token, never a secret, when FreeLane requires one", async () => {
    vi.stubGlobal("fetch", connectFetch(() => ({ body: setup("auto", true) })).fn);
    render(Connect);
    await screen.findByTestId("tool-codex");
    expect(screen.getByTestId("api-key").textContent).toBe("$FREELANE_TOKEN");
    expect(screen.getByText(/requires its inbound token/)).toBeTruthy();
    expect(screen.getByTestId("snippet-python").textContent).toContain('api_key=os.environ["FREELANE_TOKEN"]');
    expect(screen.getByTestId("snippet-node").textContent).toContain("apiKey: process.env.FREELANE_TOKEN");
    expect(screen.getByTestId("snippet-env").textContent).toContain('export OPENAI_API_KEY="$FREELANE_TOKEN"');
  });

  it("keeps the SDK snippets when the settings cannot be loaded, and retries", async () => {
    let fail = true;
    const f = connectFetch(() =>
      fail ? { status: 503, body: { error: { message: "FreeLane is busy", type: "server_error", param: null } } } : { body: setup() },
    );
    vi.stubGlobal("fetch", f.fn);
    render(Connect);
    const alert = await screen.findByTestId("connect-error");
    expect(alert.textContent).toContain("FreeLane is busy");
    const endpoint = screen.getByTestId("endpoint").textContent ?? "";
    expect(endpoint).toMatch(/\/v1$/);
    expect(screen.getByTestId("snippet-python").textContent).toContain(`base_url="${endpoint}"`);
    fail = false;
    await fireEvent.click(within(alert).getByRole("button", { name: "Retry" }));
    await screen.findByTestId("tool-claude-code");
    expect(screen.queryByTestId("connect-error")).toBeNull();
  });

  it("has a jump link to each tool and to the SDKs, and a curl snippet at the settings' address", async () => {
    vi.stubGlobal("fetch", connectFetch(() => ({ body: setup() })).fn);
    render(Connect);
    await screen.findByTestId("tool-claude-code");
    const jumps = screen.getByTestId("connect-jumps");
    const labels = within(jumps).getAllByRole("button").map((b) => b.textContent?.trim());
    expect(labels).toEqual([...setup().tools.map((t) => t.name), "SDKs and curl"]);
    const scrolled: string[] = [];
    const was = Element.prototype.scrollIntoView;
    Element.prototype.scrollIntoView = function (this: Element) {
      scrolled.push(this.id);
    };
    try {
      await fireEvent.click(within(jumps).getByRole("button", { name: "Codex CLI" }));
    } finally {
      Element.prototype.scrollIntoView = was;
    }
    expect(scrolled).toEqual(["connect-codex"]);
    expect(screen.getByTestId("snippet-curl").textContent).toContain(`curl ${BASE}/v1/chat/completions`);
  });
});
