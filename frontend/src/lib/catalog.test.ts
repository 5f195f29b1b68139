import { describe, expect, it } from "vitest";
import { catalogEntry } from "../test/fixtures";
import { catalogMatches, groupCatalog } from "./catalog";

describe("catalog", () => {
  it("matches every word by name, id or model id, ignoring case", () => {
    const e = catalogEntry("cloudflare", { name: "Cloudflare Workers AI", models: [{ id: "@cf/meta/llama-3.1-8b", params_b: 8, context: 0, max_output: 0, capabilities: [], limits: [], price: null }] });
    expect(catalogMatches(e, "")).toBe(true);
    expect(catalogMatches(e, "workers")).toBe(true);
    expect(catalogMatches(e, "CLOUDFLARE llama")).toBe(true);
    expect(catalogMatches(e, "llama-3.1")).toBe(true);
    expect(catalogMatches(e, "llama groq")).toBe(false);
  });

  it("groups by offer in order and leaves empty groups out", () => {
    const groups = groupCatalog([catalogEntry("a", { tier: "paid" }), catalogEntry("b"), catalogEntry("c", { tier: "trial" }), catalogEntry("d", { tier: "local" })]);
    expect(groups.map((g) => [g.label, g.entries.map((e) => e.id)])).toEqual([
      ["Free", ["b"]],
      ["Trial credit", ["c"]],
      ["Paid (your key)", ["a"]],
      ["Local", ["d"]],
    ]);
    expect(groupCatalog([catalogEntry("a", { tier: "paid" })]).map((g) => g.tier)).toEqual(["paid"]);
  });
});
