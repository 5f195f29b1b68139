import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeFetch, provider } from "../test/fixtures";
import ProviderForm from "./ProviderForm.svelte";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

function field(label: string | RegExp) {
  return within(screen.getByTestId("provider-form")).getByLabelText(label) as HTMLInputElement;
}

async function type(label: string | RegExp, value: string) {
  await fireEvent.input(field(label), { target: { value } });
}

async function submit() {
  await fireEvent.click(within(screen.getByTestId("provider-form")).getByRole("button", { name: "Add provider" }));
}

describe("ProviderForm", () => {
  it("explains every missing or wrong field without calling the server", async () => {
    const f = fakeFetch(() => ({ status: 500 }));
    vi.stubGlobal("fetch", f.fn);
    render(ProviderForm, { existing: ["groq"] });

    await submit();
    expect(screen.getByTestId("error-name").textContent).toContain("Give the provider a name");
    expect(screen.getByTestId("error-base_url").textContent).toContain("base URL");
    expect(screen.getByTestId("error-models").textContent).toContain("at least one model");
    expect(screen.getByTestId("form-error").textContent).toContain("Fix the fields");
    expect(field("Name").getAttribute("aria-invalid")).toBe("true");

    await type("Name", "Groq Cloud");
    await type("Base URL", "api.groq.com");
    await type("Size (billions)", "70");
    await submit();
    expect(screen.getByTestId("error-name").textContent).toContain("lower-case");
    expect(screen.getByTestId("error-base_url").textContent).toContain("http:// or https://");
    expect(screen.getByTestId("error-models[0].id").textContent).toContain("model id");

    await type("Name", "groq");
    await submit();
    expect(screen.getByTestId("error-name").textContent).toContain("already exists");
    expect(f.calls).toEqual([]);
  });

  it("adds an Anthropic provider with the Messages protocol", async () => {
    const f = fakeFetch(() => ({ status: 201, body: provider("claude") }));
    vi.stubGlobal("fetch", f.fn);
    render(ProviderForm, { existing: [] });

    await fireEvent.change(field("Protocol"), { target: { value: "anthropic" } });
    expect(field("Base URL").placeholder).toBe("https://api.anthropic.com/v1");
    await type("Name", "claude");
    await fireEvent.change(field("Tier"), { target: { value: "own" } });
    await type("Base URL", "https://api.anthropic.com/v1");
    await type("Model id", "claude-sonnet-4-5");
    await type(/API key/, "sk-ant-secret");
    await submit();

    await waitFor(() => expect(f.calls.length).toBe(1));
    const body = f.calls[0].body as { kind: string; base_url: string };
    expect(body.kind).toBe("anthropic");
    expect(body.base_url).toBe("https://api.anthropic.com/v1");
  });

  it("sends the provider and its key, then reports it saved", async () => {
    const saved = provider("cerebras");
    const f = fakeFetch(() => ({ status: 201, body: saved }));
    vi.stubGlobal("fetch", f.fn);
    const onsaved = vi.fn();
    render(ProviderForm, { existing: [], onsaved });

    await type("Name", "cerebras");
    await fireEvent.change(field("Tier"), { target: { value: "own" } });
    await type("Base URL", "https://api.cerebras.ai/v1");
    await type("Model id", "qwen-3-235b");
    await type("Size (billions)", "235");
    await type("Context (tokens)", "65536");
    await type(/API key/, "csk-secret");
    await submit();

    await waitFor(() => expect(onsaved).toHaveBeenCalledWith(saved));
    expect(f.calls).toEqual([
      {
        method: "POST",
        url: "/api/providers",
        body: {
          name: "cerebras",
          kind: "openai",
          tier: "own",
          base_url: "https://api.cerebras.ai/v1",
          keyless: false,
          models: [{ id: "qwen-3-235b", params_b: 235, context: 65536, max_output: 0 }],
          api_key: "csk-secret",
        },
      },
    ]);
  });

  it("shows the server's validation message next to the field it names", async () => {
    const f = fakeFetch(() => ({
      status: 400,
      body: { error: { message: "model id must not contain spaces", type: "invalid_request_error", code: "invalid_value", param: "models[1].id" } },
    }));
    vi.stubGlobal("fetch", f.fn);
    render(ProviderForm, { existing: [] });

    await type("Name", "local");
    await type("Base URL", "http://127.0.0.1:11434/v1");
    await fireEvent.click(screen.getByRole("checkbox", { name: /Needs no key/ }));
    await type("Model id", "a");
    // A blank row in between is not sent, so the server's models[1] is the
    // third row on screen.
    await fireEvent.click(screen.getByRole("button", { name: "Add model" }));
    await fireEvent.click(screen.getByRole("button", { name: "Add model" }));
    const ids = within(screen.getByTestId("provider-form")).getAllByLabelText("Model id");
    await fireEvent.input(ids[2], { target: { value: "bad id" } });
    await submit();

    const err = await screen.findByTestId("error-models[2].id");
    expect(err.textContent).toBe("model id must not contain spaces");
    expect(within(screen.getByTestId("model-row-2")).getByTestId("error-models[2].id")).toBe(err);
    expect(f.calls[0].body).toMatchObject({ keyless: true, models: [{ id: "a" }, { id: "bad id" }] });
    expect(f.calls[0].body).not.toHaveProperty("api_key");
  });

  it("asks for usage in streams unless the box is unticked", async () => {
    const f = fakeFetch(() => ({ status: 201, body: provider("strict", { stream_usage: false }) }));
    vi.stubGlobal("fetch", f.fn);
    render(ProviderForm, { existing: [] });
    const box = screen.getByRole("checkbox", { name: "Ask for usage in streams" }) as HTMLInputElement;
    expect(box.checked).toBe(true);

    await type("Name", "strict");
    await type("Base URL", "https://strict.example/v1");
    await type("Model id", "m");
    await fireEvent.click(box);
    await submit();
    await waitFor(() => expect(f.calls).toHaveLength(1));
    expect(f.calls[0].body).toMatchObject({ name: "strict", stream_usage: false });

    // Ticked, the default, it is not sent: the server asks by default.
    await waitFor(() => expect(box.checked).toBe(true));
    await type("Name", "easy");
    await type("Base URL", "https://easy.example/v1");
    await type("Model id", "m");
    await submit();
    await waitFor(() => expect(f.calls).toHaveLength(2));
    expect(f.calls[1].body).not.toHaveProperty("stream_usage");
  });

  it("shows an error without a field at the form's button", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 409, body: { error: { message: "a provider named x already exists", param: null } } })).fn);
    render(ProviderForm, { existing: [] });
    await type("Name", "x");
    await type("Base URL", "https://x.example/v1");
    await type("Model id", "m");
    await submit();
    expect((await screen.findByTestId("form-error")).textContent).toBe("a provider named x already exists");
  });
});
