import { describe, expect, it } from "vitest";
import { isServing, statusDetail, statusInfo, statusWhen } from "./status";
import type { BackendStatus } from "./types";

describe("statusInfo", () => {
  it("maps every contract status to a label and tone", () => {
    const want: Record<BackendStatus, [string, string]> = {
      serving: ["Serving", "ok"],
      degraded: ["Degraded", "warn"],
      half_open: ["Half-open", "warn"],
      open: ["Open", "bad"],
      cooling: ["Cooling down", "warn"],
      retired: ["Retired", "off"],
      key_disabled: ["Key refused", "bad"],
      exhausted: ["Quota used up", "warn"],
      no_key: ["No key", "off"],
      disabled: ["Disabled", "off"],
    };
    for (const [status, [label, tone]] of Object.entries(want)) {
      expect(statusInfo(status), status).toMatchObject({ label, tone });
      expect(statusInfo(status).hint, status).not.toBe("");
    }
  });

  it("says when a status ends in words fitting the status", () => {
    const now = Date.parse("2026-12-03T10:00:00Z");
    const in2 = "2026-12-03T10:02:00Z";
    expect(statusWhen("key_disabled", in2, now)).toBe("Next check in 2 min.");
    expect(statusWhen("exhausted", in2, now)).toBe("Back in 2 min.");
    expect(statusWhen("open", in2, now)).toBe("Tried again in 2 min.");
    expect(statusWhen("cooling", in2, now)).toBe("Rate limited; back in 2 min.");
    expect(statusWhen("key_disabled", "2026-12-03T09:59:00Z", now)).toBe("");
    expect(statusWhen("serving", null, now)).toBe("");
  });

  it("puts the reason and when it ends in two sentences, never a bare \", in 57 min\"", () => {
    const now = Date.parse("2026-12-03T10:00:00Z");
    const in57 = new Date(now + 57 * 60_000).toISOString();
    expect(statusDetail("The provider refused the key: HTTP 401 (Unauthorized).", "key_disabled", in57, now)).toBe(
      "The provider refused the key: HTTP 401 (Unauthorized). Next check in 57 min.",
    );
    expect(statusDetail("2 failures in a row, last: connection refused", "open", in57, now)).toBe(
      "2 failures in a row, last: connection refused. Tried again in 57 min.",
    );
    expect(statusDetail("", "key_disabled", in57, now)).toBe("Next check in 57 min.");
    expect(statusDetail("waiting:", "half_open", null, now)).toBe("waiting.");
  });

  it("shows an unknown status as words rather than failing", () => {
    expect(statusInfo("new_state")).toMatchObject({ label: "new state", tone: "off" });
  });

  it("knows which statuses take requests", () => {
    expect(isServing("serving")).toBe(true);
    expect(isServing("half_open")).toBe(true);
    expect(isServing("open")).toBe(false);
    expect(isServing("no_key")).toBe(false);
  });
});
