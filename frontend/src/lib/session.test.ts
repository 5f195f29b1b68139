import { afterEach, describe, expect, it } from "vitest";
import { forgetSession, saveSession, SESSION_KEY, sessionToken, socketProtocols, splitLoginHash, takeLoginCode } from "./session";

afterEach(() => localStorage.clear());

const later = new Date(Date.now() + 86_400_000).toISOString();

describe("session storage", () => {
  it("keeps the token in this origin's localStorage until it expires", () => {
    expect(sessionToken()).toBe("");
    saveSession("tok.1.sig", later);
    expect(JSON.parse(localStorage.getItem(SESSION_KEY)!)).toEqual({ token: "tok.1.sig", expires: later });
    expect(sessionToken()).toBe("tok.1.sig");
    // At its expiry the token is forgotten, not sent.
    expect(sessionToken(localStorage, Date.parse(later))).toBe("");
    expect(localStorage.getItem(SESSION_KEY)).toBeNull();
  });

  it("forgets a damaged entry", () => {
    localStorage.setItem(SESSION_KEY, "{not json");
    expect(sessionToken()).toBe("");
    localStorage.setItem(SESSION_KEY, JSON.stringify({ expires: later }));
    expect(sessionToken()).toBe("");
    expect(localStorage.getItem(SESSION_KEY)).toBeNull();
  });

  it("forgets a refused token only if no other tab has stored a newer one", () => {
    saveSession("new", later);
    forgetSession("old");
    expect(sessionToken()).toBe("new");
    forgetSession("new");
    expect(sessionToken()).toBe("");
  });

  it("offers the session to the websocket as a subprotocol beside the feed's", () => {
    expect(socketProtocols("")).toEqual(["freelane"]);
    expect(socketProtocols("a-b_c.123.s-g")).toEqual(["freelane", "freelane.session.a-b_c.123.s-g"]);
    saveSession("stored", later);
    expect(socketProtocols()).toEqual(["freelane", "freelane.session.stored"]);
  });
});

describe("login links", () => {
  it("splits the code from the fragment and keeps a screen's route", () => {
    expect(splitLoginHash("#login=abc")).toEqual({ code: "abc", rest: "" });
    expect(splitLoginHash("#/setup?login=abc")).toEqual({ code: "abc", rest: "#/setup" });
    expect(splitLoginHash("#/requests?x=1&login=a%2Db&y=2")).toEqual({ code: "a-b", rest: "#/requests?x=1&y=2" });
    expect(splitLoginHash("#login=abc&/setup")).toEqual({ code: "abc", rest: "#/setup" });
    expect(splitLoginHash("#login=")).toEqual({ code: "", rest: "" });
    // A fragment without a code is left as it is.
    expect(splitLoginHash("#/setup")).toEqual({ code: null, rest: "#/setup" });
    expect(splitLoginHash("")).toEqual({ code: null, rest: "" });
    expect(splitLoginHash("#/overview?loginx=1")).toEqual({ code: null, rest: "#/overview?loginx=1" });
  });

  it("takes the code out of the address bar", () => {
    history.replaceState(null, "", "/#/setup?login=the-code");
    expect(takeLoginCode()).toBe("the-code");
    expect(location.hash).toBe("#/setup");
    expect(location.href).not.toContain("the-code");
    history.replaceState(null, "", "/?keep=1#login=c2");
    expect(takeLoginCode()).toBe("c2");
    expect(location.pathname + location.search + location.hash).toBe("/?keep=1");
    // Nothing to take: the URL stays.
    history.replaceState(null, "", "/#/chains");
    expect(takeLoginCode()).toBeNull();
    expect(location.hash).toBe("#/chains");
  });
});
