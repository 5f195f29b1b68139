import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { auth, checkSession, watchLoginLinks, watchSignIn } from "./auth.svelte";
import { saveSession, SESSION_HEADER, SESSION_KEY, sessionToken } from "./session";

const later = new Date(Date.now() + 86_400_000).toISOString();

/**
 * A FreeLane for the page: POST /api/login takes only "good-code", once,
 * and GET /api/session answers 200 only to a session it handed out.
 */
function fakeFreeLane() {
  const issued = new Set<string>();
  const codes = new Set(["good-code"]);
  const calls: string[] = [];
  const fn = async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input);
    const method = init?.method ?? "GET";
    const headers = (init?.headers as Record<string, string>) ?? {};
    calls.push(`${method} ${url}`);
    const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
    if (method === "POST" && url === "/api/login") {
      const { code } = JSON.parse(String(init?.body)) as { code: string };
      if (!codes.delete(code)) return json(401, { error: { message: "this dashboard login link was used already", code: "login_failed" } });
      const session = `s${issued.size}.1.sig`;
      issued.add(session);
      return json(200, { session, expires: later });
    }
    if (url === "/api/session") {
      return issued.has(headers[SESSION_HEADER]) ? json(200, { expires: later }) : json(401, { error: { message: "run freelane dashboard-url", code: "session_required" } });
    }
    return json(404, { error: { message: "not in this test" } });
  };
  return { fn, calls, issued };
}

beforeEach(() => {
  auth.signedOut = false;
  auth.loginFailed = false;
  auth.message = "";
});
afterEach(() => {
  vi.unstubAllGlobals();
  localStorage.clear();
  history.replaceState(null, "", "/");
});

describe("checkSession", () => {
  it("exchanges the link's code for a session, keeps it and lands on the link's screen", async () => {
    const f = fakeFreeLane();
    vi.stubGlobal("fetch", f.fn);
    history.replaceState(null, "", "/#/setup?login=good-code");
    expect(await checkSession()).toBe(true);
    expect(location.hash).toBe("#/setup");
    expect(location.href).not.toContain("good-code");
    expect(f.calls).toEqual(["POST /api/login", "GET /api/session"]);
    expect(f.issued.has(sessionToken())).toBe(true);
    expect(auth.signedOut).toBe(false);
    expect(auth.loginFailed).toBe(false);
    // A reload (or a new tab) needs no code: the stored session is sent.
    expect(await checkSession(null)).toBe(true);
  });

  it("shows the login-failed state for a used code", async () => {
    const f = fakeFreeLane();
    vi.stubGlobal("fetch", f.fn);
    history.replaceState(null, "", "/#login=good-code");
    expect(await checkSession()).toBe(true);
    localStorage.clear();
    history.replaceState(null, "", "/#login=good-code");
    expect(await checkSession()).toBe(false);
    expect(location.hash).toBe("");
    expect(auth.loginFailed).toBe(true);
    expect(auth.signedOut).toBe(true);
    expect(auth.message).toBe("run freelane dashboard-url");
  });

  it("keeps a page signed in that opens a used link while it has a session", async () => {
    const f = fakeFreeLane();
    vi.stubGlobal("fetch", f.fn);
    expect(await checkSession("good-code")).toBe(true);
    expect(await checkSession("good-code")).toBe(true);
    expect(auth.signedOut).toBe(false);
  });

  it("is signed out without a code or a session", async () => {
    vi.stubGlobal("fetch", fakeFreeLane().fn);
    expect(await checkSession(null)).toBe(false);
    expect(auth.signedOut).toBe(true);
    expect(auth.loginFailed).toBe(false);
  });
});

describe("watchLoginLinks", () => {
  it("signs a signed-out page in from a link opened in it without a reload", async () => {
    const f = fakeFreeLane();
    vi.stubGlobal("fetch", f.fn);
    history.replaceState(null, "", "/#/overview");
    expect(await checkSession(null)).toBe(false);
    expect(auth.signedOut).toBe(true);
    const fn = vi.fn();
    const stop = watchLoginLinks(fn);
    // Opening /#login=CODE in the same tab only changes the fragment.
    history.replaceState(null, "", "/#login=good-code");
    window.dispatchEvent(new HashChangeEvent("hashchange"));
    await vi.waitFor(() => expect(fn).toHaveBeenCalledOnce());
    expect(location.hash).toBe("");
    expect(auth.signedOut).toBe(false);
    expect(f.issued.has(sessionToken())).toBe(true);
    // A route change without a code does nothing.
    history.replaceState(null, "", "/#/chains");
    window.dispatchEvent(new HashChangeEvent("hashchange"));
    await Promise.resolve();
    expect(f.calls.filter((c) => c === "POST /api/login")).toHaveLength(1);
    stop();
  });
});

describe("watchSignIn", () => {
  it("follows a sign-in in another tab while signed out", () => {
    const fn = vi.fn();
    const stop = watchSignIn(fn);
    auth.signedOut = true;
    auth.loginFailed = true;
    // Another key, or no session stored: nothing happens.
    window.dispatchEvent(new StorageEvent("storage", { key: "other" }));
    window.dispatchEvent(new StorageEvent("storage", { key: SESSION_KEY }));
    expect(fn).not.toHaveBeenCalled();
    saveSession("t.1.sig", later);
    window.dispatchEvent(new StorageEvent("storage", { key: SESSION_KEY }));
    expect(fn).toHaveBeenCalledOnce();
    expect(auth.signedOut).toBe(false);
    expect(auth.loginFailed).toBe(false);
    stop();
  });
});
