import { cleanup, render, screen, within } from "@testing-library/svelte";
import { afterEach, describe, expect, it } from "vitest";
import type { Decision } from "../lib/types";
import DecisionTable from "./DecisionTable.svelte";

afterEach(cleanup);

const decision: Decision = {
  requested: "work",
  chain: "work",
  gear: "auto",
  strategy: "auto",
  task: "think",
  task_rule: "header",
  fallback: "auto -> manual: too few samples (2 of 5)",
  candidates: [
    { backend: "groq/llama", tier: 0, rank: 1, verdict: "ordered", reason: "score 0.82", score: { total: 0.82, health: 1, headroom: 0.9, latency: 0.5, cost: 1, task: 0.5 } },
    { backend: "c/qwen", tier: 1, rank: 2, verdict: "skipped", reason: "cooling down after a 429", skip: "cooling", until: "2026-12-03T12:00:05Z" },
    { backend: "x/small", tier: 0, verdict: "excluded", reason: "needs tools", skip: "unsupported" },
  ],
};

describe("DecisionTable", () => {
  it("shows what was asked, the gear, the fallback and every candidate with its score parts", () => {
    render(DecisionTable, { decision, testid: "d" });
    expect(screen.getByTestId("d-requested").textContent).toBe("work");
    expect(screen.getByTestId("d-gear").textContent).toBe("auto");
    expect(screen.getByTestId("d-strategy").textContent).toBe("auto");
    expect(screen.getByTestId("d-task").textContent).toContain("think");
    expect(screen.getByTestId("d-task").textContent).toContain("header");
    expect(screen.getByTestId("d-fallback").textContent).toBe("auto -> manual: too few samples (2 of 5)");
    const first = within(screen.getByTestId("d-row-groq/llama")).getAllByRole("cell").map((c) => c.textContent);
    expect(first.slice(0, 5)).toEqual(["1", "groq/llama", "0", "first", "score 0.82"]);
    expect(first.slice(6)).toEqual(["0.82", "1.00", "0.90", "0.50", "1.00", "0.50"]);
    const skipped = within(screen.getByTestId("d-row-c/qwen")).getAllByRole("cell").map((c) => c.textContent);
    expect(skipped[3]).toBe("skipped (cooling)");
    expect(skipped[5]).not.toBe("");
    const excluded = within(screen.getByTestId("d-row-x/small")).getAllByRole("cell").map((c) => c.textContent);
    expect(excluded[0]).toBe("—");
    expect(excluded[3]).toBe("excluded (unsupported)");
  });

  it("leaves out the score columns when no candidate was scored, and shows why a name routes nowhere", () => {
    render(DecisionTable, { decision: { requested: "nope", gear: "manual", strategy: "priority", candidates: [], error: "there is no chain or model nope" }, testid: "d" });
    expect(screen.queryByText("Health")).toBeNull();
    expect(screen.getByTestId("d-error").textContent).toContain("no chain or model nope");
    expect(screen.queryByTestId("d-fallback")).toBeNull();
  });
});
