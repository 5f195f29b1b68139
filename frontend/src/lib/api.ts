// REST helper for the admin API. Every call uses a relative URL so the page
// works on whatever host and port FreeLane serves it from (browser or the
// desktop window), and a failed call throws an ApiError whose message is the
// server's human-readable one, ready to show next to the control the user
// acted on.

import type {
  Alias,
  ApiErrorBody,
  BudgetInput,
  ChainGear,
  ChainStrategy,
  Endpoints,
  FailureClass,
  LimitsInput,
  ModelLimitsInput,
  ModelListInput,
  ProviderEdit,
  ProviderInput,
  UsageGrouping,
} from "./types";
import { forgetSession, SESSION_HEADER, sessionToken } from "./session";

type Route = keyof Endpoints;
/** What a route answers with status 2xx, as the Go side writes it. */
type Answer<R extends Route> = Endpoints[R]["response"];
/** The body a route takes, as the Go side reads it; keys left out take Go's zero value. */
type Body<R extends Route> = Endpoints[R]["request"];

export class ApiError extends Error {
  /** HTTP status, 0 when the server could not be reached. */
  status: number;
  /** The field the server blamed, e.g. "models[0].id" or "base_url". */
  param: string | null;
  code: string;

  constructor(message: string, status: number, param: string | null = null, code = "") {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.param = param;
    this.code = code;
  }
}

/** Builds the ApiError for a non-2xx answer from its body. */
export function errorFromBody(status: number, body: string): ApiError {
  try {
    const parsed = JSON.parse(body) as Partial<ApiErrorBody>;
    const e = parsed?.error;
    if (e && typeof e.message === "string" && e.message) {
      return new ApiError(e.message, status, e.param ?? null, e.code ?? "");
    }
  } catch {
    // Not JSON: fall through and show the text itself.
  }
  const text = body.trim().slice(0, 300);
  return new ApiError(text || `FreeLane answered HTTP ${status}.`, status);
}

/** The message to show for anything a call threw. */
export function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

/**
 * A message as a sentence: the server words many errors so that they can
 * follow a lead-in ("the key is longer than 4096 characters"); on their
 * own they get a capital where they open with a word of prose (a field
 * or provider name keeps its case) and a full stop.
 */
export function sentence(msg: string): string {
  let s = msg.trim().replace(/[\s:;,]+$/, "");
  if (!s) return s;
  if (/^(the|a|an|no|it|there|this|nothing|could|cannot|paste|fill|add|set|give|check|try)\b/.test(s)) {
    s = s[0].toUpperCase() + s.slice(1);
  }
  return /[.!?…)"”]$/.test(s) ? s : `${s}.`;
}

type SignedOutListener = (message: string) => void;
const signedOutListeners = new Set<SignedOutListener>();

/** Calls fn whenever FreeLane answers 401: this page has no session (any more). */
export function onSignedOut(fn: SignedOutListener): () => void {
  signedOutListeners.add(fn);
  return () => signedOutListeners.delete(fn);
}

/** How request sends a call. */
interface RequestOptions {
  /**
   * Sends no session and keeps a 401 to the caller, for signing in: a
   * refused login code says nothing about the session this page holds.
   */
  anonymous?: boolean;
  /** Sees the answer's headers, for the few answers that carry more than their body. */
  headers?: (h: Headers) => void;
}

/**
 * Sends one admin API call with the stored session in SESSION_HEADER. A 401
 * means the session is gone (expired, or the install's secret was reset):
 * the stored token is forgotten and the page told it is signed out.
 */
export async function request<T>(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<T> {
  let res: Response;
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const token = opts.anonymous ? "" : sessionToken();
  if (token) headers[SESSION_HEADER] = token;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    // The browser's own words ("Failed to fetch", "NetworkError ...")
    // say no more than this, and differ between browsers.
    throw new ApiError("The dashboard cannot reach FreeLane: it may have stopped. Start it again, then reload this page.", 0);
  }
  const text = await res.text();
  if (!res.ok) {
    const err = errorFromBody(res.status, text);
    if (res.status === 401 && !opts.anonymous) signedOut(token, err.message);
    throw err;
  }
  opts.headers?.(res.headers);
  if (res.status === 204 || text === "") return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError("FreeLane sent an answer the dashboard cannot read.", res.status);
  }
}

function signedOut(token: string, message: string): void {
  if (token) forgetSession(token);
  for (const fn of signedOutListeners) fn(message);
}

/**
 * Downloads an admin API file (the ledger's CSV) with the session: a plain
 * link cannot carry the session header, so the file is fetched and handed
 * to the browser as a download named as the server names it.
 */
