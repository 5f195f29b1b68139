// Hand-made API data for the unit tests, typed by the generated wire types
// so they stay shaped like what the server sends.
import type {
  BackendView,
  BudgetView,
  CatalogEntry,
  CatalogView,
  Limits,
  LimitUse,
  MetricWindow,
  ProviderLocal,
  ProviderView,
  QuotaView,
  SetupView,
  Snapshot,
  Trace,
  UpdateMessage,
  UsageRow,
} from "../lib/types";
import type { TeamView } from "../lib/wire.gen";

/** The clock the quota fixtures are written against: 2026-11-30 12:00 UTC. */
export const NOW = Date.parse("2026-11-30T12:00:00Z");
const at = (ms: number) => new Date(NOW + ms).toISOString();
const MIN = 60_000;
const HOUR = 60 * MIN;

export function metricWindow(over: Partial<MetricWindow> = {}): MetricWindow {
  return {
    requests: 120,
    rps: 2,
    success_rate: 0.975,
    failures: 3,
    failovers: 2,
    latency_ms: { p50: 412, p95: 980, p99: 1530 },
    ttft_ms: { p50: 180, p95: 420, p99: 700 },
    ...over,
  };
}

export function backend(name: string, over: Partial<BackendView> = {}): BackendView {
  const [provider, ...rest] = name.split("/");
  return {
    name,
    provider,
    key: "",
    model: rest.join("/"),
    tier: "free",
    status: "serving",
    state: "closed",
    health: 1,
    reason: "",
    until: null,
    windows: { "1m": metricWindow(), "5m": metricWindow({ rps: 1.5 }), "1h": metricWindow({ rps: 1 }) },
    today: { calls: 0, failures: 0 },
    probe: { last: null, ok: true, message: "" },
    ...over,
  };
}

export function provider(name: string, over: Partial<ProviderView> = {}): ProviderView {
  return {
    name,
    catalog: "",
    kind: "openai",
    tier: "free",
    default: false,
    base_url: `https://${name}.example/v1`,
    keyless: false,
    disabled: false,
    probe: true,
    stream_usage: true,
    headers: {},
    key: { set: true, masked: "sk-...a1b2", source: "dashboard", env: [], file: "" },
    keys: [],
    source: "config",
    models: [{ id: "m1", params_b: 70, context: 131072, max_output: 0 }],
    timeouts: { connect: "10s", header: "30s", first_token: "20s", idle: "30s" },
    limits: limits(),
    ...over,
  };
}

/**
 * A local server discovery found, as GET /api/providers lists it: keyless,
 * local, with the models it lists (for a stopped one, the last list seen).
 */
export function localProvider(
  name: string,
  local: Partial<ProviderLocal> = {},
  models: string[] = ["qwen2.5-coder:7b"],
  over: Partial<ProviderView> = {},
): ProviderView {
  const port = local.port ?? 11434;
  const baseURL = `http://127.0.0.1:${port}/v1`;
  return provider(name, {
    tier: "local",
    keyless: true,
    probe: false,
    base_url: baseURL,
    key: { set: false, masked: "", source: "keyless", env: [], file: "" },
    models: models.map((id) => ({ id, params_b: 7, context: 8192, max_output: 0 })),
    source: "discovered",
    local: { kind: "ollama", port, base_url: baseURL, status: "serving", found: `found on port ${port}`, owner: "", ...local },
    ...over,
  });
}

export function trace(id: string, over: Partial<Trace> = {}): Trace {
  return {
    id,
    start: "2025-03-01T12:00:00Z",
    endpoint: "chat/completions",
    model: "auto",
    chain: "auto",
    backend: "cerebras/qwen",
    stream: true,
    status: 200,
    class: "ok",
    latency_ns: 412_000_000,
    usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 },
    cost: 0,
    attempts: [{ backend: "cerebras/qwen", class: "ok", status: 200, latency_ns: 400_000_000 }],
    ...over,
  };
}

