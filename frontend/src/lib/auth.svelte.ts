// Whether this page may use the admin API. The dashboard controls the
// user's API keys, so FreeLane answers it only within a session started
// from a one-time login link; without one every call answers 401, and the
// dashboard shows how to get a link instead of its screens.
//
// A login link carries its code in the URL's fragment (#login=CODE), which
// no server, proxy or log sees. The page takes it out of the address bar
// and exchanges it with POST /api/login for a session token, which
// lib/session.ts keeps.

import { api, ApiError, onSignedOut } from "./api";
import { saveSession, SESSION_KEY, sessionToken, takeLoginCode } from "./session";

export const auth = $state({
  /** True once FreeLane answered 401. */
  signedOut: false,
  /** FreeLane's own words on how to get in. */
  message: "",
  /** True when the page was opened from a link that was used or expired. */
  loginFailed: false,
});

onSignedOut((message) => {
  auth.signedOut = true;
  auth.message = message;
});

/**
 * Exchanges a login code for a session and keeps it. A code FreeLane
 * refused (used, expired, from an earlier run or malformed) marks the
 * login as failed; an unreachable FreeLane is left to the session check
 * that follows.
 */
export async function signIn(code: string): Promise<void> {
  try {
    const v = await api.login(code);
    saveSession(v.session, v.expires);
    auth.loginFailed = false;
  } catch (e) {
    if (e instanceof ApiError && e.status !== 0) auth.loginFailed = true;
  }
}

/**
 * Signs in with the login code the page was opened with, if any (code
 * defaults to taking it out of the address bar), then asks FreeLane
 * whether this page has a session. It resolves to false only when FreeLane
 * said no; an unreachable FreeLane is left to the live store's retries.
 */
export async function checkSession(code: string | null = takeLoginCode()): Promise<boolean> {
  if (code !== null) await signIn(code);
  try {
    await api.session();
    auth.signedOut = false;
    auth.message = "";
    return true;
  } catch (e) {
    return !(e instanceof ApiError && e.status === 401);
  }
}

/**
 * Signs in with a login link opened in this page after it loaded: a link
 * that differs from the page's URL only in its fragment does not reload
 * the page, so the code arrives as a hashchange. fn runs once the page is
 * signed in. It returns the function that stops watching.
 */
export function watchLoginLinks(fn: () => void): () => void {
  if (typeof window === "undefined") return () => {};
  const onHash = () => {
    const code = takeLoginCode();
    if (code === null) return;
    void checkSession(code).then((ok) => {
      if (ok) fn();
    });
  };
  window.addEventListener("hashchange", onHash);
  return () => window.removeEventListener("hashchange", onHash);
}

/**
 * Calls fn when another tab of this origin signs in while this page is
 * signed out, so that the page follows without a reload. It returns the
 * function that stops watching.
 */
export function watchSignIn(fn: () => void): () => void {
  if (typeof window === "undefined") return () => {};
  const onStorage = (e: StorageEvent) => {
    if (e.key !== SESSION_KEY || !auth.signedOut || !sessionToken()) return;
    auth.signedOut = false;
    auth.loginFailed = false;
    auth.message = "";
    fn();
  };
  window.addEventListener("storage", onStorage);
  return () => window.removeEventListener("storage", onStorage);
}
