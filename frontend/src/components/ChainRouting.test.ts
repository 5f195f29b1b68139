import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ChainView, Decision } from "../lib/types";
import { fakeFetch } from "../test/fixtures";
import ChainRouting from "./ChainRouting.svelte";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const chain: ChainView = {
  name: "work",
  backends: ["a/ma", "b/mb"],
  strategy: "priority",
  gear: "auto",
  max_wait: "",
  generated: false,
  default: false,
  warning: "",
};

const decision: Decision = {
  requested: "work",
  chain: "work",
  gear: "manual",
  strategy: "priority",
  fallback: "auto -> manual: too few samples (0 of 5)",
  candidates: [{ backend: "a/ma", tier: 0, rank: 1, verdict: "ordered", reason: "listed first" }],
};

describe("ChainRouting", () => {
  it("saves the strategy, the weights of a weighted chain, the tiers and the wait", async () => {
    const f = fakeFetch(() => ({ body: chain }));
    vi.stubGlobal("fetch", f.fn);
    const onchange = vi.fn();
    render(ChainRouting, { chain, onchange });
    expect(screen.queryByTestId("weight-work-a/ma")).toBeNull();
    await fireEvent.change(screen.getByTestId("strategy-work"), { target: { value: "weighted" } });
    await fireEvent.input(screen.getByTestId("weight-work-a/ma"), { target: { value: "3" } });
    await fireEvent.input(screen.getByTestId("tier-work-b/mb"), { target: { value: "1" } });
    await fireEvent.input(screen.getByTestId("max-wait-work"), { target: { value: "1s" } });
    await fireEvent.click(screen.getByTestId("save-routing-work"));
    await waitFor(() => expect(onchange).toHaveBeenCalled());
    const put = f.calls.find((c) => c.method === "PUT");
    expect(put?.url).toContain("/api/chains/work");
    expect(put?.body).toEqual({ strategy: "weighted", weights: { "a/ma": 3 }, priority: { "b/mb": 1 }, max_wait: "1s" });
  });

  it("shows the server's refusal with its field", async () => {
    const f = fakeFetch(() => ({ status: 400, body: { error: { message: "max_wait must be a duration between 0s (no waiting) and 1m0s", param: "max_wait", type: "invalid_request_error", code: "invalid_value" } } }));
    vi.stubGlobal("fetch", f.fn);
    render(ChainRouting, { chain });
    await fireEvent.click(screen.getByTestId("save-routing-work"));
    await waitFor(() => expect(screen.getByTestId("routing-error-work").textContent).toContain("max_wait must be a duration"));
  });

  it("switches the gear with its own endpoint", async () => {
    const f = fakeFetch(() => ({ body: { ...chain, gear: "manual" } }));
    vi.stubGlobal("fetch", f.fn);
    const onchange = vi.fn();
    render(ChainRouting, { chain, onchange });
    expect(screen.getByTestId("gear-work-auto").getAttribute("aria-pressed")).toBe("true");
    await fireEvent.click(screen.getByTestId("gear-work-manual"));
    await waitFor(() => expect(onchange).toHaveBeenCalled());
    expect(f.calls[0]).toMatchObject({ method: "PUT", body: { gear: "manual" } });
    expect(f.calls[0].url).toContain("/api/chains/work/gear");
  });

  it("previews a route with tools and a task and shows the decision", async () => {
    const f = fakeFetch(() => ({ body: decision }));
    vi.stubGlobal("fetch", f.fn);
    render(ChainRouting, { chain });
    await fireEvent.click(screen.getByLabelText("with tools"));
    await fireEvent.change(screen.getByTestId("preview-task-work"), { target: { value: "think" } });
    await fireEvent.click(screen.getByTestId("preview-work"));
    await waitFor(() => expect(screen.getByTestId("preview-decision-work-fallback").textContent).toContain("auto -> manual"));
    const body = f.calls[0].body as { model: string; task: string; tools: unknown[] };
    expect(f.calls[0].url).toContain("/api/route/preview");
    expect(body.model).toBe("work");
    expect(body.task).toBe("think");
    expect(body.tools).toHaveLength(1);
    expect(screen.getByTestId("preview-decision-work-row-a/ma").textContent).toContain("listed first");
  });
});
