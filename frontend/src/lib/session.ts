// The dashboard's session: the token FreeLane hands out for a login link's
// one-time code, kept in this origin's localStorage and sent by the page
// itself on every call.
//
// No cookie is involved on purpose. Browsers send the cookies of
// 127.0.0.1 to every port of it, so a server another account runs on
// another port would receive a session cookie the moment the user followed
// a link there. Web storage is kept per origin (scheme, host and port), so
// no page of another port can read the token, and a page of another
// origin cannot send FreeLane's custom header without a CORS preflight
// FreeLane never grants.
//
// localStorage rather than sessionStorage: the user stays signed in
// across a reload, in a new tab and after the browser restarts, as with
// the cookie before, until the session's own expiry. sessionStorage would
// sign every new tab out and send the user back to the terminal for a new
// link each time.

/** The localStorage key of the session. */
export const SESSION_KEY = "freelane.session";

/** The header every /api call carries the session token in. */
export const SESSION_HEADER = "X-FreeLane-Session";

/** The websocket subprotocol of the live feed, which the server selects. */
export const SOCKET_PROTOCOL = "freelane";

/** Starts the subprotocol that offers the session to the websocket. */
export const SOCKET_SESSION_PREFIX = `${SOCKET_PROTOCOL}.session.`;

/** The key of the one-time code in a login link's fragment: #login=CODE. */
export const LOGIN_KEY = "login";

interface Stored {
  token: string;
  /** RFC 3339, as the server wrote it. */
  expires: string;
}

/** The part of Storage this module uses. */
export type StorageLike = Pick<Storage, "getItem" | "setItem" | "removeItem">;

function local(): StorageLike | null {
  try {
    return typeof localStorage === "undefined" ? null : localStorage;
  } catch {
    // Storage can be switched off; the page then cannot keep a session.
    return null;
  }
}

/** The stored session token, or "" when there is none or it has expired. */
export function sessionToken(storage: StorageLike | null = local(), now: number = Date.now()): string {
  const raw = storage?.getItem(SESSION_KEY);
  if (!raw) return "";
  try {
    const s = JSON.parse(raw) as Partial<Stored>;
    const exp = Date.parse(s.expires ?? "");
    if (typeof s.token === "string" && s.token && !(exp <= now)) return s.token;
  } catch {
    // Not ours or damaged: forget it below.
  }
  storage?.removeItem(SESSION_KEY);
  return "";
}

/** Keeps a session token FreeLane handed out, until expires. */
export function saveSession(token: string, expires: string, storage: StorageLike | null = local()): void {
  try {
    storage?.setItem(SESSION_KEY, JSON.stringify({ token, expires } satisfies Stored));
  } catch {
    // A full or switched-off storage: the page works until it is reloaded.
  }
}

/**
 * Forgets the stored session, but only if it is still token: another tab
 * may have signed in afresh since token was sent and refused.
 */
export function forgetSession(token: string, storage: StorageLike | null = local()): void {
  if (!storage) return;
  const raw = storage.getItem(SESSION_KEY);
  if (!raw) return;
  try {
    if ((JSON.parse(raw) as Partial<Stored>).token !== token) return;
  } catch {
    // Damaged: remove it.
  }
  storage.removeItem(SESSION_KEY);
}

/** The subprotocols the live feed's websocket offers: the feed's, and the session. */
export function socketProtocols(token: string = sessionToken()): string[] {
  return token ? [SOCKET_PROTOCOL, SOCKET_SESSION_PREFIX + token] : [SOCKET_PROTOCOL];
}

/**
 * Splits a URL fragment into a login code and the fragment without it. The
 * code stands alone (#login=CODE) or among the parameters of a screen's
 * route (#/setup?login=CODE); code is null when there is none.
 */
export function splitLoginHash(hash: string): { code: string | null; rest: string } {
  const body = hash.replace(/^#/, "");
  const q = body.startsWith("/") ? body.indexOf("?") : -1;
  const route = body.startsWith("/") ? (q < 0 ? body : body.slice(0, q)) : "";
  const params = body.startsWith("/") ? (q < 0 ? "" : body.slice(q + 1)) : body;
  let code: string | null = null;
  const kept: string[] = [];
  for (const p of params.split("&")) {
    if (p === "") continue;
    if (p === LOGIN_KEY || p.startsWith(LOGIN_KEY + "=")) {
      if (code === null) code = decodeComponent(p.slice(LOGIN_KEY.length + 1));
    } else kept.push(p);
  }
  if (code === null) return { code, rest: hash };
  const tail = kept.join("&");
  const rest = route ? route + (tail ? "?" + tail : "") : tail;
  return { code, rest: rest ? "#" + rest : "" };
}

function decodeComponent(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Takes the login code out of the address bar, so that it is not kept in
 * the history or copied along with the URL, and returns it (null when the
 * page was not opened from a login link). The rest of the fragment, a
 * screen's route, stays.
 */
export function takeLoginCode(loc: Pick<Location, "pathname" | "search" | "hash"> = location, hist: Pick<History, "replaceState" | "state"> = history): string | null {
  const { code, rest } = splitLoginHash(loc.hash);
  if (code === null) return null;
  hist.replaceState(hist.state, "", loc.pathname + loc.search + rest);
  return code;
}
