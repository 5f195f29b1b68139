// REST helper for the admin API. Every call uses a relative URL so the page
// works on whatever host and port FreeLane serves it from (browser or the
// desktop window), and a failed call throws an ApiError whose message is the
// server's human-readable one, ready to show next to the control the user
// acted on.

import type {
  ApiErrorBody,
  BudgetInput,
  BudgetView,
  ChainView,
  Limits,
  LimitsEntry,
  Price,
  ProviderInput,
  ProviderView,
  Snapshot,
  TestResult,
  Trace,
  UsageReport,
} from "./types";

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

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: body === undefined ? { Accept: "application/json" } : { Accept: "application/json", "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(`Cannot reach FreeLane (${messageOf(e)}). Is it still running?`, 0);
  }
  const text = await res.text();
  if (!res.ok) throw errorFromBody(res.status, text);
  if (res.status === 204 || text === "") return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError("FreeLane sent an answer the dashboard cannot read.", res.status);
  }
}

const seg = encodeURIComponent;

export const api = {
  state: () => request<Snapshot>("GET", "/api/state"),

  providers: () => request<ProviderView[]>("GET", "/api/providers"),
  addProvider: (p: ProviderInput) => request<ProviderView>("POST", "/api/providers", p),
  setProviderDisabled: (name: string, disabled: boolean) =>
    request<ProviderView>("PATCH", `/api/providers/${seg(name)}`, { disabled }),
  /** PATCH changes only the fields sent, so every other setting of the provider stays as stored. */
  setProviderStreamUsage: (name: string, on: boolean) =>
    request<ProviderView>("PATCH", `/api/providers/${seg(name)}`, { stream_usage: on }),
  deleteProvider: (name: string) => request<void>("DELETE", `/api/providers/${seg(name)}`),
  testProvider: (name: string, model?: string) =>
    request<TestResult>("POST", `/api/providers/${seg(name)}/test`, model ? { model } : {}),
  setKey: (name: string, key: string) => request<ProviderView>("PUT", `/api/providers/${seg(name)}/key`, { key }),
  deleteKey: (name: string) => request<ProviderView>("DELETE", `/api/providers/${seg(name)}/key`),

  chains: () => request<ChainView[]>("GET", "/api/chains"),
  createChain: (name: string, backends: string[]) =>
    request<ChainView>("POST", "/api/chains", { name, backends, strategy: "ordered" }),
  setChainBackends: (name: string, backends: string[]) =>
    request<ChainView>("PUT", `/api/chains/${seg(name)}`, { backends }),
  renameChain: (name: string, to: string) => request<ChainView>("PUT", `/api/chains/${seg(name)}`, { name: to }),
  deleteChain: (name: string) => request<void>("DELETE", `/api/chains/${seg(name)}`),

  requests: (q: { limit?: number; chain?: string; backend?: string; class?: string; before?: string } = {}) => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== "") params.set(k, String(v));
    const qs = params.toString();
    return request<Trace[]>("GET", `/api/requests${qs ? "?" + qs : ""}`);
  },

  /** Pauses or resumes routing: while paused /v1 answers 503. */
  setRouting: (paused: boolean) => request<unknown>("PUT", "/api/routing", { paused }),

  budgets: () => request<BudgetView[]>("GET", "/api/budgets"),
  /** Replaces every budget with this list. */
  setBudgets: (list: BudgetInput[]) => request<BudgetView[]>("PUT", "/api/budgets", list),

  limits: () => request<LimitsEntry[]>("GET", "/api/limits"),
  setProviderLimits: (provider: string, limits: Limits) =>
    request<unknown>("PUT", `/api/limits/${seg(provider)}`, { limits }),
  setModelLimits: (provider: string, model: string, body: { limits: Limits; price: Price | null; credit_expires: string }) =>
    request<unknown>("PUT", `/api/limits/${seg(provider)}/${modelPath(model)}`, body),

  usage: (q: { from: string; to: string; group_by: string }) =>
    request<UsageReport>("GET", `/api/usage?${usageQuery(q)}`),
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
