import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import { catalogView, fakeFetch, provider } from "../test/fixtures";
import type { CatalogAdded } from "../lib/types";
import CatalogPicker from "./CatalogPicker.svelte";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

function ids(root: HTMLElement): string[] {
  return [...root.querySelectorAll("[data-testid^='catalog-card-']")].map((c) => c.getAttribute("data-testid")!.replace("catalog-card-", ""));
}

describe("CatalogPicker", () => {
  it("groups the catalog by tier and filters by name, id and model id", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: catalogView() })).fn);
    render(CatalogPicker);
    const picker = screen.getByTestId("catalog-picker");
    await screen.findByTestId("catalog-group-free");
    const headings = [...picker.querySelectorAll("[data-testid^='catalog-group-'] > h3")].map((h) => h.textContent!.replace(/\s*\(\d+\)$/, ""));
    expect(headings).toEqual(["Free", "Trial credit", "Paid (your key)", "Local"]);
    expect(ids(screen.getByTestId("catalog-group-free"))).toEqual(["groq", "cloudflare"]);
    expect(ids(screen.getByTestId("catalog-group-trial"))).toEqual(["nebius"]);
    expect(ids(screen.getByTestId("catalog-group-paid"))).toEqual(["openai"]);
    expect(ids(screen.getByTestId("catalog-group-local"))).toEqual(["ollama"]);
    expect(screen.getByTestId("catalog-date").textContent).toContain("Catalog of 2026-11-20, built into FreeLane.");

    // The paid entry shows its models with context and price.
    const openai = screen.getByTestId("catalog-card-openai");
    expect(openai.textContent).toContain("gpt-4.1-mini");
    expect(openai.textContent).toContain("1M context");
    expect(openai.textContent).toContain("$0.4 in / $1.6 out per M tokens");
    expect(screen.getByTestId("catalog-card-groq").textContent).toContain("70B · 128k context");

    const search = screen.getByLabelText("Search");
    await fireEvent.input(search, { target: { value: "cloud" } });
    expect(ids(picker)).toEqual(["cloudflare"]);
    await fireEvent.input(search, { target: { value: "GPT-4.1" } });
    expect(ids(picker)).toEqual(["openai"]);
    expect(screen.queryByTestId("catalog-group-free")).toBeNull();
    await fireEvent.input(search, { target: { value: "nebius" } });
    expect(ids(picker)).toEqual(["nebius"]);
    await fireEvent.input(search, { target: { value: "nothing-like-it" } });
    expect(ids(picker)).toEqual([]);
    expect(screen.getByTestId("catalog-no-match")).toBeTruthy();
    await fireEvent.input(search, { target: { value: "" } });
    expect(ids(picker)).toHaveLength(5);
  });

  it("adds an entry, tells the screen, and reads the catalog again", async () => {
    let added = false;
    const f = fakeFetch((method, url) => {
      if (method === "POST" && url === "/api/catalog/groq") {
        added = true;
        return { status: 201, body: { provider: provider("groq"), models: 9, message: "The key works." } };
      }
      const c = catalogView();
      if (added) c.providers![0] = { ...c.providers![0], configured: ["groq"] };
      return { body: c };
    });
    vi.stubGlobal("fetch", f.fn);
    const onadded = vi.fn<(a: CatalogAdded) => void>();
    render(CatalogPicker, { onadded });
    await fireEvent.input(await screen.findByTestId("key-groq"), { target: { value: "gsk-1" } });
    await fireEvent.click(screen.getByTestId("add-groq"));
    await waitFor(() => expect(onadded).toHaveBeenCalledOnce());
    expect(onadded.mock.calls[0][0].provider.name).toBe("groq");
    expect((await screen.findByTestId("added-groq")).textContent).toBe("added as groq");
    expect(screen.getByTestId("add-result-groq").textContent).toBe("Added groq. The key works.");
  });

  it("loads a newer catalog from a URL and shows a refusal verbatim", async () => {
    const problems = "catalog.yaml line 12: providers[3].base_url: not an https URL\ncatalog.yaml line 40: duplicate id \"groq\"";
    let good = false;
    const f = fakeFetch((method, _url, body) => {
      if (method === "POST") {
        if (!good) return { status: 400, body: { error: { message: problems, param: "url" } } };
        expect(body).toEqual({ url: "https://example.org/catalog.yaml" });
        return { body: catalogView({ date: "2026-12-01", source: "https://example.org/catalog.yaml" }) };
      }
      return { body: catalogView() };
    });
    vi.stubGlobal("fetch", f.fn);
    render(CatalogPicker);
    const form = screen.getByTestId("catalog-load");
    const input = within(form).getByLabelText("Load a newer catalog from a URL");
    await fireEvent.input(input, { target: { value: "https://example.org/bad.yaml" } });
    await fireEvent.click(within(form).getByRole("button", { name: "Load" }));
    expect((await screen.findByTestId("catalog-load-error")).textContent).toBe(problems);

    good = true;
    await fireEvent.input(input, { target: { value: "https://example.org/catalog.yaml" } });
    await fireEvent.click(within(form).getByRole("button", { name: "Load" }));
    await waitFor(() => expect(screen.getByTestId("catalog-date").textContent).toContain("Catalog of 2026-12-01, from https://example.org/catalog.yaml."));
    expect(screen.queryByTestId("catalog-load-error")).toBeNull();
  });
});
