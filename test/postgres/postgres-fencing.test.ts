import path from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StateFencedError } from "../../src/errors/errors.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { runTsChild } from "../support/child-process.js";
import { PG_URL, testSchemaPerFile } from "../support/postgres.js";
import { blobFor } from "../support/crash-blob.js";

const here = path.dirname(fileURLToPath(import.meta.url));

const schema = testSchemaPerFile("fence");
let base: PostgresStateStore;
beforeAll(() => {
  base = new PostgresStateStore({ pool: schema.pool }, { table: `${schema.name}.records`, fenceSequence: `${schema.name}.fences` });
});
afterAll(() => base.close());

async function fencedError(promise: Promise<unknown>): Promise<StateFencedError> {
  const err: unknown = await promise.then(
    () => {
      throw new Error("expected STATE_FENCED, but the call resolved");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StateFencedError);
  expect((err as StateFencedError).code).toBe("STATE_FENCED");
  expect((err as StateFencedError).name).toBe("StateFencedError");
  return err as StateFencedError;
}

describe("PostgresStateStore fencing", () => {
  it("draws increasing fences from one sequence, shared by every store on it", async () => {
    const other = new PostgresStateStore({ pool: schema.pool }, { table: `${schema.name}.others`, fenceSequence: `${schema.name}.fences` });
    const a = await base.nextFence();
    const b = await other.nextFence();
    const c = await base.nextFence();
    expect(b).toBeGreaterThan(a);
    expect(c).toBeGreaterThan(b);
    await other.close();
  });

  it("a set with an older fence than the row's changes nothing and rejects with STATE_FENCED", async () => {
    const old = base.fenced(await base.nextFence());
    await old.claim(["payer"], old.fence);
    await old.set("payer", { owner: "old" });
    const fresh = base.fenced(await base.nextFence());
    await fresh.claim(["payer"], fresh.fence);
    const err = await fencedError(old.set("payer", { owner: "old again" }));
    expect(err.agent).toBe("payer");
    expect(err.fence).toBe(old.fence);
    expect(err.currentFence).toBe(fresh.fence);
    expect(await base.get("payer")).toEqual({ owner: "old" });
    await fencedError(old.delete("payer"));
    await fencedError(base.set("payer", { owner: "unfenced" }));
    expect(await base.get("payer")).toEqual({ owner: "old" });
    await fresh.set("payer", { owner: "fresh" });
    expect(await base.get("payer")).toEqual({ owner: "fresh" });
  });

  it("a claim of a name without state keeps a former owner from creating it, and the name stays unlisted", async () => {
    const old = base.fenced(await base.nextFence());
    const fresh = base.fenced(await base.nextFence());
    await fresh.claim(["newcomer"], fresh.fence);
    expect(await base.get("newcomer")).toBeUndefined();
    expect(await base.list()).not.toContain("newcomer");
    await fencedError(old.set("newcomer", { owner: "old" }));
    expect(await base.get("newcomer")).toBeUndefined();
  });

  it("a fenced delete leaves the fence behind: a former owner cannot write the name back", async () => {
    const old = base.fenced(await base.nextFence());
    const fresh = base.fenced(await base.nextFence());
    await fresh.set("gone", { n: 1 });
    await fresh.delete("gone");
    expect(await base.get("gone")).toBeUndefined();
    expect(await base.list()).not.toContain("gone");
    await fencedError(old.set("gone", { n: 2 }));
  });

  it("a claim with an older fence than a row's rejects with STATE_FENCED and leaves that row's fence", async () => {
    const old = await base.nextFence();
    const fresh = await base.nextFence();
    await base.claim(["x1"], fresh);
    const err = await fencedError(base.claim(["x1", "x2"], old));
    expect(err.agent).toBe("x1");
    await base.fenced(fresh).set("x1", { ok: true });
  });

  it("two writers with interleaved claims: the row always holds the newest fence's last write, no stale write lands (property)", async () => {
    type Step = { kind: "claim"; who: 0 | 1 } | { kind: "write"; who: 0 | 1 };
    const step = fc.oneof(
      fc.record({ kind: fc.constant("claim" as const), who: fc.constantFrom(0 as const, 1 as const) }),
      fc.record({ kind: fc.constant("write" as const), who: fc.constantFrom(0 as const, 1 as const) }),
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps: Step[]) => {
        const name = `race-${++run}`;
        const writers: (PostgresStateStore | undefined)[] = [undefined, undefined];
        let newest = -1; // which writer made the newest claim
        let expected: unknown;
        let written = 0;
        for (const s of steps) {
          if (s.kind === "claim") {
            const fence = await base.nextFence();
            await base.claim([name], fence);
            writers[s.who] = base.fenced(fence);
            newest = s.who;
          } else {
            const view = writers[s.who];
            const value = { who: s.who, n: ++written };
            if (view === undefined) continue;
            if (s.who === newest) {
              await view.set(name, value);
              expected = value;
            } else {
              await fencedError(view.set(name, value));
            }
          }
          expect(await base.get(name)).toEqual(expected);
        }
      }),
      { numRuns: 40 },
    );
  });

  it("concurrent claims and writes of two writers: every write that began after a newer claim completed is refused (property)", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom<"claimA" | "claimB" | "writeA" | "writeB">("claimA", "claimB", "writeA", "writeB"), { minLength: 2, maxLength: 10 }), async (ops) => {
        const name = `conc-${++run}`;
        const views: Record<"A" | "B", PostgresStateStore | undefined> = { A: undefined, B: undefined };
        const claimsDone: number[] = []; // fences of completed claims
        const landed: { fence: number; n: number }[] = [];
        let n = 0;
        await Promise.all(
          ops.map(async (op, i) => {
            await new Promise((r) => setTimeout(r, i % 3));
            const who = op.endsWith("A") ? "A" : "B";
            if (op.startsWith("claim")) {
              const fence = await base.nextFence();
              views[who] = base.fenced(fence);
              await base.claim([name], fence).catch((e: unknown) => {
                if (!(e instanceof StateFencedError)) throw e;
              });
              claimsDone.push(fence);
              return;
            }
            const view = views[who];
            if (view === undefined) return;
            const newerDone = claimsDone.some((f) => f > view.fence);
            const value = { fence: view.fence, n: ++n };
            const ok = await view.set(name, value).then(
              () => true,
              (e: unknown) => {
                if (!(e instanceof StateFencedError)) throw e;
                return false;
              },
            );
            if (newerDone) expect(ok).toBe(false); // a stale write never lands
            if (ok) landed.push(value);
          }),
        );
        const row = (await base.get(name)) as { fence: number; n: number } | undefined;
        if (row === undefined) {
          expect(landed).toEqual([]);
          return;
        }
        expect(landed).toContainEqual(row);
        // The row holds a write of the newest fence that wrote, never one older than a landed write's fence.
        expect(row.fence).toBe(Math.max(...landed.map((l) => l.fence)));
      }),
      { numRuns: 30 },
    );
  });
});

