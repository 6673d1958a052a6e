/**
 * Several processes appending to one PostgresAuditSink table at once, each
 * through test/postgres/fixtures/postgres-audit-appender.ts.
 * @module
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { runTsChild } from "../../support/child-process.js";
import { KEY } from "../../support/audit-log.js";
import { PG_URL } from "../../support/postgres.js";

const APPENDER = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "postgres-audit-appender.ts");

/**
 * Runs one appender process per name in `writers`, all at once, each emitting
 * `perWriter` rows (signed with {@link KEY}) to `table`; checks that every one
 * ended with "done", and returns the seq each resolved emit got, by
 * `writer:n` (the row's signer and its `details.n`).
 */
export async function appendFromProcesses(table: string, writers: readonly string[], perWriter: number, timeoutMs: number): Promise<Map<string, number>> {
  const acked = new Map<string, number>();
  const runs = await Promise.all(
    writers.map((writer) =>
      runTsChild(APPENDER, [PG_URL, table, KEY, writer, String(perWriter)], {
        timeoutMs,
        onLine: (line) => {
          const [id, seq] = line.split(" ");
          if (id !== undefined && seq !== undefined) acked.set(id, Number(seq));
        },
      }),
    ),
  );
  for (const run of runs) expect(run.lines.at(-1), run.stderr).toBe("done");
  return acked;
}