export function snapshot(over: Partial<Snapshot> = {}): Snapshot {
  return {
    version: "v0.4.0",
    endpoint: "http://127.0.0.1:7788/v1",
    seeded_from: "",
    paused: false,
    backends: [
      backend("groq/llama", { status: "cooling", reason: "HTTP 429", until: "2999-01-01T00:00:00Z" }),
      backend("cerebras/qwen"),
      backend("ollama/qwen-coder", { tier: "local", status: "open", state: "open" }),
    ],
    providers: [provider("groq"), provider("cerebras"), provider("ollama", { keyless: true, key: { set: false, masked: "", source: "keyless", env: [], file: "" } })],
    chains: [
      { name: "auto", backends: ["groq/llama", "cerebras/qwen", "ollama/qwen-coder"], strategy: "priority", gear: "auto", max_wait: "", generated: true, default: true, warning: "" },
      { name: "coding", backends: ["cerebras/qwen", "groq/llama", "ollama/qwen-coder"], strategy: "priority", gear: "auto", max_wait: "", generated: false, default: false, warning: "" },
    ],
    missing_keys: [],
    requests: [trace("r1")],
    events: [
      { time: "2025-03-01T12:00:00Z", kind: "cooldown", level: "warn", backend: "groq/llama", reason: "HTTP 429" },
      { time: "2025-03-01T12:00:01Z", kind: "restored", level: "info", backend: "cerebras/qwen" },
    ],
    totals: { requests_today: 1234, rps_1m: 4.5 },
    routing_paused: false,
    quotas: [
      quota("groq/llama", {
        limits: [
          limitUse("tpd", 312_400, 500_000, { resets_at: at(3 * HOUR + 12 * MIN) }),
          limitUse("rpm", 3, 30, { resets_at: at(40_000) }),
        ],
      }),
      quota("cerebras/qwen", {
        limits: [limitUse("rpd", 850, 1000, { resets_at: at(5 * HOUR), learned: true })],
        price: { input: 0.15, output: 0.6 },
      }),
    ],
    budgets: [budget("global", "day", { limit: 1, spent: 0.42, reserved: 0.01 }), budget("global", "month", { limit: 20, spent: 3.5 })],
    spend: { today: 0.42, month: 3.5 },
    notifications: [],
    team: noTeam(),
    ...over,
  };
}

/** The team view of a single machine. */
export function noTeam(): TeamView {
  return { enabled: false, instance: "", redis: { configured: false, status: "", pending: 0 }, postgres: { configured: false, status: "" }, instances: [] };
}

/** A team of two as office-1 sees it, both shared parts connected. */
export function team(over: Partial<TeamView> = {}): TeamView {
  return {
    enabled: true,
    instance: "office-1",
    redis: { configured: true, status: "connected", pending: 0 },
    postgres: { configured: true, status: "connected" },
    instances: [
      { name: "office-1", last_seen: at(0), self: true, version: "v0.4.0", started: at(-4 * HOUR), redis: "connected", postgres: "connected", pending: 0, served: 120 },
      { name: "office-2", last_seen: at(-2000), version: "v0.3.9", started: at(-3 * HOUR), redis: "connected", postgres: "connected", pending: 2, served: 45 },
    ],
    ...over,
  };
}

/** An update as the server sends it: no news, the snapshot's quotas, budgets and spend. */
export function update(over: Partial<UpdateMessage> = {}): UpdateMessage {
  const s = snapshot();
  return {
    type: "update",
    time: "2025-03-01T12:00:05Z",
    backends: [],
    requests: [],
    events: [],
    totals: { requests_today: 1, rps_1m: 1 },
    routing_paused: false,
    quotas: s.quotas,
    budgets: s.budgets,
    spend: s.spend,
    notifications: [],
    ...over,
  };
}

/** Limits as the server shows them: 0 for no limit, the default reset. */
export function limits(over: Partial<Limits> = {}): Limits {
  return { rpm: 0, rpd: 0, tpm: 0, tpd: 0, concurrency: 0, reset: "daily 00:00 UTC", ...over };
}

export function limitUse(kind: LimitUse["kind"], used: number, limit: number, over: Partial<LimitUse> = {}): LimitUse {
  return { kind, used, limit, fraction: limit > 0 ? used / limit : 0, resets_at: null, learned: false, ...over };
}

