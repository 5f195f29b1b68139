// Types of the admin API and websocket, copied from the dashboard contract
// (notes/dashboard-contract.md). Keep them in step with the Go side.

export type Tier = "own" | "free" | "local";
export type BackendStatus =
  | "serving"
  | "degraded"
  | "half_open"
  | "open"
  | "cooling"
  | "retired"
  | "key_disabled"
  | "no_key"
  | "disabled";

/** Milliseconds, 0 when there is no data. */
export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

export type WindowName = "1m" | "5m" | "1h";

/** One rolling window of a backend's metrics. */
export interface MetricWindow {
  requests: number;
  rps: number;
  success_rate: number;
  failures: number;
  failovers: number;
  latency_ms: Percentiles;
  ttft_ms: Percentiles;
}

export interface BackendView {
  name: string;
  provider: string;
  model: string;
  tier: Tier;
  status: BackendStatus;
  state: "closed" | "open" | "half_open";
  health: number;
  reason: string;
  until: string | null;
  windows: Record<WindowName, MetricWindow>;
  probe: { last: string | null; ok: boolean; message: string };
}

export interface KeyInfo {
  set: boolean;
  masked: string;
  source: "dashboard" | "config" | "env" | "none" | "keyless";
  env: string[];
}

export interface ModelSpec {
  id: string;
  params_b: number;
  context: number;
  max_output: number;
  /** Issue 6: per-model limits, price and credit expiry (absent on older servers). */
  limits?: Limits;
  price?: Price | null;
  credit_expires?: string | null;
}

export interface Timeouts {
  connect: string;
  header: string;
  first_token: string;
  idle: string;
}

export interface ProviderView {
  name: string;
  kind: "openai";
  tier: Tier;
  default: boolean;
  base_url: string;
  keyless: boolean;
  disabled: boolean;
  probe: boolean;
  /** Whether streamed requests ask the upstream for usage (stream_options); false for servers that reject it. */
  stream_usage: boolean;
  headers: Record<string, string>;
  key: KeyInfo;
  models: ModelSpec[];
  timeouts: Timeouts;
  /** Issue 6: the provider's own limits. */
  limits?: Limits;
}

/**
 * What POST /api/providers takes: the provider without its key info, plus an
 * optional write-only key. Fields left out take the server's defaults, as in
 * the YAML file.
 */
export interface ProviderInput {
  name: string;
  kind: "openai";
  tier: Tier;
  base_url: string;
  keyless?: boolean;
  disabled?: boolean;
  default?: boolean;
  probe?: boolean;
  stream_usage?: boolean;
  headers?: Record<string, string>;
  models: ModelSpec[];
  timeouts?: Partial<Timeouts>;
  api_key?: string;
}

export interface ChainView {
  name: string;
  backends: string[];
  strategy: "ordered";
  generated: boolean;
}

export interface Attempt {
  backend: string;
  class: string;
  status?: number;
  latency_ns: number;
  ttft_ns?: number;
  reason?: string;
  skipped?: boolean;
  /** Why a skipped backend was passed by, in one word, as the router decided it. */
  skip?: "open" | "half_open" | "cooling" | "key_disabled" | "retired" | "quota" | "too_long";
  /** When a skipped backend may serve again. */
  until?: string;
  /** True when a money budget kept the backend out. */
  budget?: boolean;
  prompt_tokens?: number;
  completion_tokens?: number;
  /** Money, in the user's currency. */
  cost?: number;
  /** True when the tokens were estimated, not reported by the upstream. */
  estimated?: boolean;
}

export interface Trace {
  id: string;
  start: string;
  endpoint: string;
  model: string;
  chain?: string;
  backend?: string;
  stream: boolean;
  status: number;
  class: string;
  error?: string;
  latency_ns: number;
  ttft_ns?: number;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  attempts: Attempt[];
  /** Sum of the attempts' costs (issue 6; absent on older servers). */
  cost?: number;
}

export interface FreeLaneEvent {
  time: string;
  kind: string;
  level: "info" | "warn" | "alert";
  backend?: string;
  provider?: string;
  from?: string;
  to?: string;
  reason?: string;
  until?: string;
}

