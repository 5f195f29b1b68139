import { describe, expect, it } from "vitest";
import { isServing, statusInfo } from "./status";
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
      key_disabled: ["Key disabled", "bad"],
      no_key: ["No key", "off"],
      disabled: ["Disabled", "off"],
    };
    for (const [status, [label, tone]] of Object.entries(want)) {
      expect(statusInfo(status), status).toMatchObject({ label, tone });
      expect(statusInfo(status).hint, status).not.toBe("");
    }
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
