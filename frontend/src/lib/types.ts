// The dashboard's names for the types of the admin API and websocket. The
// types themselves are generated from the Go side into wire.gen.ts (`make
// wiretypes`); this file only names them as the dashboard always has and
// derives the few shapes the dashboard sends or keeps differently. Never
// copy a field by hand here: change the Go type and regenerate.

import type * as wire from "./wire.gen";

export type {
  Alias,
  AliasView,
  Attempt,
  Candidate,
  ChainGear,
  ChainStrategy,
  Decision,
  BackendStatus,
  BackendView,
  BreakerState,
  BudgetAction,
  BudgetPeriod,
  BudgetView,
  BackendCaching,
  CacheOutcome,
  CachingView,
  CachingWarning,
  CatalogAdded,
  CatalogChange,
  CatalogEntry,
  CatalogInput,
  CatalogModel,
  CatalogPrice,
  CatalogView,
  ChainView,
  DiscoveryState,
  EnvKey,
  ConfigFile,
  Dialect,
  Endpoints,
  EnvVar,
  EventKind,
  EventLevel,
  FailureClass,
  KeyInfo,
  KeySource,
  LimitKind,
  LimitsEntry,
  LimitUse,
  ListedModel,
  LocalModel,
  LocalServer,
  LocalStatus,
  ModelList,
  ModelListInput,
  ModelSpec,
  Offer,
  Percentiles,
  Price,
  PriceJSON,
  ProbeView,
  ProviderKind,
  ProviderLocal,
  ProviderSource,
  PreviewInput,
  ProviderView,
  QuotaView,
  RouteTest,
  RouteTestInput,
  Score,
  Settings,
  SessionCaching,
  SetupView,
  SkipWord,
  SnapshotMessage,
  Spend,
  TestResult,
  Tier,
  Timeouts,
  ToolSetup,
  Totals,
  RequestDetail,
  Trace,
  UsageGrouping,
  UsageReport,
  UsageRow,
} from "./wire.gen";

/** Every tool's settings for pointing it at FreeLane (GET /api/connect). */
export type ConnectSetup = wire.Setup;
/** One rolling window of a backend's metrics. */
export type MetricWindow = wire.Window;
/** The windows the server keeps for every backend (metrics' 1m, 5m and 1h rings). */
export type WindowName = "1m" | "5m" | "1h";

export type FreeLaneEvent = wire.Event;
/** One notification (breaker, key, quota, budget, local server). */
export type Notice = wire.Notification;
export type NoticeKind = wire.NotificationKind;
/** Which kinds of notification are raised. */
export type NoticeSwitches = wire.Switches;
export type UpdateMessage = wire.Update;
export type LiveMessage = wire.WebSocketMessage;
/** The error body every /api endpoint answers with on 4xx/5xx. */
export type ApiErrorBody = wire.ErrorBody;

/** A provider's or a model's limits as the server shows them; 0 means no limit. */
export type Limits = wire.LimitsJSON;
/** Limits as the dashboard sends them: a kind left out is 0, no limit. */
export type LimitsInput = Partial<wire.LimitsJSON>;

/** What PUT /api/budgets takes, as a list that replaces all budgets. */
export type BudgetInput = wire.BudgetJSON;

/**
 * What POST and PUT /api/providers take: the provider without its key
 * info, plus an optional write-only key. Keys left out take the server's
 * defaults, as in the YAML file.
 */
export type ProviderInput = Pick<wire.ProviderInput, "name" | "kind" | "tier" | "base_url" | "models"> &
  Partial<Omit<wire.ProviderInput, "name" | "kind" | "tier" | "base_url" | "models">>;

/**
 * What PUT and PATCH /api/providers/{name} take: only the keys sent
 * change, and a model entry whose id the provider serves keeps what it
 * leaves out (its limits and price, say).
 */
export type ProviderEdit = Partial<Omit<wire.ProviderInput, "models">> & {
  models?: (Pick<wire.ModelSpec, "id"> & Partial<wire.ModelSpec>)[];
};

/**
 * What PUT /api/limits/{provider}/{model} takes. A key left out or null
 * keeps what the model has, so a price of 0 and 0 (not null) makes it free.
 */
export type ModelLimitsInput = { limits?: LimitsInput | null } & Partial<Omit<wire.ModelLimitsInput, "limits">>;

/** Makes the keys K of T present and non-null. */
type Filled<T, K extends keyof T> = Omit<T, K> & { [P in K]-?: NonNullable<T[P]> };

/**
 * The state as the live store keeps it: a snapshot from the websocket or
 * GET /api/state with the lists the server may send as null made empty.
 */
export type Snapshot = Filled<wire.Snapshot, "backends" | "chains" | "missing_keys" | "events" | "notifications">;
/** A snapshot as the server sends it. */
export type SnapshotBody = wire.Snapshot;
