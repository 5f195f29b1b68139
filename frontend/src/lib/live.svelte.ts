// The live state of FreeLane, fed by the /api/ws websocket.
//
// The server first sends a full snapshot, then coalesced updates (at most
// four a second), and a fresh snapshot after any configuration change. This
// store applies them, keeps a short history of every backend's numbers for
// the charts, and reconnects with exponential backoff when the socket closes:
// 0.5 s, doubling up to 10 s, back to 0.5 s once a snapshot arrives. The
// socket offers the session as a subprotocol (see lib/session.ts).

import { api } from "./api";
import { socketProtocols } from "./session";
import type { BackendView, LiveMessage, Snapshot, SnapshotBody, Trace, UpdateMessage, WindowName } from "./types";

export const MIN_DELAY_MS = 500;
export const MAX_DELAY_MS = 10_000;
/** Requests kept for the live tail (the snapshot brings up to 100). */
export const MAX_REQUESTS = 500;
/** Events kept, as many as the snapshot brings. */
export const MAX_EVENTS = 200;
/** Notifications kept, as many as the server keeps. */
export const MAX_NOTIFICATIONS = 50;
/** Chart samples kept: one a second, so half an hour. */
export const MAX_SAMPLES = 1800;

export const WINDOWS: WindowName[] = ["1m", "5m", "1h"];

/** One backend's numbers in one window: p50, p95, p99 (ms), requests/s, success rate. */
export type SampleValues = [number, number, number, number, number];

/** The numbers of every backend at one moment, for the charts. */
export interface Sample {
  /** Unix time in seconds. */
  t: number;
  b: Record<string, Record<WindowName, SampleValues>>;
}

/** The part of the browser's WebSocket this store uses, so tests can fake it. */
export interface SocketLike {
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: unknown) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  close(): void;
}

/** A WebSocket constructor: the browser's, or a test's fake. */
export type SocketConstructor = new (url: string, protocols?: string[]) => SocketLike;

export interface LiveOptions {
  /** The websocket URL; by default ws(s)://<this host>/api/ws. */
  url?: () => string;
  /**
   * The subprotocols to offer; by default the feed's and the session's
   * (lib/session.ts): a browser cannot set headers on a websocket, and a
   * URL is no place for a credential.
   */
  protocols?: () => string[];
  /** The WebSocket constructor; by default the browser's. */
  socket?: SocketConstructor;
}

function defaultURL(): string {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  return `${scheme}://${location.host}/api/ws`;
}

function sampleOf(t: number, backends: BackendView[]): Sample {
  const b: Sample["b"] = {};
  for (const be of backends) {
    const per = {} as Record<WindowName, SampleValues>;
    for (const w of WINDOWS) {
      const m = be.windows?.[w];
      per[w] = m
        ? [m.latency_ms.p50, m.latency_ms.p95, m.latency_ms.p99, m.rps, m.success_rate]
        : [0, 0, 0, 0, 1];
    }
    b[be.name] = per;
  }
  return { t, b };
}

export class LiveStore {
  /** The latest full state, or null before the first snapshot. */
  snapshot = $state.raw<Snapshot | null>(null);
  /** True while the socket is open and has delivered a snapshot. */
  online = $state(false);
  /** Connections that closed (or failed) since the last snapshot. */
  failures = $state(0);
  /** The clock for countdowns, ticking once a second while started. */
  now = $state(Date.now());
  /** Bumped whenever a chart sample is added, so charts know to redraw. */
  historyVersion = $state(0);
  /** Chart samples, oldest first; not reactive itself (see historyVersion). */
  history: Sample[] = [];

  #opts: LiveOptions;
  #ws: SocketLike | null = null;
  #delay = MIN_DELAY_MS;
  #retry: ReturnType<typeof setTimeout> | null = null;
  #tick: ReturnType<typeof setInterval> | null = null;
  #started = false;

  constructor(opts: LiveOptions = {}) {
    this.#opts = opts;
  }

  /** True when the page should say it is offline and reconnecting. */
  get offline(): boolean {
    return !this.online && this.failures > 0;
  }

