import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import { lastDays } from "../lib/format";
import { fakeFetch, snapshot, usageRow } from "../test/fixtures";
import Usage from "./Usage.svelte";

beforeEach(() => live.applySnapshot(snapshot()));
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const byPath = {
  from: "x",
  to: "y",
  group_by: "path",
  rows: [
    usageRow("/v1/chat/completions", { requests: 12, failures: 1, cost: 0.002 }),
    usageRow("/v1/messages", { requests: 50, failures: 0, prompt_tokens: 5000, completion_tokens: 900, cost: 0.01 }),
    usageRow("/v1beta/models/{model}:generateContent", { requests: 1, failures: 0, cost: 0 }),
    usageRow("", { requests: 40, failures: 2, cost: 0 }),
  ],
};

describe("Usage", () => {
  it("asks for the range per day and backend and shows a table grouped by backend", async () => {
    const today = lastDays(1, Date.now())[0];
    const yesterday = lastDays(2, Date.now())[0];
    const f = fakeFetch((_m, url) => ({
      body: url.includes("group_by=path") ? byPath : {
        from: "x",
        to: "y",
        group_by: "day,backend",
        rows: [
          usageRow(yesterday, { backend: "groq/llama", requests: 40, failures: 2, prompt_tokens: 4000, completion_tokens: 1000, cost: 0 }),
          usageRow(today, { backend: "groq/llama", requests: 60, failures: 1, prompt_tokens: 6000, completion_tokens: 2000, cost: 0 }),
          usageRow(today, { backend: "openai/gpt-4o", requests: 3, failures: 0, prompt_tokens: 1500, completion_tokens: 600, cost: 0.0123, estimated_tokens: 45 }),
        ],
      },
    }));
    vi.stubGlobal("fetch", f.fn);
    render(Usage);

    await waitFor(() => expect(screen.getByTestId("usage-row-groq/llama")).toBeTruthy());
    const first = lastDays(30, Date.now())[0];
    expect(f.calls[0].url).toBe(`/api/usage?group_by=day,backend&from=${first}&to=${today}`);
    expect(f.calls[1].url).toBe(`/api/usage?group_by=path&from=${first}&to=${today}`);

    const cell = (row: HTMLElement, col: string) => row.querySelector(`[data-col="${col}"]`)?.textContent;
    const groq = screen.getByTestId("usage-row-groq/llama");
    expect([cell(groq, "requests"), cell(groq, "failures"), cell(groq, "prompt"), cell(groq, "completion"), cell(groq, "cost")]).toEqual([
      "100",
      "3",
      "10,000",
      "3,000",
      "$0.00",
    ]);
    const gpt = screen.getByTestId("usage-row-openai/gpt-4o");
    expect([cell(gpt, "cost"), cell(gpt, "estimated")]).toEqual(["$0.0123", "45"]);
    // Most expensive first.
    expect(within(screen.getByTestId("usage-table")).getAllByTestId(/^usage-row-/).map((r) => r.dataset.testid)).toEqual([
      "usage-row-openai/gpt-4o",
      "usage-row-groq/llama",
    ]);
    expect(cell(screen.getByTestId("usage-total"), "requests")).toBe("103");
    expect(cell(screen.getByTestId("usage-total"), "cost")).toBe("$0.0123");

    const link = screen.getByTestId("usage-export") as HTMLAnchorElement;
    expect(link.getAttribute("href")).toBe(`/api/usage.csv?from=${first}&to=${today}`);
    expect(link.hasAttribute("download")).toBe(true);
    expect(screen.getByTestId("usage-chart").textContent).toContain("Requests per day, last 30 days");

    await fireEvent.click(screen.getByTestId("usage-range-7"));
    await waitFor(() => expect(f.calls).toHaveLength(4));
    const week = lastDays(7, Date.now())[0];
    expect(f.calls[2].url).toContain(`from=${week}`);
    expect(f.calls[3].url).toContain(`from=${week}`);
    await waitFor(() => expect(link.getAttribute("href")).toContain(`from=${week}`));

    await fireEvent.click(screen.getByTestId("usage-metric-cost"));
    expect(screen.getByTestId("usage-chart").textContent).toContain("Cost per day, last 7 days");
  });

  it("says when there is nothing, or when the server fails", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ status: 400, body: { error: { message: "from must be before to", param: "from" } } })).fn);
    render(Usage);
    expect((await screen.findByRole("alert")).textContent).toContain("from must be before to");
    expect(screen.getByTestId("usage-table").textContent).toContain("No requests in the last 30 days.");
  });

  it("names the API of the requests it adds up", async () => {
    vi.stubGlobal("fetch", fakeFetch((_m, url) => ({ body: url.includes("group_by=path") ? byPath : { from: "x", to: "y", group_by: "day,backend", rows: [] } })).fn);
    render(Usage);
    await waitFor(() => expect(screen.getByTestId("usage-api-/v1/messages")).toBeTruthy());
    const rows = within(screen.getByTestId("usage-apis")).getAllByTestId(/^usage-api-/);
    const col = (row: HTMLElement, c: string) => row.querySelector(`[data-col="${c}"]`)?.textContent;
    // Most requests first.
    expect(rows.map((r) => [col(r, "api"), col(r, "requests")])).toEqual([
      ["/v1/messages · Anthropic", "50"],
      ["not recorded (older requests)", "40"],
      ["/v1/chat/completions · OpenAI", "12"],
      ["/v1beta/models/…:generateContent · Gemini", "1"],
    ]);
    expect(col(screen.getByTestId("usage-api-/v1/messages"), "completion")).toBe("900");
  });
});
