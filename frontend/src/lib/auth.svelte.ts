// Whether this page may use the admin API. The dashboard controls the
// user's API keys, so FreeLane answers it only within a session started
// from a one-time login link; without one every call answers 401, and the
// dashboard shows how to get a link instead of its screens.

import { api, ApiError, onSignedOut } from "./api";

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
 * Reads the login outcome from the URL (and drops it from the address
 * bar), then asks FreeLane whether this page has a session. It resolves to
 * false only when FreeLane said no; an unreachable FreeLane is left to the
 * live store's retries.
 */
export async function checkSession(): Promise<boolean> {
  const params = new URLSearchParams(location.search);
  if (params.has("login_failed")) {
    auth.loginFailed = true;
    history.replaceState(null, "", location.pathname + location.hash);
  }
  try {
    await api.session();
    return true;
  } catch (e) {
    return !(e instanceof ApiError && e.status === 401);
  }
}