  /** The wait before the next reconnect attempt. */
  get nextDelay(): number {
    return this.#delay;
  }

  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#connect();
    this.#tick = setInterval(() => (this.now = Date.now()), 1000);
  }

  stop(): void {
    this.#started = false;
    if (this.#retry) clearTimeout(this.#retry);
    if (this.#tick) clearInterval(this.#tick);
    this.#retry = this.#tick = null;
    const ws = this.#ws;
    this.#ws = null;
    ws?.close();
    this.online = false;
  }

  #connect(): void {
    this.#retry = null;
    if (!this.#started) return;
    const Socket = this.#opts.socket ?? (globalThis.WebSocket as unknown as SocketConstructor);
    let ws: SocketLike;
    try {
      // The session is read afresh for every attempt: another tab may have
      // signed in since the last one was refused.
      ws = new Socket((this.#opts.url ?? defaultURL)(), (this.#opts.protocols ?? socketProtocols)());
    } catch {
      this.#closed();
      return;
    }
    this.#ws = ws;
    ws.onmessage = (ev) => {
      if (this.#ws === ws) this.handleMessage(ev.data);
    };
    ws.onclose = () => {
      if (this.#ws !== ws) return;
      this.#ws = null;
      this.#closed();
    };
    // An error is always followed by a close, which does the work.
    ws.onerror = () => {};
  }

  #closed(): void {
    this.online = false;
    this.failures++;
    if (!this.#started) return;
    const wait = this.#delay;
    this.#delay = Math.min(this.#delay * 2, MAX_DELAY_MS);
    this.#retry = setTimeout(() => this.#connect(), wait);
  }

  /** Applies one text frame from the socket; malformed frames are ignored. */
  handleMessage(raw: unknown): void {
    let msg: LiveMessage;
    try {
      msg = JSON.parse(String(raw)) as LiveMessage;
    } catch {
      return;
    }
    if (msg?.type === "snapshot" && msg.data) {
      this.applySnapshot(msg.data);
      this.online = true;
      this.failures = 0;
      this.#delay = MIN_DELAY_MS;
    } else if (msg?.type === "update") {
      this.applyUpdate(msg);
    }
  }

  /**
   * Replaces the whole state, as a snapshot frame or GET /api/state does.
   * The server sends null for the lists it has nothing in (no backends
   * configured, no events yet); the store keeps them as empty lists.
   */
  applySnapshot(s: SnapshotBody): void {
    const snap: Snapshot = {
      ...s,
      backends: s.backends ?? [],
      chains: s.chains ?? [],
      missing_keys: s.missing_keys ?? [],
      events: s.events ?? [],
      notifications: s.notifications ?? [],
    };
    this.snapshot = snap;
    this.#sample(Date.now() / 1000, snap.backends);
  }

  /** Merges an update into the current snapshot; ignored before the first one. */
  applyUpdate(u: UpdateMessage): void {
    const cur = this.snapshot;
    if (!cur) return;
    let backends = cur.backends;
    if (u.backends?.length) {
      // Merge by name, so an update carrying only the backends that changed
      // works as well as one carrying all of them.
      const fresh = new Map(u.backends.map((b) => [b.name, b]));
      backends = cur.backends.map((b) => fresh.get(b.name) ?? b);
      const known = new Set(cur.backends.map((b) => b.name));
      for (const b of u.backends) if (!known.has(b.name)) backends.push(b);
    }
    let requests = cur.requests;
    if (u.requests?.length) {
      // Updates list requests oldest first; the snapshot keeps newest first.
      const seen = new Set(cur.requests.map((r) => r.id));
      const added: Trace[] = [];
      for (let i = u.requests.length - 1; i >= 0; i--) {
        const r = u.requests[i];
        if (!seen.has(r.id)) added.push(r);
      }
      requests = added.concat(cur.requests).slice(0, MAX_REQUESTS);
    }
    const events = u.events?.length ? cur.events.concat(u.events).slice(-MAX_EVENTS) : cur.events;
    let notifications = cur.notifications;
    if (u.notifications?.length) {
      // Updates list them oldest first and may repeat what the snapshot
      // brought; the store keeps them newest first.
      const seen = new Set(cur.notifications.map((n) => n.id));
      const added = u.notifications.filter((n) => !seen.has(n.id)).reverse();
      notifications = added.concat(cur.notifications).slice(0, MAX_NOTIFICATIONS);
    }
    this.snapshot = {
      ...cur,
      backends,
      requests,
      events,
      notifications,
      totals: u.totals,
      // Quotas, budgets and spend come as full lists in every update (they
      // are small), so they replace what was there.
      quotas: u.quotas,
      budgets: u.budgets,
      spend: u.spend,
      routing_paused: u.routing_paused,
      // The team view comes only when it changed.
      team: u.team ?? cur.team,
    };
    const t = Date.parse(u.time);
    this.#sample(Number.isNaN(t) ? Date.now() / 1000 : t / 1000, backends);
  }

  #sample(t: number, backends: BackendView[]): void {
    const s = sampleOf(t, backends);
    const last = this.history[this.history.length - 1];
    // Updates come up to four times a second; one point a second is plenty
    // for the charts, so a newer sample within the same second replaces it.
    if (last && t - last.t < 1 && t >= last.t) this.history[this.history.length - 1] = { ...s, t: last.t };
    else this.history.push(s);
    if (this.history.length > MAX_SAMPLES) this.history.splice(0, this.history.length - MAX_SAMPLES);
    this.historyVersion++;
  }

  /**
   * Fetches the state over REST after a change made from the page, so the
   * page shows the change even before the websocket's new snapshot arrives.
   */
  async refresh(): Promise<void> {
    try {
      this.applySnapshot(await api.state());
    } catch {
      // The websocket's snapshot will bring the change anyway.
    }
  }
}

/** The page's one live store; main.ts starts it. */
export const live = new LiveStore();