export async function download(path: string, fallbackName: string): Promise<void> {
  const token = sessionToken();
  let res: Response;
  try {
    res = await fetch(path, { headers: token ? { [SESSION_HEADER]: token } : {} });
  } catch {
    // The browser's own words ("Failed to fetch", "NetworkError ...")
    // say no more than this, and differ between browsers.
    throw new ApiError("The dashboard cannot reach FreeLane: it may have stopped. Start it again, then reload this page.", 0);
  }
  if (!res.ok) {
    const err = errorFromBody(res.status, await res.text());
    if (res.status === 401) signedOut(token, err.message);
    throw err;
  }
  const name = /filename="([^"]+)"/.exec(res.headers.get("Content-Disposition") ?? "")?.[1] || fallbackName;
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  // The browser has taken the file once the click's task has run.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const seg = encodeURIComponent;

export const api = {
  /** Exchanges a login link's one-time code for a session; a refused code answers 401. */
  login: (code: string) =>
    request<Answer<"POST /api/login">>("POST", "/api/login", { code } satisfies Body<"POST /api/login">, { anonymous: true }),
  /** Answers 401 when this page has no session; see onSignedOut. */
  session: () => request<Answer<"GET /api/session">>("GET", "/api/session"),
  state: () => request<Answer<"GET /api/state">>("GET", "/api/state"),

  providers: () => request<Answer<"GET /api/providers">>("GET", "/api/providers"),
  /**
   * Adds a provider. The server tries its key first: a refused key is a 400
   * with code "key_refused", a server it cannot reach a 502 with code
   * "provider_unreachable", which unreachable_ok: true answers.
   */
  addProvider: (p: ProviderInput) => request<Answer<"POST /api/providers">>("POST", "/api/providers", p),
  /** Edits a provider: only the keys sent change; a new address or key is tried as addProvider's is. */
  updateProvider: (name: string, p: ProviderEdit) =>
    request<Answer<"PUT /api/providers/{name}">>("PUT", `/api/providers/${seg(name)}`, p),
  /** The models a provider's server lists, to pick from; listed is false for a server without a list. */
  providerModels: (q: ModelListInput) =>
    request<Answer<"POST /api/providers/models">>("POST", "/api/providers/models", q satisfies Body<"POST /api/providers/models">),
  setProviderDisabled: (name: string, disabled: boolean) =>
    request<Answer<"PATCH /api/providers/{name}">>("PATCH", `/api/providers/${seg(name)}`, {
      disabled,
    } satisfies Partial<Body<"PATCH /api/providers/{name}">>),
  /** PATCH changes only the fields sent, so every other setting of the provider stays as stored. */
  setProviderStreamUsage: (name: string, on: boolean) =>
    request<Answer<"PATCH /api/providers/{name}">>("PATCH", `/api/providers/${seg(name)}`, {
      stream_usage: on,
    } satisfies Partial<Body<"PATCH /api/providers/{name}">>),
  /** Gives a discovered local server's provider a new name; chains, limits and budgets naming it follow. */
  renameProvider: (name: string, to: string) =>
    request<Answer<"PATCH /api/providers/{name}">>("PATCH", `/api/providers/${seg(name)}`, {
      rename: to,
    } satisfies Partial<Body<"PATCH /api/providers/{name}">>),
  /** Hides a discovered local server from routing and auto (it stays listed), or shows it again. */
  setProviderHidden: (name: string, hidden: boolean) =>
    request<Answer<"PATCH /api/providers/{name}">>("PATCH", `/api/providers/${seg(name)}`, {
      hidden,
    } satisfies Partial<Body<"PATCH /api/providers/{name}">>),
  deleteProvider: (name: string) => request<Answer<"DELETE /api/providers/{name}">>("DELETE", `/api/providers/${seg(name)}`),
  testProvider: (name: string, model?: string) =>
    request<Answer<"POST /api/providers/{name}/test">>(
      "POST",
      `/api/providers/${seg(name)}/test`,
      (model ? { model } : {}) satisfies Partial<Body<"POST /api/providers/{name}/test">>,
    ),
  setKey: (name: string, key: string) =>
    request<Answer<"PUT /api/providers/{name}/key">>("PUT", `/api/providers/${seg(name)}/key`, {
      key,
    } satisfies Body<"PUT /api/providers/{name}/key">),
  deleteKey: (name: string) => request<Answer<"DELETE /api/providers/{name}/key">>("DELETE", `/api/providers/${seg(name)}/key`),
  addKey: (name: string, key: string) =>
    request<Answer<"POST /api/providers/{name}/keys">>("POST", `/api/providers/${seg(name)}/keys`, {
      key,
    } satisfies Body<"POST /api/providers/{name}/keys">),
  removeKey: (name: string, label: string) =>
    request<Answer<"DELETE /api/providers/{name}/keys/{label}">>(
      "DELETE",
      `/api/providers/${seg(name)}/keys/${seg(label)}`,
    ),

  chains: () => request<Answer<"GET /api/chains">>("GET", "/api/chains"),
  createChain: (name: string, backends: string[]) =>
    request<Answer<"POST /api/chains">>("POST", "/api/chains", {
      name,
      backends,
      strategy: "priority",
    } satisfies Partial<Body<"POST /api/chains">>),
  /** Stores a chain's routing settings; fields left out keep their values. */
  setChainRouting: (
    name: string,
    r: { strategy?: ChainStrategy; gear?: ChainGear; weights?: Record<string, number>; priority?: Record<string, number>; max_wait?: string },
  ) =>
    request<Answer<"PUT /api/chains/{name}">>("PUT", `/api/chains/${seg(name)}`, r satisfies Partial<Body<"PUT /api/chains/{name}">>),
  /** Switches a chain's gear; the switch is an event. */
  setGear: (name: string, gear: ChainGear) =>
    request<Answer<"PUT /api/chains/{name}/gear">>("PUT", `/api/chains/${seg(name)}/gear`, {
      gear,
    } satisfies Body<"PUT /api/chains/{name}/gear">),
  /** Where a request with this body would go now, and why; nothing is called. */
  previewRoute: (body: Partial<Body<"POST /api/route/preview">> & { model: string; messages: unknown[] }) =>
    request<Answer<"POST /api/route/preview">>("POST", "/api/route/preview", body),
  /** One request's trace with its routing decision. */
  request: (id: string) => request<Answer<"GET /api/requests/{id}">>("GET", `/api/requests/${seg(id)}`),
  setChainBackends: (name: string, backends: string[]) =>
    request<Answer<"PUT /api/chains/{name}">>("PUT", `/api/chains/${seg(name)}`, {
      backends,
    } satisfies Partial<Body<"PUT /api/chains/{name}">>),
  renameChain: (name: string, to: string) =>
    request<Answer<"PUT /api/chains/{name}">>("PUT", `/api/chains/${seg(name)}`, {
      name: to,
    } satisfies Partial<Body<"PUT /api/chains/{name}">>),
  deleteChain: (name: string) => request<Answer<"DELETE /api/chains/{name}">>("DELETE", `/api/chains/${seg(name)}`),

  aliases: () => request<Answer<"GET /api/aliases">>("GET", "/api/aliases"),
  /** Replaces the configured aliases; a built-in one stays unless its pattern is given another chain. */
  setAliases: (aliases: Alias[]) =>
    request<Answer<"PUT /api/aliases">>("PUT", "/api/aliases", { aliases } satisfies Body<"PUT /api/aliases">),

  requests: (q: { limit?: number; chain?: string; backend?: string; class?: FailureClass; before?: string } = {}) => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== "") params.set(k, String(v));
    const qs = params.toString();
    return request<Answer<"GET /api/requests">>("GET", `/api/requests${qs ? "?" + qs : ""}`);
  },

  /**
   * One page of the request log for a query (see GET /api/requests), and
   * the cursor of the next page ("" on the last).
   */
  requestPage: async (q: Record<string, string>) => {
    let next = "";
    const qs = new URLSearchParams(q).toString();
    const traces = await request<Answer<"GET /api/requests">>("GET", `/api/requests${qs ? "?" + qs : ""}`, undefined, {
      headers: (h) => (next = h.get("X-FreeLane-Next-Cursor") ?? ""),
    });
    return { traces: traces ?? [], next };
  },

  /** Every tool's settings for this FreeLane, with model as the model they ask for. */
  connect: (model = "auto") => request<Answer<"GET /api/connect">>("GET", `/api/connect?model=${seg(model)}`),

  /** Pauses or resumes routing: while paused /v1 answers 503. */
  setRouting: (paused: boolean) =>
    request<Answer<"PUT /api/routing">>("PUT", "/api/routing", { paused } satisfies Body<"PUT /api/routing">),

  notifications: () => request<Answer<"GET /api/notifications">>("GET", "/api/notifications"),
  notificationSettings: () => request<Answer<"GET /api/notifications/settings">>("GET", "/api/notifications/settings"),
  /** Switches kinds of notification on or off; kinds left out keep their setting. */
  setNotificationSettings: (s: Partial<Body<"PUT /api/notifications/settings">>) =>
    request<Answer<"PUT /api/notifications/settings">>("PUT", "/api/notifications/settings", s),
  budgets: () => request<Answer<"GET /api/budgets">>("GET", "/api/budgets"),
  /** Replaces every budget with this list. */
  setBudgets: (list: BudgetInput[]) =>
    request<Answer<"PUT /api/budgets">>("PUT", "/api/budgets", list satisfies Body<"PUT /api/budgets">),

  limits: () => request<Answer<"GET /api/limits">>("GET", "/api/limits"),
  setProviderLimits: (provider: string, limits: LimitsInput) =>
    request<Answer<"PUT /api/limits/{provider}">>("PUT", `/api/limits/${seg(provider)}`, { limits }),
  setModelLimits: (provider: string, model: string, body: ModelLimitsInput) =>
    request<Answer<"PUT /api/limits/{provider}/{model...}">>("PUT", `/api/limits/${seg(provider)}/${modelPath(model)}`, body),

  usage: (q: { from: string; to: string; group_by: UsageGrouping }) =>
    request<Answer<"GET /api/usage">>("GET", `/api/usage?${usageQuery(q)}`),
  /** What prompt caching and the response cache did over the window ending now ("24h", "7d"). */
  caching: (window = "24h") =>
    request<Answer<"GET /api/caching">>("GET", `/api/caching?window=${encodeURIComponent(window)}`),

  /** The provider catalog in use, with the entries already configured and the key variables found. */
  catalog: () => request<Answer<"GET /api/catalog">>("GET", "/api/catalog"),
  /**
   * Adds a catalog entry as a provider. The server checks the key with the
   * provider first, so a refused key comes back as a 400 naming "key".
   */
  /**
   * Adds a provider from the catalog once its key is checked. A vendor out
   * of reach is refused with the code "provider_unreachable", which
   * unreachableOk answers: the provider is added with its key not yet
   * checked.
   */
  addFromCatalog: (id: string, key: string, values?: Record<string, string>, unreachableOk = false) =>
    request<Answer<"POST /api/catalog/{id}">>("POST", `/api/catalog/${seg(id)}`, {
      key,
      ...(values && Object.keys(values).length ? { values } : {}),
      ...(unreachableOk ? { unreachable_ok: true } : {}),
    } satisfies Body<"POST /api/catalog/{id}">),
  /** Loads a newer catalog file; a file that fails its checks is refused with its problems by line. */
  loadCatalog: (url: string) =>
    request<Answer<"POST /api/catalog">>("POST", "/api/catalog", { url } satisfies Body<"POST /api/catalog">),
  /**
   * Answers an address a newer catalog gives that waits for the user:
   * "confirm" puts it in use, "keep" keeps the address in use. to is the
   * address shown, so the answer applies to it only.
   */
  decideCatalogChange: (id: string, decision: "confirm" | "keep", to: string) =>
    request<Answer<"POST /api/catalog/changes/{id}">>("POST", `/api/catalog/changes/${seg(id)}`, {
      decision,
      to,
    } satisfies Body<"POST /api/catalog/changes/{id}">),

  /** What the first-run setup shows: whether anything can serve, keys and local servers found. */
  setup: () => request<Answer<"GET /api/setup">>("GET", "/api/setup"),
  /** Looks for local model servers again now. */
  scanLocal: () => request<Answer<"POST /api/setup/scan">>("POST", "/api/setup/scan"),
  /** Lets a local server run by another user serve (allow), or withdraws that permission. */
  allowLocal: (server: Body<"POST /api/setup/local/allow">, allow: boolean) =>
    request<Answer<"POST /api/setup/local/allow">>(
      "POST",
      allow ? "/api/setup/local/allow" : "/api/setup/local/withdraw",
      server,
    ),
  /** Sends one short request through the router ("auto" unless a model is given) and reports its route. */
  testRoute: (model?: string) =>
    request<Answer<"POST /api/setup/test">>(
      "POST",
      "/api/setup/test",
      (model ? { model } : {}) satisfies Partial<Body<"POST /api/setup/test">>,
    ),
};

/** A model id as URL path segments: its slashes stay slashes ("{model...}" on the server). */
export function modelPath(model: string): string {
  return model.split("/").map(seg).join("/");
}

/** The query of /api/usage and /api/usage.csv, in a fixed order. */
export function usageQuery(q: { from: string; to: string; group_by?: string }): string {
  const p = new URLSearchParams();
  if (q.group_by) p.set("group_by", q.group_by);
  p.set("from", q.from);
  p.set("to", q.to);
  // URLSearchParams writes the comma of "day,backend" as %2C; keep it readable.
  return p.toString().replace(/%2C/g, ",");
}

/** The relative URL of the ledger export. */
export function usageCsvURL(from: string, to: string): string {
  return `/api/usage.csv?${usageQuery({ from, to })}`;
}
