import { describe, expect, it } from "vitest";
import * as postgres from "civitas-ts/postgres";
import { CivitasError, StateFencedError } from "civitas-ts";

describe("civitas-ts/postgres entry", () => {
  it("exports exactly the public API", () => {
    expect(Object.keys(postgres).sort()).toEqual(["PostgresAuditSink", "PostgresLeases", "PostgresStateStore"]);
  });

  it("STATE_FENCED is a CivitasError with its class name, a stable code and the fences", () => {
    const error = new StateFencedError("payer", 3, 7);
    expect(error).toBeInstanceOf(CivitasError);
    expect(error.name).toBe("StateFencedError");
    expect(error.code).toBe("STATE_FENCED");
    expect(error.message).toContain("'payer'");
    expect(error.message).toContain("fence 3");
    expect(error.message).toContain("fence 7");
    expect([error.agent, error.fence, error.currentFence]).toEqual(["payer", 3, 7]);
  });
});
