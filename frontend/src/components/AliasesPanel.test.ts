import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Alias, AliasView } from "../lib/types";
import { fakeFetch } from "../test/fixtures";
import AliasesPanel from "./AliasesPanel.svelte";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const builtIn: AliasView[] = [
  { pattern: "claude-*", chain: "auto", default: true },
  { pattern: "gemini-*", chain: "auto", default: true },
];

// A server that keeps the list it is sent, marking the built-in patterns
// it was not sent as default, as the Go side does.
function server(initial: AliasView[]) {
  let list = initial;
  return fakeFetch((method, _url, body) => {
    if (method === "PUT") {
      const sent = (body as { aliases: Alias[] }).aliases;
      const own = sent.filter((a) => !builtIn.some((b) => b.pattern === a.pattern && b.chain === a.chain));
      list = [
        ...own.map((a) => ({ ...a, default: false })),
        ...builtIn.filter((b) => !own.some((a) => a.pattern === b.pattern)),
      ];
      if (own.some((a) => a.chain === "nope")) return { status: 400, body: { error: { message: 'names no chain: "nope"' } } };
    }
    return { body: list };
  });
}

describe("AliasesPanel", () => {
  it("shows the built-in aliases and adds one ahead of them", async () => {
    const f = server(builtIn);
    vi.stubGlobal("fetch", f.fn);
    render(AliasesPanel, { chains: ["auto", "coding"] });
    await screen.findByTestId("alias-claude-*");
    expect(screen.getByTestId("alias-default-claude-*").textContent).toBe("built in");

    await fireEvent.input(screen.getByTestId("alias-new-pattern"), { target: { value: "gpt-4*" } });
    await fireEvent.change(screen.getByTestId("alias-new-chain"), { target: { value: "coding" } });
    await fireEvent.click(screen.getByRole("button", { name: "Add alias" }));
    await screen.findByTestId("alias-gpt-4*");
    const put = f.calls.find((c) => c.method === "PUT");
    expect(put?.body).toEqual({
      aliases: [
        { pattern: "gpt-4*", chain: "coding" },
        { pattern: "claude-*", chain: "auto" },
        { pattern: "gemini-*", chain: "auto" },
      ],
    });
    const rows = screen.getAllByRole("listitem").map((li) => li.getAttribute("data-testid"));
    expect(rows).toEqual(["alias-gpt-4*", "alias-claude-*", "alias-gemini-*"]);
    expect((screen.getByTestId("alias-new-pattern") as HTMLInputElement).value).toBe("");
  });

  it("turns a built-in alias into the user's when its chain changes, and removes the user's own", async () => {
    const f = server(builtIn);
    vi.stubGlobal("fetch", f.fn);
    render(AliasesPanel, { chains: ["auto", "coding"] });
    const row = await screen.findByTestId("alias-claude-*");
    await fireEvent.change(within(row).getByLabelText("Chain for claude-*"), { target: { value: "coding" } });
    await waitFor(() => expect(screen.queryByTestId("alias-default-claude-*")).toBeNull());

    await fireEvent.click(within(screen.getByTestId("alias-claude-*")).getByRole("button", { name: "Remove" }));
    await waitFor(() => expect(screen.getByTestId("alias-default-claude-*")).toBeTruthy());
    expect(f.calls.filter((c) => c.method === "PUT").at(-1)?.body).toEqual({ aliases: [{ pattern: "gemini-*", chain: "auto" }] });
  });

  it("says what the server refused and checks for an empty pattern first", async () => {
    const f = server(builtIn);
    vi.stubGlobal("fetch", f.fn);
    render(AliasesPanel, { chains: ["auto", "nope"] });
    await screen.findByTestId("alias-claude-*");
    await fireEvent.click(screen.getByRole("button", { name: "Add alias" }));
    expect(screen.getByTestId("aliases-error").textContent).toContain("Enter a model name or a pattern");
    expect(f.calls.filter((c) => c.method === "PUT")).toEqual([]);

    await fireEvent.input(screen.getByTestId("alias-new-pattern"), { target: { value: "x*" } });
    await fireEvent.change(screen.getByTestId("alias-new-chain"), { target: { value: "nope" } });
    await fireEvent.click(screen.getByRole("button", { name: "Add alias" }));
    await waitFor(() => expect(screen.getByTestId("aliases-error").textContent).toContain('names no chain: "nope"'));
    expect((screen.getByTestId("alias-new-pattern") as HTMLInputElement).value).toBe("x*");
  });
});
