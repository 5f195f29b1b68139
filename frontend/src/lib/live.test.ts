import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { backend, budget, limitUse, quota, snapshot, trace, update } from "../test/fixtures";
import { LiveStore, MAX_DELAY_MS, type SocketLike } from "./live.svelte";
import { saveSession } from "./session";

/** A fake WebSocket: the test opens, feeds and closes it by hand. */
class FakeSocket implements SocketLike {
  static all: FakeSocket[] = [];
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: unknown) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  closed = false;
  constructor(
    public url: string,
    public protocols?: string[],
  ) {
    FakeSocket.all.push(this);
  }
  send(msg: object) {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  close() {
    this.closed = true;
  }
  drop() {
    this.onerror?.({});
    this.onclose?.({});
  }
}


describe("LiveStore messages", () => {
  it("applies a snapshot, then merges updates", () => {
    const s = new LiveStore();
    s.applyUpdate(update()); // before any snapshot: nothing to merge into
    expect(s.snapshot).toBeNull();

    s.handleMessage(JSON.stringify({ type: "snapshot", data: snapshot() }));
    expect(s.snapshot?.backends.map((b) => b.name)).toEqual(["groq/llama", "cerebras/qwen", "ollama/qwen-coder"]);
    expect(s.online).toBe(true);

    const faster = backend("cerebras/qwen", { status: "degraded", health: 0.7 });
    s.handleMessage(
      JSON.stringify(
        update({
          backends: [faster],
          requests: [trace("r2", { start: "2025-03-01T12:00:02Z" }), trace("r3", { start: "2025-03-01T12:00:03Z" })],
          events: [{ time: "2025-03-01T12:00:04Z", kind: "state", level: "alert", backend: "ollama/qwen-coder", from: "closed", to: "open" }],
          totals: { requests_today: 1236, rps_1m: 5 },
        }),
      ),
    );
    const snap = s.snapshot!;
    // Backends merge by name and keep the snapshot's order.
    expect(snap.backends.map((b) => [b.name, b.status])).toEqual([
      ["groq/llama", "cooling"],
      ["cerebras/qwen", "degraded"],
      ["ollama/qwen-coder", "open"],
    ]);
    // Requests: newest first, updates list theirs oldest first.
    expect(snap.requests.map((r) => r.id)).toEqual(["r3", "r2", "r1"]);
    // Events: oldest first, appended.
    expect(snap.events.map((e) => e.kind)).toEqual(["cooldown", "restored", "state"]);
    expect(snap.totals.requests_today).toBe(1236);

    // A request seen twice is kept once.
    s.applyUpdate(update({ requests: [trace("r3")] }));
    expect(s.snapshot!.requests.map((r) => r.id)).toEqual(["r3", "r2", "r1"]);
  });

  it("keeps the lists an empty server sends as null as empty lists", () => {
    const s = new LiveStore();
    s.applySnapshot({ ...snapshot(), backends: null, chains: null, missing_keys: null, events: null, providers: [], requests: [] });
    expect(s.snapshot).toMatchObject({ backends: [], chains: [], missing_keys: [], events: [] });
    // An update with no backends changes none.
    s.applyUpdate(update({ backends: null }));
    expect(s.snapshot!.backends).toEqual([]);
  });

  it("replaces quotas, budgets, spend and the routing pause from snapshots and updates", () => {
    const s = new LiveStore();
    s.handleMessage(JSON.stringify({ type: "snapshot", data: snapshot() }));
    expect(s.snapshot!.quotas.map((q) => q.backend)).toEqual(["groq/llama", "cerebras/qwen"]);
    expect(s.snapshot!.spend).toEqual({ today: 0.42, month: 3.5 });

    // Updates carry full lists: they replace.
    const q = quota("groq/llama", { limits: [limitUse("rpd", 10, 10)], exhausted: true, reason: "groq: daily requests used" });
    const b = budget("global", "day", { spent: 1.02, exceeded: true });
    s.handleMessage(JSON.stringify(update({ quotas: [q], budgets: [b], spend: { today: 1.02, month: 4.1 }, routing_paused: true })));
    expect(s.snapshot!.quotas).toEqual([q]);
    expect(s.snapshot!.budgets).toEqual([b]);
    expect(s.snapshot!.spend).toEqual({ today: 1.02, month: 4.1 });
    expect(s.snapshot!.routing_paused).toBe(true);

    s.applyUpdate(update({ routing_paused: false, quotas: [] }));
    expect(s.snapshot!.routing_paused).toBe(false);
    expect(s.snapshot!.quotas).toEqual([]);
  });

  it("ignores frames it cannot read", () => {
    const s = new LiveStore();
    s.handleMessage("{not json");
    s.handleMessage(JSON.stringify({ type: "hello" }));
    expect(s.snapshot).toBeNull();
  });

  it("keeps one chart sample a second", () => {
    const s = new LiveStore();
    s.applySnapshot(snapshot());
    const before = s.history.length;
    s.applyUpdate(update({ time: "2030-01-01T00:00:00.000Z" }));
    s.applyUpdate(update({ time: "2030-01-01T00:00:00.250Z", backends: [backend("groq/llama", { windows: { ...backend("x").windows, "1m": { ...backend("x").windows["1m"], latency_ms: { p50: 1, p95: 2, p99: 3 } } } })] }));
    s.applyUpdate(update({ time: "2030-01-01T00:00:01.100Z" }));
    expect(s.history.length).toBe(before + 2);
    expect(s.history[before].b["groq/llama"]["1m"].slice(0, 3)).toEqual([1, 2, 3]);
  });
});

