import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ChainView } from "../lib/types";
import { fakeFetch } from "../test/fixtures";
import ChainGears from "./ChainGears.svelte";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const chains: ChainView[] = [
  { name: "auto", backends: [], strategy: "priority", gear: "auto", max_wait: "", generated: true, default: true, warning: "" },
  { name: "work", backends: [], strategy: "cost", gear: "manual", max_wait: "", generated: false, default: false, warning: "" },
];

describe("ChainGears", () => {
  it("shows each chain's gear and switches one to the other gear", async () => {
    const f = fakeFetch(() => ({ body: chains[1] }));
    vi.stubGlobal("fetch", f.fn);
    const onchange = vi.fn();
    render(ChainGears, { chains, onchange });
    expect(screen.getByTestId("chain-gear-word-auto").textContent).toBe("auto");
    expect(screen.getByTestId("chain-gear-word-work").textContent).toBe("manual");
    expect((screen.getByTestId("chain-gear-toggle-work") as HTMLInputElement).checked).toBe(true);
    await fireEvent.click(screen.getByTestId("chain-gear-toggle-work"));
    await waitFor(() => expect(onchange).toHaveBeenCalled());
    expect(f.calls[0]).toMatchObject({ method: "PUT", url: "/api/chains/work/gear", body: { gear: "auto" } });
  });

  it("says when the switch is refused", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 404, body: { error: { message: 'there is no chain "work"', param: "name", type: "invalid_request_error", code: "invalid_value" } } })).fn);
    render(ChainGears, { chains });
    await fireEvent.click(screen.getByTestId("chain-gear-toggle-work"));
    await waitFor(() => expect(screen.getByRole("alert").textContent).toContain('there is no chain "work"'));
  });
});
