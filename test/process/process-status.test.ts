import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isLegalTransition, LEGAL_TRANSITIONS, ProcessStatus, CivitasError } from "../../src/index.js";

const ALL = Object.values(ProcessStatus);

describe("ProcessStatus", () => {
  it("is a string enum whose values equal the names", () => {
    for (const [key, value] of Object.entries(ProcessStatus)) expect(value).toBe(key);
    expect(ALL).toEqual(["INITIALIZING", "RUNNING", "SUSPENDED", "STOPPING", "STOPPED", "CRASHED"]);
  });

  it("allows exactly SPEC's table plus the start-failure and restart edges", () => {
    const legal = ALL.flatMap((from) => LEGAL_TRANSITIONS[from].map((to) => `${from}->${to}`)).sort();
    expect(legal).toEqual(
      [
        "INITIALIZING->RUNNING",
        "INITIALIZING->SUSPENDED",
        "INITIALIZING->CRASHED",
        "RUNNING->SUSPENDED",
        "SUSPENDED->RUNNING",
        "RUNNING->STOPPING",
        "SUSPENDED->STOPPING",
        "STOPPING->STOPPED",
        "RUNNING->CRASHED",
        "STOPPED->INITIALIZING",
        "CRASHED->INITIALIZING",
      ].sort(),
    );
  });

  it("isLegalTransition agrees with the table for every pair", () => {
    fc.assert(
      fc.property(fc.constantFrom(...ALL), fc.constantFrom(...ALL), (from, to) => {
        expect(isLegalTransition(from, to)).toBe(LEGAL_TRANSITIONS[from].includes(to));
      }),
    );
  });

  it("never allows a status to transition to itself or out of STOPPING except to STOPPED", () => {
    for (const s of ALL) expect(isLegalTransition(s, s)).toBe(false);
    expect(ALL.filter((to) => isLegalTransition(ProcessStatus.STOPPING, to))).toEqual([ProcessStatus.STOPPED]);
  });
});

describe("the exported transition table", () => {
  it("cannot be changed at run time: SPEC 4 says any other transition must be impossible", () => {
    const running = LEGAL_TRANSITIONS[ProcessStatus.RUNNING] as ProcessStatus[];
    try {
      running.push(ProcessStatus.INITIALIZING); // a JavaScript caller, or a cast, is enough
    } catch {
      // a frozen table refuses it: what we want
    }
    const allowed = isLegalTransition(ProcessStatus.RUNNING, ProcessStatus.INITIALIZING);
    // undo, so a failure here does not leak into other tests
    const i = running.indexOf(ProcessStatus.INITIALIZING);
    if (i >= 0 && !Object.isFrozen(running)) running.splice(i, 1);
    expect(allowed).toBe(false);
  });

  it("isLegalTransition with a value that is not a ProcessStatus answers false (or throws a CivitasError), not a TypeError", () => {
    let result: unknown;
    try {
      result = isLegalTransition("PAUSED" as ProcessStatus, ProcessStatus.RUNNING);
    } catch (error) {
      result = error instanceof CivitasError ? false : error;
    }
    expect(result).toBe(false);
  });
});
