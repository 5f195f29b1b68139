import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import { catalogView, fakeFetch } from "../test/fixtures";
import type { CatalogChange } from "../lib/types";
import CatalogPicker from "./CatalogPicker.svelte";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const moved: CatalogChange = {
  id: "cerebras",
  name: "Cerebras",
  from: "https://api.cerebras.ai/v1",
  to: "https://x.example/v1",
  from_key_env: ["CEREBRAS_API_KEY"],
  to_key_env: ["CEREBRAS_API_KEY"],
  new: false,
  has_key: false,
  refused: "",
};

const added: CatalogChange = {
  id: "newco",
  name: "NewCo",
  from: "",
  to: "https://new.example/v1",
  from_key_env: [],
  to_key_env: ["NEWCO_API_KEY"],
  new: true,
  has_key: false,
  refused: "",
};

describe("the catalog's pending address changes", () => {
  it("shows each change and confirms the address shown", async () => {
    let pending = [moved, added];
    const f = fakeFetch((method, url) => {
      if (method === "POST" && url === "/api/catalog/changes/cerebras") {
        pending = pending.filter((c) => c.id !== "cerebras");
      }
      return { body: catalogView({ changes: pending }) };
    });
    vi.stubGlobal("fetch", f.fn);
    render(CatalogPicker);
    const item = await screen.findByTestId("catalog-change-cerebras");
    expect(item.textContent!.replace(/\s+/g, " ")).toContain(
      "The catalog moves Cerebras (cerebras) from https://api.cerebras.ai/v1 to https://x.example/v1.",
    );
    const fresh = screen.getByTestId("catalog-change-newco");
    expect(fresh.textContent!.replace(/\s+/g, " ")).toContain("The catalog adds NewCo (newco) at https://new.example/v1, reading its key from NEWCO_API_KEY.");
    expect(screen.queryByTestId("catalog-change-keys-cerebras")).toBeNull();
    expect(within(fresh).getByRole("button", { name: "Leave it out" })).toBeTruthy();

    await fireEvent.click(within(item).getByRole("button", { name: "Confirm" }));
    await waitFor(() => expect(screen.queryByTestId("catalog-change-cerebras")).toBeNull());
    const post = f.calls.find((c) => c.method === "POST");
    expect(post).toEqual({ method: "POST", url: "/api/catalog/changes/cerebras", body: { decision: "confirm", to: "https://x.example/v1" } });
    expect(screen.getByTestId("catalog-change-newco")).toBeTruthy();
  });

  it("keeps the old address, and hides the list once nothing waits", async () => {
    const f = fakeFetch((method) => ({ body: catalogView({ changes: method === "POST" ? [] : [moved] }) }));
    vi.stubGlobal("fetch", f.fn);
    render(CatalogPicker);
    const item = await screen.findByTestId("catalog-change-cerebras");
    await fireEvent.click(within(item).getByRole("button", { name: "Keep the old address" }));
    await waitFor(() => expect(screen.queryByTestId("catalog-changes")).toBeNull());
    expect(f.calls.find((c) => c.method === "POST")?.body).toEqual({ decision: "keep", to: "https://x.example/v1" });
  });

  it("cannot confirm a move of a provider with a key, and says why", async () => {
    const refused = "Cerebras has a key (CEREBRAS_API_KEY is set in the environment), given for https://api.cerebras.ai/v1.";
    const f = fakeFetch(() => ({ body: catalogView({ changes: [{ ...moved, has_key: true, refused }] }) }));
    vi.stubGlobal("fetch", f.fn);
    render(CatalogPicker);
    const item = await screen.findByTestId("catalog-change-cerebras");
    expect((within(item).getByRole("button", { name: "Confirm" }) as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId("catalog-change-refused-cerebras").textContent).toBe(refused);
    expect((within(item).getByRole("button", { name: "Keep the old address" }) as HTMLButtonElement).disabled).toBe(false);
  });

  it("shows the server's refusal of an answer", async () => {
    const f = fakeFetch((method) =>
      method === "POST"
        ? { status: 409, body: { error: { message: "the catalog in use gives provider \"cerebras\" another address than the one answered", param: "to" } } }
        : { body: catalogView({ changes: [moved] }) },
    );
    vi.stubGlobal("fetch", f.fn);
    render(CatalogPicker);
    const item = await screen.findByTestId("catalog-change-cerebras");
    await fireEvent.click(within(item).getByRole("button", { name: "Confirm" }));
    expect((await screen.findByTestId("catalog-change-error-cerebras")).textContent).toContain("another address than the one answered");
    expect(screen.getByTestId("catalog-change-cerebras")).toBeTruthy();
  });

  it("shows a change of the variable a key is read from", async () => {
    const stolen = { ...moved, to: moved.from, to_key_env: ["GROQ_API_KEY"] };
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: catalogView({ changes: [stolen] }) })).fn);
    render(CatalogPicker);
    const item = await screen.findByTestId("catalog-change-cerebras");
    expect(item.textContent).not.toContain("moves");
    expect(screen.getByTestId("catalog-change-keys-cerebras").textContent!.replace(/\s+/g, " ")).toContain(
      "The catalog has Cerebras read its key from GROQ_API_KEY instead of CEREBRAS_API_KEY.",
    );
  });

  it("says after loading a catalog that addresses wait", async () => {
    const f = fakeFetch((method) => ({ body: catalogView(method === "POST" ? { date: "2026-12-01", changes: [moved] } : {}) }));
    vi.stubGlobal("fetch", f.fn);
    render(CatalogPicker);
    const form = screen.getByTestId("catalog-load");
    await fireEvent.input(within(form).getByLabelText("Load a newer catalog from a URL"), { target: { value: "https://example.org/c.yaml" } });
    await fireEvent.click(within(form).getByRole("button", { name: "Load" }));
    await waitFor(() => expect(form.textContent).toContain("One address waits for your answer above"));
    expect(screen.getByTestId("catalog-change-cerebras")).toBeTruthy();
  });
});