describe("LiveStore reconnects", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    FakeSocket.all = [];
  });
  afterEach(() => vi.useRealTimers());

  function newStore() {
    return new LiveStore({ url: () => "ws://test/api/ws", socket: FakeSocket });
  }

  it("backs off from 0.5 s doubling to 10 s, and resets after a snapshot", () => {
    const s = newStore();
    s.start();
    expect(FakeSocket.all).toHaveLength(1);
    expect(FakeSocket.all[0].url).toBe("ws://test/api/ws");
    expect(s.offline).toBe(false); // still connecting: no banner yet

    const waits = [500, 1000, 2000, 4000, 8000, 10_000, 10_000];
    for (const [i, wait] of waits.entries()) {
      FakeSocket.all[i].drop();
      expect(s.offline).toBe(true);
      vi.advanceTimersByTime(wait - 1);
      expect(FakeSocket.all, `attempt ${i + 2} came early`).toHaveLength(i + 1);
      vi.advanceTimersByTime(1);
      expect(FakeSocket.all, `attempt ${i + 2} after ${wait} ms`).toHaveLength(i + 2);
    }
    expect(s.nextDelay).toBe(MAX_DELAY_MS);

    // A snapshot makes the page live again and resets the backoff.
    const sock = FakeSocket.all.at(-1)!;
    sock.send({ type: "snapshot", data: snapshot() });
    expect(s.online).toBe(true);
    expect(s.offline).toBe(false);
    sock.drop();
    expect(s.online).toBe(false);
    expect(s.offline).toBe(true);
    const n = FakeSocket.all.length;
    vi.advanceTimersByTime(499);
    expect(FakeSocket.all).toHaveLength(n);
    vi.advanceTimersByTime(1);
    expect(FakeSocket.all).toHaveLength(n + 1);
    s.stop();
  });

  it("does not reset the backoff on an open socket that sends no snapshot", () => {
    const s = newStore();
    s.start();
    FakeSocket.all[0].drop();
    vi.advanceTimersByTime(500);
    FakeSocket.all[1].onopen?.({});
    FakeSocket.all[1].drop();
    vi.advanceTimersByTime(999);
    expect(FakeSocket.all).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(FakeSocket.all).toHaveLength(3);
    s.stop();
  });

  it("offers the stored session as a subprotocol, read afresh for every attempt, and never in the URL", () => {
    const later = new Date(Date.now() + 86_400_000).toISOString();
    saveSession("first.1.sig", later);
    const s = new LiveStore({ socket: FakeSocket });
    s.start();
    expect(FakeSocket.all[0].protocols).toEqual(["freelane", "freelane.session.first.1.sig"]);
    expect(FakeSocket.all[0].url).toBe(`ws://${location.host}/api/ws`);
    // Refused (the session ended); another tab signs in; the next attempt
    // offers the new session.
    saveSession("second.2.sig", later);
    FakeSocket.all[0].drop();
    vi.advanceTimersByTime(500);
    expect(FakeSocket.all[1].protocols).toEqual(["freelane", "freelane.session.second.2.sig"]);
    expect(FakeSocket.all.every((w) => !w.url.includes("sig"))).toBe(true);
    localStorage.clear();
    FakeSocket.all[1].drop();
    vi.advanceTimersByTime(1000);
    expect(FakeSocket.all[2].protocols).toEqual(["freelane"]);
    s.stop();
  });

  it("stops reconnecting when stopped", () => {
    const s = newStore();
    s.start();
    const first = FakeSocket.all[0];
    s.stop();
    expect(first.closed).toBe(true);
    first.drop();
    vi.advanceTimersByTime(60_000);
    expect(FakeSocket.all).toHaveLength(1);
  });
});
