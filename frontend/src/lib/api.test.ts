import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeFetch } from "../test/fixtures";
import { api, ApiError, download, errorFromBody, onSignedOut } from "./api";
import { saveSession, SESSION_HEADER, sessionToken } from "./session";

afterEach(() => {
  vi.unstubAllGlobals();
  localStorage.clear();
});

const later = new Date(Date.now() + 86_400_000).toISOString();

/** A fetch that records each call's headers, answering with status. */
function headerFetch(status = 200, body: unknown = {}) {
  const seen: { url: string; method: string; headers: Record<string, string> }[] = [];
  const fn = async (input: RequestInfo | URL, init?: RequestInit) => {
    seen.push({ url: String(input), method: init?.method ?? "GET", headers: { ...((init?.headers as Record<string, string>) ?? {}) } });
    return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
  };
  return { fn, seen };
}

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
    const f = fakeFetch(() => ({ body: { name: "a b", backends: [], strategy: "priority", gear: "auto", max_wait: "", generated: false } }));
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
    await expect(api.state()).rejects.toThrow(/cannot reach FreeLane/);
  });

  it("builds request-log queries from the filters that are set", async () => {
    const f = fakeFetch(() => ({ body: [] }));
    vi.stubGlobal("fetch", f.fn);
    await api.requests({ limit: 100, chain: "coding", backend: "", class: "ok" });
    expect(f.calls[0].url).toBe("/api/requests?limit=100&chain=coding&class=ok");
  });

  it("sends the stored session in its header on every call, reads and writes alike", async () => {
    saveSession("tok.1.sig", later);
    const f = headerFetch();
    vi.stubGlobal("fetch", f.fn);
    await api.state();
    await api.setRouting(true);
    await api.deleteKey("groq");
    expect(f.seen.map((c) => [c.method, c.headers[SESSION_HEADER]])).toEqual([
      ["GET", "tok.1.sig"],
      ["PUT", "tok.1.sig"],
      ["DELETE", "tok.1.sig"],
    ]);
    // No anti-CSRF header any more: the session header does its job.
    expect(f.seen.some((c) => "X-FreeLane-CSRF" in c.headers)).toBe(false);
  });

  it("sends no session header without a session", async () => {
    const f = headerFetch();
    vi.stubGlobal("fetch", f.fn);
    await api.state();
    expect(SESSION_HEADER in f.seen[0].headers).toBe(false);
  });

  it("signs in without sending a session, keeping a refused code's 401 to itself", async () => {
    saveSession("old.1.sig", later);
    const ok = headerFetch(200, { session: "new.2.sig", expires: later });
    vi.stubGlobal("fetch", ok.fn);
    expect(await api.login("the-code")).toEqual({ session: "new.2.sig", expires: later });
    expect(ok.seen[0].method).toBe("POST");
    expect(ok.seen[0].url).toBe("/api/login");
    expect(SESSION_HEADER in ok.seen[0].headers).toBe(false);

    const refused = headerFetch(401, { error: { message: "this dashboard login link was used already", code: "login_failed" } });
    vi.stubGlobal("fetch", refused.fn);
    const seen: string[] = [];
    const off = onSignedOut((m) => seen.push(m));
    const e = await api.login("used").catch((err: unknown) => err);
    off();
    expect((e as ApiError).status).toBe(401);
    expect((e as ApiError).code).toBe("login_failed");
    // The page's own session is untouched by a refused code.
    expect(seen).toEqual([]);
    expect(sessionToken()).toBe("old.1.sig");
  });

  it("forgets the stored session when FreeLane refuses it", async () => {
    saveSession("gone.1.sig", later);
    vi.stubGlobal("fetch", headerFetch(401, { error: { message: "run freelane dashboard-url" } }).fn);
    await expect(api.state()).rejects.toThrow("run freelane dashboard-url");
    expect(sessionToken()).toBe("");
  });

  it("downloads a file with the session and the server's file name", async () => {
    saveSession("tok.1.sig", later);
    const seen: Record<string, string>[] = [];
    vi.stubGlobal("fetch", async (_: RequestInfo | URL, init?: RequestInit) => {
      seen.push({ ...((init?.headers as Record<string, string>) ?? {}) });
      return new Response("time,request_id\n", { headers: { "Content-Disposition": 'attachment; filename="freelane-usage-a-b.csv"' } });
    });
    const clicked: { name: string; href: string }[] = [];
    const click = vi.spyOn(HTMLAnchorElement.prototype, "click").mockImplementation(function (this: HTMLAnchorElement) {
      clicked.push({ name: this.download, href: this.href });
    });
    await download("/api/usage.csv?from=a&to=b", "fallback.csv");
    click.mockRestore();
    expect(seen[0][SESSION_HEADER]).toBe("tok.1.sig");
    expect(clicked).toHaveLength(1);
    expect(clicked[0].name).toBe("freelane-usage-a-b.csv");
    expect(clicked[0].href.startsWith("blob:")).toBe(true);
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
