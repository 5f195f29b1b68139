import { cleanup, render, screen } from "@testing-library/svelte";
import { afterEach, describe, expect, it } from "vitest";
import { fmtInt } from "../lib/format";
import BarChart from "./BarChart.svelte";

afterEach(() => cleanup());

const days = Array.from({ length: 30 }, (_, i) => `2026-11-${String(i + 1).padStart(2, "0")}`);

describe("BarChart", () => {
  it("draws one day with data as one bar, stacked, with whole-number ticks", () => {
    const values = (v: number) => days.map((_, i) => (i === 29 ? v : 0));
    render(BarChart, {
      title: "Requests per day",
      categories: days,
      series: [
        { label: "groq/a", values: values(2) },
        { label: "openai/b", values: values(1) },
      ],
      colors: ["#111", "#222"],
      format: fmtInt,
      integer: true,
      unit: "requests",
      testid: "bars",
    });
    const fig = screen.getByTestId("bars");
    expect(fig.dataset.bars).toBe("1");
    expect(fig.dataset.categories).toBe("30");
    const bar = screen.getByTestId("bar-2026-11-30");
    expect(bar.dataset.total).toBe("3");
    expect(bar.querySelectorAll("rect")).toHaveLength(2);
    expect(bar.textContent).toContain("groq/a: 2 requests");
    expect(screen.getByTestId("bar-2026-11-29").querySelectorAll("rect")).toHaveLength(0);
    const ticks = [...fig.querySelectorAll("text.y")].map((t) => t.textContent);
    expect(ticks).toEqual(["0", "1", "2", "3"]);
  });

  it("draws an empty range with a 0 to 1 axis and no bars", () => {
    render(BarChart, { title: "Nothing", categories: days, series: [], colors: [], format: fmtInt, integer: true, testid: "bars" });
    expect(screen.getByTestId("bars").dataset.bars).toBe("0");
    expect(screen.getByTestId("bars").querySelectorAll("rect")).toHaveLength(0);
  });
});
