import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { live } from "../lib/live.svelte";
import type { Notice } from "../lib/types";
import { fakeFetch, snapshot, update } from "../test/fixtures";
import Notifications, { SEEN_KEY } from "./Notifications.svelte";

function notice(id: number, over: Partial<Notice> = {}): Notice {
  return {
    id,
    time: new Date(Date.UTC(2026, 10, 30, 12, 0, id)).toISOString(),
    kind: "breaker",
    level: "warn",
    title: `Backend failing: groq/m${id}`,
    body: `groq/m${id} keeps failing, so FreeLane sends its requests to the next backend of the chain and tries it again in 30 s.`,
    subject: `groq/m${id}`,
    ...over,
  };
}

const switches = { breaker: true, key: true, quota: true, budget: true, local: true };

beforeEach(() => {
  localStorage.clear();
  live.applySnapshot(snapshot({ notifications: [notice(2), notice(1)] }));
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe("Notifications", () => {
  it("counts the unread, lists them newest first and marks them read when opened", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: switches })).fn);
    render(Notifications);
    const bell = screen.getByTestId("notify-bell");
    expect(screen.getByTestId("notify-count").textContent).toBe("2");
    expect(bell.getAttribute("aria-label")).toBe("Notifications, 2 unread");
    expect(screen.queryByTestId("notify-panel")).toBeNull();

    await fireEvent.click(bell);
    const items = screen.getAllByTestId("notification");
    expect(items.map((i) => i.querySelector(".title")?.textContent)).toEqual(["Backend failing: groq/m2", "Backend failing: groq/m1"]);
    expect(items[0].textContent).toContain("tries it again in 30 s");
    expect(screen.queryByTestId("notify-count")).toBeNull();
    expect(localStorage.getItem(SEEN_KEY)).toBe(notice(2).time);

    // One more arrives over the websocket while the list is closed.
    await fireEvent.click(bell);
    live.applyUpdate(update({ notifications: [notice(2), notice(3, { kind: "key", level: "alert", title: "API key refused: groq" })] }));
    await waitFor(() => expect(screen.getByTestId("notify-count").textContent).toBe("1"));
    expect(live.snapshot?.notifications.map((n) => n.id)).toEqual([3, 2, 1]);
  });

  it("switches a kind off through the API and says when that fails", async () => {
    const f = fakeFetch((method, _url, body) => {
      if (method === "PUT") {
        if ((body as Record<string, boolean>).quota === false) return { status: 500, body: { error: { message: "Could not store the setting; try again." } } };
        return { body: { ...switches, ...(body as object) } };
      }
      return { body: switches };
    });
    vi.stubGlobal("fetch", f.fn);
    render(Notifications);
    await fireEvent.click(screen.getByTestId("notify-bell"));
    const breaker = (await screen.findByTestId("notify-switch-breaker")) as HTMLInputElement;
    expect(breaker.checked).toBe(true);
    await fireEvent.click(breaker);
    await waitFor(() => expect(f.calls.some((c) => c.method === "PUT")).toBe(true));
    const put = f.calls.find((c) => c.method === "PUT");
    expect(put?.url).toBe("/api/notifications/settings");
    expect(put?.body).toEqual({ breaker: false });
    await waitFor(() => expect((screen.getByTestId("notify-switch-breaker") as HTMLInputElement).checked).toBe(false));

    await fireEvent.click(screen.getByTestId("notify-switch-quota"));
    expect((await screen.findByRole("alert")).textContent).toBe("Could not store the setting; try again.");
  });

  it("says what it will tell when there is nothing yet", async () => {
    vi.stubGlobal("fetch", fakeFetch(() => ({ body: switches })).fn);
    live.applySnapshot(snapshot());
    render(Notifications);
    expect(screen.getByTestId("notify-bell").getAttribute("aria-label")).toBe("Notifications");
    await fireEvent.click(screen.getByTestId("notify-bell"));
    expect(screen.getByTestId("notify-empty").textContent).toContain("refused key");
  });
});
