import { describe, expect, it } from "vitest";
import { localProvider, provider } from "../test/fixtures";
import { andList, goneReason, isDiscovered, providerLabel, splitBackend } from "./local";

describe("local servers as providers", () => {
  it("splits a backend's text into provider and model, with or without a key label", () => {
    expect(splitBackend("ollama/qwen2.5-coder:7b")).toEqual({ provider: "ollama", model: "qwen2.5-coder:7b" });
    expect(splitBackend("groq@work/meta/llama-4")).toEqual({ provider: "groq", model: "meta/llama-4" });
    expect(splitBackend("lonely")).toEqual({ provider: "lonely", model: "" });
  });

  it("tells a discovered provider from a configured one, and labels it for a picker", () => {
    expect(isDiscovered(localProvider("ollama"))).toBe(true);
    expect(isDiscovered(provider("groq"))).toBe(false);
    // A provider that says it was discovered but carries no server details is not treated as one.
    expect(isDiscovered(provider("odd", { source: "discovered" }))).toBe(false);
    expect(providerLabel(provider("groq"))).toBe("groq");
    expect(providerLabel(localProvider("lmstudio", { port: 1234, status: "hidden" }))).toBe("lmstudio (local, found on port 1234, hidden)");
  });

  it("says why an entry is gone, from what the provider list says", () => {
    const ps = [provider("groq", { disabled: true }), localProvider("ollama", {}, ["a"]), localProvider("box", { status: "foreign" })];
    expect(goneReason("groq/m1", ps)).toBe("groq is disabled");
    expect(goneReason("ollama/b", ps)).toBe("ollama no longer lists the model b");
    expect(goneReason("box/qwen2.5-coder:7b", ps)).toBe("box is another account's server and is not allowed to serve");
    expect(goneReason("nobody/x", ps)).toBe("no provider is called nobody now");
  });

  it("names lists in words", () => {
    expect(andList([])).toBe("");
    expect(andList(["a"])).toBe("a");
    expect(andList(["a", "b"])).toBe("a and b");
    expect(andList(["a", "b", "c"])).toBe("a, b and c");
  });
});
