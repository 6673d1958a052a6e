import fs from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/audit/audit-event.js";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { keyResolver, verifyAuditLog, walkAuditLog } from "../../src/audit/verify-audit-log.js";
import { verifySuspension, type SuspensionStatus } from "../../src/audit/verify-suspension.js";
import { event, KEY, resume, sampleEvents, suspend, tempDir, writeLog } from "../support/audit-log.js";

const AGENTS = ["payer", "auditor", "mailer"] as const;

describe("audit log properties", () => {
  let dir: string;
  let cleanup: () => void;
  let counter = 0;

  beforeAll(() => {
    ({ dir, cleanup } = tempDir());
  });
  afterAll(() => cleanup());

  it("random interleavings of suspend/resume across agents, emitted concurrently, always verify and match the model", async () => {
    const op = fc.record({ agent: fc.constantFrom(...AGENTS), kind: fc.constantFrom("toggle", "noise") });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 6 }), async (batches) => {
        const file = path.join(dir, `prop-${counter++}.jsonl`);
        const sink = new JsonlAuditSink(file, { key: KEY });
        const live = new Map<string, string>();
        // An agent with no row at all is "not-found"; one with rows but no open pause is "verified".
        const expected = new Map<string, { ids: string[]; status: SuspensionStatus | "not-found" }>(AGENTS.map((a) => [a, { ids: [], status: "not-found" }]));
        for (const batch of batches) {
          const events: AuditEvent[] = [];
          for (const { agent, kind } of batch) {
            const model = expected.get(agent);
            if (model === undefined) throw new Error("unreachable");
            if (kind === "noise") {
              events.push(event("agent.checkpoint", agent, { n: events.length }));
              if (model.status === "not-found") model.status = "verified";
            } else if (live.has(agent)) {
              events.push(resume(agent, live.get(agent) ?? ""));
              live.delete(agent);
              model.status = "verified";
            } else {
              const id = `${agent}-${model.ids.length}`;
              model.ids.push(id);
              live.set(agent, id);
              model.status = "pending";
              events.push(suspend(agent, id));
            }
          }
          // Several agents' events written at once: the sink must serialize them.
          await Promise.all(events.map((e) => sink.emit(e)));
        }
        await sink.close();
        const total = batches.reduce((n, b) => n + b.length, 0);
        expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: total, tornTail: false });
        for (const agent of AGENTS) {
          const model = expected.get(agent);
          const result = await verifySuspension(file, agent, { key: KEY });
          expect(result.failures).toEqual([]);
          expect(result.status).toBe(model?.status);
          expect(result.suspensions.map((s) => s.suspensionId)).toEqual(model?.ids);
        }
      }),
      { numRuns: 40 },
    );
  });

  describe("single-byte mutations", () => {
    let file: string;
    let pristine: Buffer;
    let mutated: string;
    const keyFor = keyResolver("memory", { key: KEY });

    beforeAll(async () => {
      file = path.join(dir, "pristine.jsonl");
      mutated = path.join(dir, "mutated.jsonl");
      await writeLog(file, [...sampleEvents(), event("note", "x", { text: "ünïcødé \"quoted\" \\ back", n: -1.5e-7, list: [1, [2, {}]] })]);
      pristine = fs.readFileSync(file);
    });

    /**
     * Any change of one byte to another value is detected: `ok` becomes false.
     * That includes the final newline: a complete row followed by a stray byte
     * is not a torn row (a torn row never has bytes after its closing brace),
     * so it is reported as `garbage-tail`, not ignored.
     */
    async function detected(position: number, value: number): Promise<boolean> {
      const bytes = Buffer.from(pristine);
      bytes[position] = value;
      fs.writeFileSync(mutated, bytes);
      const result = await verifyAuditLog(mutated, { key: KEY });
      expect(walkAuditLog(bytes, keyFor).brokenAt !== undefined).toBe(!result.ok);
      return !result.ok;
    }

    /** The same check in memory (what verifyAuditLog does after reading the file), for the exhaustive sweeps. */
    function detectedInMemory(position: number, value: number): boolean {
      const bytes = Buffer.from(pristine);
      bytes[position] = value;
      return walkAuditLog(bytes, keyFor).brokenAt !== undefined;
    }

    it("is detected at every position, for a flipped low bit (exhaustive)", () => {
      const missed: number[] = [];
      for (let i = 0; i < pristine.length; i++) {
        if (!detectedInMemory(i, (pristine[i] ?? 0) ^ 0x01)) missed.push(i);
      }
      expect(missed).toEqual([]);
    });

    it("is detected for any position and any other byte value (property)", async () => {
      await fc.assert(
        fc.asyncProperty(fc.nat({ max: pristine.length - 1 }), fc.integer({ min: 1, max: 255 }), async (position, delta) => {
          const value = ((pristine[position] ?? 0) + delta) % 256;
          expect(await detected(position, value)).toBe(true);
        }),
        { numRuns: 500 },
      );
    });

    it("is detected when the byte becomes a newline or a quote or a brace (structure-changing)", () => {
      for (const value of [0x0a, 0x22, 0x7d, 0x5c, 0x20]) {
        for (let i = 0; i < pristine.length; i++) {
          if (pristine[i] === value) continue;
          expect(detectedInMemory(i, value), `byte ${i} -> ${value}`).toBe(true);
        }
      }
    });
  });
});
