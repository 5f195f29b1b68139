import { describe, expect, it } from "vitest";
import { usageRow } from "../test/fixtures";
import { ALL, byBackend, niceTicks, stackedDays, total, usageColumns, usageRange } from "./usage";

const rows = [
  usageRow("2026-11-28", { backend: "groq/llama", requests: 5, prompt_tokens: 100, completion_tokens: 50, cost: 0 }),
  usageRow("2026-11-30", { backend: "groq/llama", requests: 7, prompt_tokens: 200, completion_tokens: 20, cost: 0 }),
  usageRow("2026-11-30", { backend: "openai/gpt", requests: 2, failures: 0, prompt_tokens: 1000, completion_tokens: 500, cost: 0.0105, estimated_tokens: 30 }),
  usageRow("2026-10-01", { backend: "openai/gpt", requests: 99, cost: 9 }),
];

describe("usage", () => {
  it("asks for n local days ending with today (the server reads `to` as the whole day)", () => {
    expect(usageRange(3, new Date(2026, 10, 30, 23, 0).getTime())).toEqual({
      from: "2026-11-28",
      to: "2026-11-30",
      days: ["2026-11-28", "2026-11-29", "2026-11-30"],
    });
  });

  it("sums rows per backend, most expensive first", () => {
    const t = byBackend(rows);
    expect(t.map((r) => [r.backend, r.requests, r.cost])).toEqual([
      ["openai/gpt", 101, 9.0105],
      ["groq/llama", 12, 0],
    ]);
    expect(t[1]).toMatchObject({ prompt_tokens: 300, completion_tokens: 70, failures: 2 });
    expect(byBackend([usageRow("2026-11-30")])[0].backend).toBe(ALL);
    expect(total(rows)).toMatchObject({ requests: 113, failures: 3 });
  });

  it("lays out one series per backend, one point per day, zeros where nothing ran", () => {
    const days = ["2026-11-28", "2026-11-29", "2026-11-30"];
    expect(usageColumns(rows, days, ["groq/llama", "openai/gpt"], "requests")).toEqual([
      [0, 1, 2],
      [5, 0, 7],
      [0, 0, 2],
    ]);
    expect(usageColumns(rows, days, ["groq/llama", "openai/gpt"], "tokens")[1]).toEqual([150, 0, 220]);
    expect(usageColumns(rows, days, ["openai/gpt"], "cost")).toEqual([[0, 1, 2], [0, 0, 0.0105]]);
  });
});

describe("usage bars", () => {
  it("stacks a day's rows by model or by provider, largest first", () => {
    const days = ["2026-11-29", "2026-11-30"];
    const rows = [
      { key: "2026-11-30", backend: "groq/a", requests: 3, failures: 0, prompt_tokens: 10, completion_tokens: 5, cost: 0, estimated_tokens: 0 },
      { key: "2026-11-30", backend: "groq/b", requests: 4, failures: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0, estimated_tokens: 0 },
      { key: "2026-11-30", backend: "openai/c", requests: 1, failures: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0.5, estimated_tokens: 0 },
      { key: "2026-10-01", backend: "groq/a", requests: 99, failures: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0, estimated_tokens: 0 },
    ];
    expect(stackedDays(rows, days, "model", "requests")).toEqual([
      { label: "groq/b", values: [0, 4] },
      { label: "groq/a", values: [0, 3] },
      { label: "openai/c", values: [0, 1] },
    ]);
    expect(stackedDays(rows, days, "provider", "requests")).toEqual([
      { label: "groq", values: [0, 7] },
      { label: "openai", values: [0, 1] },
    ]);
    expect(stackedDays(rows, days, "provider", "tokens")[0]).toEqual({ label: "groq", values: [0, 15] });
  });

  it("gives counts whole-number ticks", () => {
    expect(niceTicks(0, true)).toEqual([0, 1]);
    expect(niceTicks(1, true)).toEqual([0, 1]);
    expect(niceTicks(3, true)).toEqual([0, 1, 2, 3]);
    expect(niceTicks(19, true)).toEqual([0, 5, 10, 15, 20]);
    for (const max of [1, 2, 3, 7, 13, 250]) expect(niceTicks(max, true).every(Number.isInteger)).toBe(true);
    expect(niceTicks(0.03, false)).toEqual([0, 0.01, 0.02, 0.03]);
  });
});
