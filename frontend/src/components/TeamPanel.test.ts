import { cleanup, render, screen, within } from "@testing-library/svelte";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { live } from "../lib/live.svelte";
import { NOW, snapshot, team, update } from "../test/fixtures";
import TeamPanel, { DEGRADED_WORDS } from "./TeamPanel.svelte";

beforeEach(() => {
  live.snapshot = null;
  live.now = NOW;
});
afterEach(() => cleanup());

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("TeamPanel", () => {
  it("is not drawn on a single machine", () => {
    live.applySnapshot(snapshot());
    render(TeamPanel);
    expect(screen.queryByTestId("team-panel")).toBeNull();
  });

  it("lists every instance with its status as it sees the shared parts", () => {
    live.applySnapshot(snapshot({ team: team() }));
    render(TeamPanel);
    expect(screen.getByTestId("team-self").textContent).toBe("office-1");
    expect(screen.queryByTestId("team-degraded")).toBeNull();

    const self = screen.getByTestId("team-instance-office-1");
    expect(self.textContent).toContain("this one");
    expect(within(self).getByText("now")).toBeTruthy();
    expect(self.querySelector('[data-col="served"]')?.textContent).toBe("120");

    const other = screen.getByTestId("team-instance-office-2");
    expect(other.textContent).not.toContain("this one");
    expect(other.querySelector('[data-col="seen"]')?.textContent).toBe("2 s ago");
    expect(other.querySelector('[data-col="version"]')?.textContent).toBe("v0.3.9");
    expect(other.querySelector('[data-col="pending"]')?.textContent).toBe("2");
    const pg = other.querySelector<HTMLElement>('[data-col="postgres"]');
    expect(pg?.textContent).toBe("connected");
    expect(pg?.dataset.level).toBe("ok");
  });

  it("warns while Redis is unreachable and shows this instance alone", async () => {
    live.applySnapshot(snapshot({ team: team() }));
    render(TeamPanel);
    const t = team();
    // The view as the server sends it without Redis: this instance only.
    live.applyUpdate(
      update({
        team: {
          ...t,
          redis: { configured: true, status: "unreachable", since: new Date(NOW - 5000).toISOString(), pending: 4 },
          instances: [{ ...t.instances[0], redis: "unreachable", pending: 4 }],
        },
      }),
    );
    await tick();
    const banners = screen.getAllByTestId("team-degraded").map((b) => b.textContent);
    expect(banners).toEqual([DEGRADED_WORDS.redis]);
    expect(banners[0]).toBe("Redis unreachable: this instance serves on its share of each limit");
    expect(screen.queryByTestId("team-instance-office-2")).toBeNull();
    const redis = screen.getByTestId("team-instance-office-1").querySelector<HTMLElement>('[data-col="redis"]');
    expect(redis?.textContent).toBe("unreachable");
    expect(redis?.dataset.level).toBe("bad");
    expect(screen.getByTestId("team-alone")).toBeTruthy();
  });

  it("warns while PostgreSQL is unreachable, and an update without a team view keeps the last one", async () => {
    const t = team({ postgres: { configured: true, status: "unreachable" } });
    live.applySnapshot(snapshot({ team: t }));
    render(TeamPanel);
    expect(screen.getByTestId("team-degraded").textContent).toBe(
      "PostgreSQL unreachable: serving the last known configuration; changes are refused",
    );
    live.applyUpdate(update());
    await tick();
    expect(screen.getByTestId("team-degraded").textContent).toBe(DEGRADED_WORDS.postgres);
    expect(screen.getByTestId("team-instance-office-2")).toBeTruthy();
  });
});