export function quota(backend: string, over: Partial<QuotaView> = {}): QuotaView {
  return { backend, limits: [], exhausted: false, reason: "", price: { input: 0, output: 0 }, credit_expires: null, ...over };
}

export function budget(scope: string, period: BudgetView["period"], over: Partial<BudgetView> = {}): BudgetView {
  const b: BudgetView = {
    id: `${scope}|${period}`,
    scope,
    period,
    limit: 1,
    action: "free-only",
    spent: 0,
    reserved: 0,
    fraction: 0,
    resets_at: period === "day" ? "2026-12-01T00:00:00Z" : "2027-01-01T00:00:00Z",
    exceeded: false,
    ...over,
  };
  if (over.fraction === undefined) b.fraction = (b.spent + b.reserved) / b.limit;
  return b;
}

export function usageRow(key: string, over: Partial<UsageRow> = {}): UsageRow {
  return { key, requests: 10, failures: 1, prompt_tokens: 1000, completion_tokens: 500, cost: 0.01, estimated_tokens: 0, ...over };
}

/** A fetch stand-in that records calls and answers from a handler. */
export function fakeFetch(handler: (method: string, url: string, body: unknown) => { status?: number; body?: unknown; headers?: Record<string, string> }) {
  const calls: { method: string; url: string; body: unknown }[] = [];
  const fn = async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input);
    const method = (init?.method ?? "GET").toUpperCase();
    const body = init?.body ? JSON.parse(String(init.body)) : undefined;
    calls.push({ method, url, body });
    const res = handler(method, url, body);
    const status = res.status ?? 200;
    const text = res.body === undefined ? "" : typeof res.body === "string" ? res.body : JSON.stringify(res.body);
    return new Response(status === 204 ? null : text, { status, headers: { "Content-Type": "application/json", ...res.headers } });
  };
  return { fn, calls };
}

export function catalogEntry(id: string, over: Partial<CatalogEntry> = {}): CatalogEntry {
  return {
    id,
    name: id[0].toUpperCase() + id.slice(1),
    tier: "free",
    dialect: "openai",
    base_url: `https://api.${id}.example/v1`,
    placeholders: [],
    key_env: [`${id.toUpperCase()}_API_KEY`],
    signup_url: `https://${id}.example/keys`,
    credit: "",
    shared_quota: "",
    key_terms: "",
    notes: [`${id} answers fast.`],
    limits: ["30 requests a minute", "14,400 requests a day"],
    models: [{ id: `${id}-llama-70b`, params_b: 70, context: 131072, max_output: 8192, capabilities: ["tools"], limits: [], price: null }],
    list_models: true,
    configured: [],
    env_found: "",
    ...over,
  };
}

/** A catalog with a free, a trial, a paid and a local entry, and Cloudflare's account placeholder. */
export function catalogView(over: Partial<CatalogView> = {}): CatalogView {
  return {
    date: "2026-11-20",
    source: "built in",
    changes: [],
    providers: [
      catalogEntry("groq"),
      catalogEntry("cloudflare", { name: "Cloudflare Workers AI", placeholders: ["CLOUDFLARE_ACCOUNT_ID"], models: [{ id: "@cf/meta/llama-3.1-8b", params_b: 8, context: 8192, max_output: 0, capabilities: [], limits: [], price: null }] }),
      catalogEntry("nebius", { name: "Nebius", tier: "trial", credit: "$1 of credit on sign-up" }),
      catalogEntry("openai", { name: "OpenAI", tier: "paid", models: [{ id: "gpt-4.1-mini", params_b: 0, context: 1047576, max_output: 32768, capabilities: [], limits: [], price: { input: 0.4, output: 1.6 } }] }),
      catalogEntry("ollama", { name: "Ollama", tier: "local", key_env: [], signup_url: "https://ollama.com" }),
    ],
    ...over,
  };
}

export function setupView(over: Partial<SetupView> = {}): SetupView {
  return {
    needed: true,
    serving: 0,
    env_keys: [],
    env_names: ["GROQ_API_KEY", "CEREBRAS_API_KEY"],
    local: [],
    discovery: { enabled: true, ports: [11434, 1234, 8080] },
    ...over,
  };
}
