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

  it("offers the models the server lists and sends the ones picked", async () => {
    const list = {
      listed: true,
      message: "api.groq.example lists 3 models",
      models: [
        { id: "llama-big", name: "Llama Big", context: 131072, max_output: 32768, chat: true, priced: false, free: false },
        { id: "llama-small", name: "", context: 8192, max_output: 0, chat: true, priced: false, free: false },
        { id: "embed-1", name: "", context: 0, max_output: 0, chat: false, priced: false, free: false },
      ],
    };
    const f = fakeFetch((_m, url) => (url === "/api/providers/models" ? { body: list } : { status: 201, body: provider("groq") }));
    vi.stubGlobal("fetch", f.fn);
    render(ProviderForm, { existing: [] });

    await type("Name", "groq");
    await type("Base URL", "https://api.groq.example/openai/v1");
    await type(/API key/, "gsk-secret");
    await fireEvent.click(screen.getByTestId("list-models"));
    expect((await screen.findByTestId("list-note")).textContent).toBe("api.groq.example lists 3 models");
    expect(f.calls[0]).toEqual({
      method: "POST",
      url: "/api/providers/models",
      body: { kind: "openai", base_url: "https://api.groq.example/openai/v1", api_key: "gsk-secret", provider: "" },
    });
    const listed = within(screen.getByTestId("listed-models"));
    expect(listed.getByText("not a chat model")).toBeTruthy();

    // Picking fills the blank row, then adds rows; unpicking removes them.
    await fireEvent.click(listed.getByRole("checkbox", { name: /llama-big/ }));
    await fireEvent.click(listed.getByRole("checkbox", { name: /llama-small/ }));
    await fireEvent.click(listed.getByRole("checkbox", { name: /embed-1/ }));
    await fireEvent.click(listed.getByRole("checkbox", { name: /embed-1/ }));
    const ids = within(screen.getByTestId("provider-form")).getAllByLabelText("Model id") as HTMLInputElement[];
    expect(ids.map((i) => i.value)).toEqual(["llama-big", "llama-small"]);
    expect((within(screen.getByTestId("model-row-0")).getByLabelText("Context (tokens)") as HTMLInputElement).value).toBe("131072");
    expect((listed.getByRole("checkbox", { name: /llama-big/ }) as HTMLInputElement).checked).toBe(true);

    // Typing stays possible beside the list.
    await fireEvent.click(screen.getByRole("button", { name: "Add model" }));
    await fireEvent.input(within(screen.getByTestId("model-row-2")).getByLabelText("Model id"), { target: { value: "typed-one" } });
    await submit();
    await waitFor(() => expect(f.calls).toHaveLength(2));
    expect(f.calls[1].body).toMatchObject({
      models: [
        { id: "llama-big", params_b: 0, context: 131072, max_output: 32768 },
        { id: "llama-small", params_b: 0, context: 8192, max_output: 0 },
        { id: "typed-one", params_b: 0, context: 0, max_output: 0 },
      ],
    });
  });

  it("says when the server has no list, and shows a refused key at the key field", async () => {
    let answer: { status?: number; body?: unknown } = { body: { listed: false, models: [], message: "x.example has no model list (GET https://x.example/v1/models answered HTTP 404); type the model ids" } };
    vi.stubGlobal("fetch", fakeFetch(() => answer).fn);
    render(ProviderForm, { existing: [] });
    await type("Base URL", "https://x.example/v1");
    await fireEvent.click(screen.getByTestId("list-models"));
    expect((await screen.findByTestId("list-note")).textContent).toContain("type the model ids");
    expect(screen.queryByTestId("listed-models")).toBeNull();

    answer = {
      status: 400,
      body: { error: { message: "x.example refused the key (HTTP 401: bad key)", type: "invalid_request_error", code: "key_refused", param: "api_key" } },
    };
    await type(/API key/, "sk-wrong");
    await fireEvent.click(screen.getByTestId("list-models"));
    expect((await screen.findByTestId("error-api_key")).textContent).toBe("x.example refused the key (HTTP 401: bad key)");
    expect(field(/API key/).getAttribute("aria-invalid")).toBe("true");
  });

  it("offers to add a provider whose server cannot be reached, and resends with the flag", async () => {
    const saved = provider("offline");
    const f = fakeFetch((_m, _u, body) =>
      (body as { unreachable_ok?: boolean }).unreachable_ok
        ? { status: 201, body: saved }
        : {
            status: 502,
            body: {
              error: {
                message: "could not reach 127.0.0.1:9: nothing is listening there (the connection was refused). The key was not tried; correct the base URL, or add it anyway: it serves once the server answers",
                type: "server_error",
                code: "provider_unreachable",
                param: "base_url",
              },
            },
          },
    );
    vi.stubGlobal("fetch", f.fn);
    const onsaved = vi.fn();
    render(ProviderForm, { existing: [], onsaved });
    await type("Name", "offline");
    await type("Base URL", "http://127.0.0.1:9/v1");
    await type("Model id", "m");
    await type(/API key/, "sk-offline");
    await submit();

    const box = await screen.findByTestId("unreachable");
    expect(box.textContent).toContain("nothing is listening there");
    expect(screen.queryByTestId("error-base_url")).toBeNull();
    expect(onsaved).not.toHaveBeenCalled();
    expect(f.calls[0].body).not.toHaveProperty("unreachable_ok");

    await fireEvent.click(screen.getByRole("button", { name: "Add anyway" }));
    await waitFor(() => expect(onsaved).toHaveBeenCalledWith(saved));
    expect(f.calls[1]).toMatchObject({ method: "POST", url: "/api/providers", body: { name: "offline", api_key: "sk-offline", unreachable_ok: true } });
    expect(screen.queryByTestId("unreachable")).toBeNull();
  });

  it("edits a provider: its fields start as stored and only they are sent", async () => {
    const stored = provider("groq", {
      tier: "free",
      base_url: "https://old.example/v1",
      models: [
        { id: "m1", params_b: 70, context: 131072, max_output: 8192 },
        { id: "m2", params_b: 0, context: 0, max_output: 0 },
      ],
    });
    const saved = provider("groq", { tier: "own" });
    const f = fakeFetch((_m, url, body) => {
      if (url === "/api/providers/models")
        return { body: { listed: true, message: "new.example lists 1 models", models: [{ id: "m3", name: "", context: 4096, max_output: 0, chat: true, priced: false, free: false }] } };
      if ((body as { unreachable_ok?: boolean }).unreachable_ok) return { body: saved };
      return { status: 502, body: { error: { message: "could not reach new.example: it did not answer within 15s", type: "server_error", code: "provider_unreachable", param: "base_url" } } };
    });
    vi.stubGlobal("fetch", f.fn);
    const onsaved = vi.fn();
    render(ProviderForm, { existing: ["groq"], provider: stored, onsaved });

    expect(screen.getByRole("heading", { name: "Edit groq" })).toBeTruthy();
    expect(field("Name").value).toBe("groq");
    expect(field("Name").readOnly).toBe(true);
    expect(field("Base URL").value).toBe("https://old.example/v1");
    expect(field("Tier").value).toBe("free");
    expect(field(/New API key/).value).toBe("");
    const ids = () => (within(screen.getByTestId("provider-form")).getAllByLabelText("Model id") as HTMLInputElement[]).map((i) => i.value);
    expect(ids()).toEqual(["m1", "m2"]);

    await type("Base URL", "https://new.example/v1");
    await fireEvent.change(field("Tier"), { target: { value: "own" } });
    await fireEvent.click(screen.getByRole("button", { name: "Remove model row 2" }));
    await fireEvent.click(screen.getByTestId("list-models"));
    // Without a new key the stored one lists, at the provider's own address only (the server checks).
    await waitFor(() => expect(f.calls[0].body).toEqual({ kind: "openai", base_url: "https://new.example/v1", api_key: "", provider: "groq" }));
    await fireEvent.click(within(await screen.findByTestId("listed-models")).getByRole("checkbox", { name: /m3/ }));
    expect(ids()).toEqual(["m1", "m3"]);

    await fireEvent.click(screen.getByRole("button", { name: "Save changes" }));
    await screen.findByTestId("unreachable");
    await fireEvent.click(screen.getByRole("button", { name: "Save anyway" }));
    await waitFor(() => expect(onsaved).toHaveBeenCalledWith(saved));
    expect(f.calls[1]).toEqual({
      method: "PUT",
      url: "/api/providers/groq",
      body: {
        kind: "openai",
        tier: "own",
        base_url: "https://new.example/v1",
        keyless: false,
        stream_usage: true,
        models: [
          { id: "m1", params_b: 70, context: 131072 },
          { id: "m3", params_b: 0, context: 4096 },
        ],
      },
    });
    expect(f.calls[2].body).toMatchObject({ unreachable_ok: true, tier: "own" });
    // The form stays filled in for the edit it made.
    expect(field("Base URL").value).toBe("https://new.example/v1");
  });
});
