import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../../src/errors/errors.js";
import { PostgresLeases } from "../../src/postgres/postgres-leases.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { StoreUnavailableError } from "../../src/state/store-unavailable-error.js";
import { createTestSchema, PG_URL, type TestSchema } from "../support/postgres.js";

let schema: TestSchema;
beforeAll(async () => {
  schema = await createTestSchema("lease");
});
afterAll(async () => {
  await schema.drop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Two holders (separate instances, as two processes would have), on one table. */
function holders(options: { nowA?: () => number } = {}): { a: PostgresLeases; b: PostgresLeases; table: string } {
  const table = schema.table("leases");
  const sequence = `${schema.name}.civitas_fence`;
  return {
    a: new PostgresLeases({ connectionString: PG_URL }, { table, fenceSequence: sequence, ...(options.nowA ? { now: options.nowA } : {}) }),
    b: new PostgresLeases({ connectionString: PG_URL }, { table, fenceSequence: sequence }),
    table,
  };
}

describe("PostgresLeases with two holders", () => {
  it("grants a group to one owner at a time; the other gets null until it is released", async () => {
    const { a, b } = holders();
    const fenceA = await a.acquire("payments", "A", 10_000);
    expect(typeof fenceA).toBe("number");
    expect(await b.acquire("payments", "B", 10_000)).toBeNull();
    expect(a.holds("A", "payments")).toBe(true);
    expect(b.holds("B", "payments")).toBe(false);
    // The holder acquiring again keeps its fence.
    expect(await a.acquire("payments", "A", 10_000)).toBe(fenceA);
    await a.release("A", ["payments"]);
    expect(a.holds("A", "payments")).toBe(false);
    const fenceB = await b.acquire("payments", "B", 10_000);
    expect(fenceB).toBeGreaterThan(fenceA as number);
    await Promise.all([a.close(), b.close()]);
  });

  it("expires by the database's clock: after the TTL without a renewal the other owner gets it with a newer fence, and the former owner's renewal comes back without it", async () => {
    const { a, b } = holders();
    const fenceA = await a.acquire("g", "A", 300);
    expect(await b.acquire("g", "B", 300)).toBeNull();
    await sleep(450);
    expect(a.holds("A", "g")).toBe(false);
    const fenceB = await b.acquire("g", "B", 10_000);
    expect(fenceB).toBeGreaterThan(fenceA as number);
    expect(await a.renew("A", ["g"])).toEqual([]);
    expect(a.holds("A", "g")).toBe(false);
    await Promise.all([a.close(), b.close()]);
  });

  it("renews several groups in one statement, each by its TTL, and reports only those still held", async () => {
    const { a, b } = holders();
    await a.acquire("g1", "A", 1500);
    await a.acquire("g2", "A", 1500);
    await b.acquire("g3", "B", 10_000);
    for (let i = 0; i < 4; i++) {
      await sleep(500);
      expect(await a.renew("A", ["g1", "g2", "g3"])).toEqual(["g1", "g2"]);
    }
    // 2000 ms after the first grant (past the 1500 ms TTL), renewed all along: still held, and not grantable to B.
    expect(a.holds("A", "g1")).toBe(true);
    expect(await b.acquire("g1", "B", 1000)).toBeNull();
    await Promise.all([a.close(), b.close()]);
  });

  it("counts a group lost locally ttlMs after the renewal was sent, while the database still refuses it to anyone else", async () => {
    let local = 0;
    const { a, b } = holders({ nowA: () => local });
    await a.acquire("g", "A", 5000);
    local += 1000;
    expect(await a.renew("A", ["g"])).toEqual(["g"]); // sent at local 1000: valid locally until 6000
    local = 5999;
    expect(a.holds("A", "g")).toBe(true);
    local = 6000;
    expect(a.holds("A", "g")).toBe(false);
    // The database renewed after receiving the request: its expiry is later than A's local deadline.
    expect(await b.acquire("g", "B", 5000)).toBeNull();
    await Promise.all([a.close(), b.close()]);
  });

  it("a failed renewal rejects with STORE_UNAVAILABLE and loses every group it named", async () => {
    const table = schema.table("leases");
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const a = new PostgresLeases({ pool }, { table, fenceSequence: `${schema.name}.civitas_fence` });
    await a.acquire("g", "A", 10_000);
    expect(a.holds("A", "g")).toBe(true);
    await pool.end();
    const err: unknown = await a.renew("A", ["g"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as StoreUnavailableError).code).toBe("STORE_UNAVAILABLE");
    expect(a.holds("A", "g")).toBe(false);
    await a.close();
  });

  it("draws fences from the state store's sequence, so a lease's fence claims state rows", async () => {
    const table = schema.table("leases");
    const sequence = `${schema.name}.civitas_fence`;
    const store = new PostgresStateStore({ pool: schema.pool }, { table: schema.table("state"), fenceSequence: sequence });
    const leases = new PostgresLeases({ pool: schema.pool }, { table, fenceSequence: sequence });
    const before = await store.nextFence();
    const fence = (await leases.acquire("g", "A", 10_000)) as number;
    expect(fence).toBeGreaterThan(before);
    await store.claim(["agent"], fence);
    await expect(store.fenced(before).set("agent", {})).rejects.toMatchObject({ code: "STATE_FENCED" });
    await store.fenced(fence).set("agent", { ok: true });
    await leases.close();
    await store.close();
  });

  it("refuses a foreign table shape and bad arguments", async () => {
    const table = schema.table("foreign");
    await schema.pool.query(`CREATE TABLE "${schema.name}"."${table.split(".")[1]}" (grp text PRIMARY KEY)`);
    const leases = new PostgresLeases({ pool: schema.pool }, { table });
    await expect(leases.acquire("g", "A", 1000)).rejects.toMatchObject({ code: "STORE_UNAVAILABLE" });
    await expect(leases.acquire("", "A", 1000)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(leases.acquire("g", "A", 0)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(leases.renew("A", "g" as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    await leases.close();
  });
});
