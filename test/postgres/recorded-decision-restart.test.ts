import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PostgresAuditSink } from "../../src/postgres/postgres-audit-sink.js";
import { verifySuspension } from "../../src/audit/verify-suspension.js";
import { runTsChild } from "../support/child-process.js";
import { createTestSchema, PG_URL, type TestSchema } from "../support/postgres.js";

// Issue 21, item 4: a process SIGKILLed after a decision's receipt is committed and before the write
// clearing the pause's marker; the next process (a new fence, the same database) completes the
// decision on record during its start: it runs onResume/onDeny once, the pause leaves listSuspended in
// both scopes, and the chain holds one decision of it.

const here = path.dirname(fileURLToPath(import.meta.url));
const KEY = "restart-key-0123456789";
const fixture = path.join(here, "fixtures", "decide-then-die.ts");

let schema: TestSchema;
beforeEach(async () => {
  schema = await createTestSchema("rollfwd");
});
afterEach(async () => {
  await schema.drop();
});

describe.each([
  { decision: "resume", asked: "authorize alice approve", hook: "onResume alice", event: "agent.resume", verdict: "approved" },
  { decision: "deny", asked: "authorize dora deny", hook: "onDeny dora", event: "agent.deny", verdict: "denied" },
])("a $decision on record when its process was killed", ({ decision, asked, hook, event, verdict }) => {
  it("rolls forward at the next start: the hook once, out of listSuspended (local and cluster), one receipt", async () => {
    const first = await runTsChild(fixture, [PG_URL, schema.name, KEY, "first", decision], { timeoutMs: 60_000 });
    expect(first.signal, first.stderr).toBe("SIGKILL");
    const suspended = first.lines.find((line) => line.startsWith("suspended "))?.split(" ")[1];
    expect(suspended).toBeTypeOf("string");
    expect(first.lines.some((line) => line.startsWith("on"))).toBe(false);
    const [{ count }] = (await schema.pool.query<{ count: string }>(`SELECT count(*)::text AS count FROM "${schema.name}".state WHERE suspended IS NOT NULL`)).rows as [{ count: string }];
    expect(count).toBe("1"); // the marker is still stored: the kill came before its clearing write

    const restart = await runTsChild(fixture, [PG_URL, schema.name, KEY, "restart", decision], { timeoutMs: 60_000 });
    expect(restart.code, restart.stderr).toBe(0);
    // The new owner's authorizeResume is asked about the decision it carries out.
    expect(restart.lines).toEqual([asked, hook, "status RUNNING", "local 0", "cluster 0", "stopped"]);

    const sink = new PostgresAuditSink({ pool: schema.pool, key: KEY, table: `${schema.name}.audit` });
    const rows = await sink.rows();
    expect(rows.filter((row) => row.event === event)).toHaveLength(1);
    const verified = await verifySuspension(rows, "payer", { key: KEY });
    expect(verified).toMatchObject({ status: "verified", failures: [] });
    expect(verified.suspensions).toEqual([expect.objectContaining({ suspensionId: suspended, decision: verdict })]);
    await sink.close();
  }, 120_000);
});
