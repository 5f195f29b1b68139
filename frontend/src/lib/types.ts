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
  headers: Record<string, string>;
  key: KeyInfo;
  models: ModelSpec[];
  timeouts: Timeouts;
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
  paused: boolean;
  backends: BackendView[];
  providers: ProviderView[];
  chains: ChainView[];
  missing_keys: string[];
  requests: Trace[];
  events: FreeLaneEvent[];
  totals: Totals;
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
