import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeFetch } from "../test/fixtures";
import { api, ApiError, csrfToken, errorFromBody, onSignedOut } from "./api";

afterEach(() => vi.unstubAllGlobals());

describe("api", () => {
  it("turns an error body into its message and field", () => {
    const e = errorFromBody(400, JSON.stringify({ error: { message: "base_url must start with http", type: "invalid_request_error", code: "invalid", param: "base_url" } }));
    expect(e).toBeInstanceOf(ApiError);
    expect(e.message).toBe("base_url must start with http");
    expect(e.param).toBe("base_url");
    expect(e.status).toBe(400);
  });

  it("falls back to the text of a body that is not the error shape", () => {
    expect(errorFromBody(502, "Bad Gateway\n").message).toBe("Bad Gateway");
    expect(errorFromBody(500, "").message).toBe("FreeLane answered HTTP 500.");
  });

  it("uses relative URLs, encodes names and sends JSON", async () => {
    const f = fakeFetch(() => ({ body: { name: "a b", backends: [], strategy: "ordered", generated: false } }));
    vi.stubGlobal("fetch", f.fn);
    await api.setChainBackends("a b", ["x/y"]);
    expect(f.calls).toEqual([{ method: "PUT", url: "/api/chains/a%20b", body: { backends: ["x/y"] } }]);
  });

  it("throws the server's message", async () => {
    const f = fakeFetch(() => ({ status: 404, body: { error: { message: "no chain named x", param: null } } }));
    vi.stubGlobal("fetch", f.fn);
    await expect(api.deleteChain("x")).rejects.toThrow("no chain named x");
  });

  it("explains a server that cannot be reached", async () => {
    vi.stubGlobal("fetch", async () => {
      throw new TypeError("Failed to fetch");
    });
    await expect(api.state()).rejects.toThrow(/Cannot reach FreeLane/);
  });

  it("builds request-log queries from the filters that are set", async () => {
    const f = fakeFetch(() => ({ body: [] }));
    vi.stubGlobal("fetch", f.fn);
    await api.requests({ limit: 100, chain: "coding", backend: "", class: "ok" });
    expect(f.calls[0].url).toBe("/api/requests?limit=100&chain=coding&class=ok");
  });

  it("reads the anti-CSRF token from the cookie named after the port", () => {
    expect(csrfToken("a=1; freelane_csrf_7788=tok%2Den; freelane_csrf_9999=other", "7788")).toBe("tok-en");
    expect(csrfToken("freelane_csrf=plain", "")).toBe("plain");
    expect(csrfToken("freelane_csrf_9999=other", "7788")).toBe("");
  });

  it("tells the page it is signed out on 401", async () => {
    const f = fakeFetch(() => ({ status: 401, body: { error: { message: "run freelane dashboard-url", param: null } } }));
    vi.stubGlobal("fetch", f.fn);
    const seen: string[] = [];
    const off = onSignedOut((m) => seen.push(m));
    await expect(api.state()).rejects.toThrow("run freelane dashboard-url");
    off();
    expect(seen).toEqual(["run freelane dashboard-url"]);
  });

  it("sends catalog adds with their values only when there are some, and the setup's calls", async () => {
    const f = fakeFetch(() => ({ body: {} }));
    vi.stubGlobal("fetch", f.fn);
    await api.addFromCatalog("groq", "gsk-1");
    await api.addFromCatalog("cloudflare", "cf-1", { CLOUDFLARE_ACCOUNT_ID: "acc" });
    await api.loadCatalog("https://example.org/c.yaml");
    await api.catalog();
    await api.setup();
    await api.scanLocal();
    await api.testRoute();
    await api.testRoute("coding");
    expect(f.calls).toEqual([
      { method: "POST", url: "/api/catalog/groq", body: { key: "gsk-1" } },
      { method: "POST", url: "/api/catalog/cloudflare", body: { key: "cf-1", values: { CLOUDFLARE_ACCOUNT_ID: "acc" } } },
      { method: "POST", url: "/api/catalog", body: { url: "https://example.org/c.yaml" } },
      { method: "GET", url: "/api/catalog", body: undefined },
      { method: "GET", url: "/api/setup", body: undefined },
      { method: "POST", url: "/api/setup/scan", body: undefined },
      { method: "POST", url: "/api/setup/test", body: {} },
      { method: "POST", url: "/api/setup/test", body: { model: "coding" } },
    ]);
  });

  it("keeps a refused key's field and message", async () => {
    const f = fakeFetch(() => ({ status: 400, body: { error: { message: "Groq refused the key", param: "key" } } }));
    vi.stubGlobal("fetch", f.fn);
    const e = await api.addFromCatalog("groq", "bad").catch((err: unknown) => err);
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).param).toBe("key");
    expect((e as ApiError).status).toBe(400);
  });
});