describe("PostgresStateStore fencing under SIGKILL", () => {
  it("after a kill the row is the last printed commit or the one after it, and the killed writer's fence is still refused once claimed", async () => {
    const table = `${schema.name}.crash`;
    const store = new PostgresStateStore({ pool: schema.pool }, { table, fenceSequence: `${schema.name}.fences` });
    for (const killAfter of [1, 25, 120]) {
      const fence = await store.nextFence();
      await store.claim(["counter"], fence);
      let last: number | undefined;
      const run = await runTsChild(path.join(here, "fixtures", "postgres-crash-writer.ts"), [PG_URL, table, String(fence)], {
        timeoutMs: 20_000,
        onLine: (line, kill) => {
          if (line === "start") return;
          last = Number(line);
          if (last >= killAfter) kill();
        },
      });
      expect(run.signal, run.stderr).toBe("SIGKILL");
      // A takeover: a newer fence claims the row. The killed writer's last statement may still commit on the
      // server until the claim holds the row, so the row is read after the claim, and never changes after it.
      const next = await store.nextFence();
      await store.claim(["counter"], next);
      const row = (await store.get("counter")) as { n: number; blob: string; fence: number };
      expect([last, (last ?? 0) + 1]).toContain(row.n);
      expect(row.blob === blobFor(row.n)).toBe(true);
      expect(row.fence).toBe(fence);
      // The killed writer's fence is refused, in this process and in a new one.
      await fencedError(store.fenced(fence).set("counter", { n: -1 }));
      const again = await runTsChild(path.join(here, "fixtures", "postgres-crash-writer.ts"), [PG_URL, table, String(fence)], { timeoutMs: 20_000 });
      expect(again.lines).toEqual(["start", "fenced STATE_FENCED"]);
      expect(await store.get("counter")).toEqual(row);
    }
    await store.close();
  }, 90_000);
});
