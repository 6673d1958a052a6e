import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus, SUSPENSION_KEY, type JsonObject } from "../../../src/index.js";
import { readMarker } from "../../../src/state/suspension-marker.js";
import { Pausable, RecordingStore, startedRig, teardown } from "./helpers.js";

afterEach(teardown);

const marker = (since: string, extra: JsonObject = {}): JsonObject => ({ reason: "r", since, approver: null, suspensionId: "s-1", ...extra });

/** Whether readMarker accepts `since` (it throws STATE_SCHEMA otherwise). */
function accepts(since: string): boolean {
  try {
    readMarker("a", { [SUSPENSION_KEY]: marker(since) });
    return true;
  } catch (error) {
    expect((error as { code?: string }).code).toBe("STATE_SCHEMA");
    return false;
  }
}

const pad = (n: number, width: number): string => String(n).padStart(width, "0");

describe("restoring a stored marker", () => {
  it("accepts exactly the `since` times Date.parse reads, also near the form the runtime writes", () => {
    // Times in the runtime's own form with every field drawn past its range, and arbitrary strings.
    const isoLike = fc
      .tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 19 }), fc.integer({ min: 0, max: 39 }), fc.integer({ min: 0, max: 29 }), fc.integer({ min: 0, max: 69 }), fc.integer({ min: 0, max: 69 }), fc.integer({ min: 0, max: 999 }))
      .map(([y, mo, d, h, mi, s, ms]) => `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}T${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}.${pad(ms, 3)}Z`);
    const mangled = fc.tuple(isoLike, fc.nat(23), fc.constantFrom("x", " ", "/", "9", "+", "Z", "")).map(([text, at, ch]) => text.slice(0, at) + ch + text.slice(at + 1));
    fc.assert(
      fc.property(fc.oneof(isoLike, mangled, fc.string()), (since) => {
        expect(accepts(since)).toBe(!Number.isNaN(Date.parse(since)));
      }),
      { numRuns: 3000 },
    );
    expect(accepts("2026-02-31T00:00:00.000Z")).toBe(!Number.isNaN(Date.parse("2026-02-31T00:00:00.000Z")));
    expect(accepts("2026-13-01T00:00:00.000Z")).toBe(false);
    expect(accepts("Thu, 03 Dec 2026 21:00:00 GMT")).toBe(true);
  });

  it("restored agents recording the same identity share one frozen identity", () => {
    const identity = { version: "1.0.0", capabilities: ["pay", "refund"] };
    const first = readMarker("a", { [SUSPENSION_KEY]: marker("2026-07-03T09:12:44.120Z", { identity }) });
    const second = readMarker("b", { [SUSPENSION_KEY]: marker("2026-07-03T09:12:44.120Z", { identity: { version: "1.0.0", capabilities: ["pay", "refund"] } }) });
    const other = readMarker("c", { [SUSPENSION_KEY]: marker("2026-07-03T09:12:44.120Z", { identity: { version: "1.0.0", capabilities: ["pay"] } }) });
    expect(second?.identity).toBe(first?.identity);
    expect(Object.isFrozen(first?.identity)).toBe(true);
    expect(Object.isFrozen(first?.identity?.capabilities)).toBe(true);
    expect(other?.identity).toEqual({ version: "1.0.0", capabilities: ["pay"] });
    expect(other?.identity).not.toBe(first?.identity);
    // The stored arrays were copied, not frozen in place.
    expect(Object.isFrozen(identity.capabilities)).toBe(false);
  });

  it("state shows the runtime's own marker after a restore: keys a hand edit added to the stored marker are dropped", async () => {
    const store = new RecordingStore();
    const stored = marker("2026-07-03T09:12:44.120Z", { identity: { version: null, capabilities: [], note: "hand edit" }, note: "hand edit" });
    await store.inner.set("a", { work: 1, [SUSPENSION_KEY]: stored });
    const agent = new Pausable("a");
    await startedRig([agent], { store });
    expect(agent.status).toBe(ProcessStatus.SUSPENDED);
    expect(agent.state[SUSPENSION_KEY]).toEqual({ reason: "r", since: "2026-07-03T09:12:44.120Z", approver: null, suspensionId: "s-1", identity: { version: null, capabilities: [] } });
  });

  it("state keeps the stored marker as read when it holds only the marker's fields", async () => {
    const store = new RecordingStore();
    const stored = marker("2026-07-03T09:12:44.120Z", { identity: { version: null, capabilities: [] }, expiresAt: "2999-01-01T00:00:00.000Z" });
    await store.inner.set("a", { work: 1, [SUSPENSION_KEY]: stored });
    const agent = new Pausable("a");
    await startedRig([agent], { store });
    expect(agent.status).toBe(ProcessStatus.SUSPENDED);
    expect(agent.state[SUSPENSION_KEY]).toEqual(stored);
    expect(agent.suspension).toEqual(stored);
  });
});