export interface Settings {
  breaker: { failures: number; open: string; rate_limit_cooldown: string; health_threshold: number };
  probes: { interval: string; open_interval: string; daily: string; disabled: boolean };
  max_body_mb: number;
}

export interface Totals {
  requests_today: number;
  rps_1m: number;
}

export interface Snapshot {
  version: string;
  endpoint: string;
  seeded_from: string;
  /** Probes paused while the machine is offline. */
  paused: boolean;
  /** Routing paused by the user: /v1 answers 503 until resumed. */
  routing_paused: boolean;
  backends: BackendView[];
  providers: ProviderView[];
  chains: ChainView[];
  missing_keys: string[];
  requests: Trace[];
  events: FreeLaneEvent[];
  totals: Totals;
  quotas: QuotaView[];
  budgets: BudgetView[];
  spend: Spend;
}

export interface SnapshotMessage {
  type: "snapshot";
  data: Snapshot;
}

export interface UpdateMessage {
  type: "update";
  time: string;
  backends: BackendView[];
  requests: Trace[];
  events: FreeLaneEvent[];
  totals: Totals;
  /** Always full lists when present. */
  quotas?: QuotaView[];
  budgets?: BudgetView[];
  spend?: Spend;
  routing_paused?: boolean;
}

export type LiveMessage = SnapshotMessage | UpdateMessage;

export interface TestResult {
  ok: boolean;
  backend: string;
  latency_ms: number;
  answer: string;
  error: string;
}

/** The error body every /api endpoint answers with on 4xx/5xx. */
export interface ApiErrorBody {
  error: { message: string; type?: string; code?: string; param?: string | null };
}

// ---- Issue 6: quotas, usage ledger, budgets (notes/quota-contract.md) ----

export type LimitKind = "rpm" | "rpd" | "tpm" | "tpd" | "concurrency";

/** One limit of one backend and how much of it is used. */
export interface LimitUse {
  kind: LimitKind;
  used: number;
  limit: number;
  /** used/limit, 0..1 and beyond; clamp when drawing. */
  fraction: number;
  /** When the window resets; null for concurrency. */
  resets_at: string | null;
  /** True when used/resets_at were learned from upstream headers or a 429 body. */
  learned: boolean;
  /**
   * Requested from the backend (see "Frontend requests" in the contract):
   * whose limit this is, the provider's (shared by its models) or the
   * backend's own. A backend can list the same kind twice, once for each.
   */
  scope?: "provider" | "backend";
}

export interface QuotaView {
  backend: string;
  limits: LimitUse[];
  exhausted: boolean;
  reason: string;
  price: Price;
  credit_expires: string | null;
}

export type BudgetPeriod = "day" | "month";
export type BudgetAction = "free-only" | "block";

export interface BudgetView {
  /** `${scope}|${period}` */
  id: string;
  scope: string;
  period: BudgetPeriod;
  limit: number;
  action: BudgetAction;
  spent: number;
  reserved: number;
  fraction: number;
  resets_at: string;
  exceeded: boolean;
}

/** What PUT /api/budgets takes, as a list that replaces all budgets. */
export interface BudgetInput {
  scope: string;
  period: BudgetPeriod;
  limit: number;
  action: BudgetAction;
}

export interface Spend {
  today: number;
  month: number;
}

/** Money per million tokens. */
export interface Price {
  input: number;
  output: number;
}

/** Limits as configured; absent or 0 means no limit. */
export interface Limits {
  rpm?: number;
  rpd?: number;
  tpm?: number;
  tpd?: number;
  concurrency?: number;
  /** "daily HH:MM TZ", "rolling 24h", "weekly mon HH:MM TZ", "monthly D HH:MM TZ". */
  reset?: string;
}

/** One row of GET /api/limits: a provider (model "") or one of its models. */
export interface LimitsEntry {
  provider: string;
  model: string;
  limits: Limits;
  price: Price | null;
  credit_expires: string;
}

export interface UsageRow {
  /** A day "2026-11-30", a backend or a chain, depending on group_by. */
  key: string;
  /** Set with group_by=day,backend. */
  backend?: string;
  requests: number;
  failures: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  estimated_tokens: number;
}

export interface UsageReport {
  from: string;
  to: string;
  group_by: string;
  rows: UsageRow[];
}
