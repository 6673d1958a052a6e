/**
 * A property over malformed requests to the state-changing routes: whatever
 * is wrong with the identity, the CSRF marks, the content type, the path or
 * the body, the answer is a coded refusal (`{ error: { code, message } }`
 * with a 4xx status), and nothing changed: not the agent, not its stored
 * state, not the audit log.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InMemoryStateStore, MemoryAuditSink, ProcessStatus } from "../../src/index.js";
import { runtimes, until } from "../support/runtimes.js";
import { call, headerIdentity, inboxes, LIMIT_CENTS, Payer, signIn, USER_HEADER } from "./support.js";

const runtime = runtimes();
const serve = inboxes();

/** Printable ASCII: what a client can put in a header value. */
const headerText = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 });

const REFUSAL_STATUSES = [400, 401, 403, 404, 409, 413, 422];

describe("malformed requests", () => {
  it("are refused with a code and change neither the agent, its stored state nor the audit log", async () => {
    const store = new InMemoryStateStore();
    const audit = new MemoryAuditSink();
    const payer = new Payer("payer");
    const rt = runtime([payer], { store, auditSink: audit });
    await rt.start();
    await rt.send("payer", { invoice: "INV-1", cents: LIMIT_CENTS * 2 });
    await until(() => payer.status === ProcessStatus.SUSPENDED);
    const server = await serve({ runtime: rt, authenticate: headerIdentity, maxBodyBytes: 512 });
    const alice = await signIn(server.url, "alice");
    const [pause] = rt.listSuspended();
    const realId = pause?.suspensionId ?? "";
    const storedBefore = JSON.stringify(await store.get("payer"));
    const receiptsBefore = audit.events.length;

    // A valid decision on the real pause, then at least one defect injected into it.
    const valid = fc.constantFrom(
      { path: "/api/v1/agents/payer/resume", body: { suspensionId: realId } },
      { path: "/api/v1/agents/payer/deny", body: { suspensionId: realId, reason: "looks wrong" } },
    );
    type Request = { path: string; headers: Record<string, string>; body: string | Buffer };
    type Defect = (request: Request) => Request;
    const replaceHeaders = (request: Request, remove: string[], add: Record<string, string>): Request => {
      const headers = Object.fromEntries(Object.entries(request.headers).filter(([k]) => !remove.includes(k)));
      return { ...request, headers: { ...headers, ...add } };
    };
    const defect: fc.Arbitrary<Defect> = fc.oneof(
      // identity
      fc.constantFrom<Record<string, string>>({}, { [USER_HEADER]: "   " }, { [USER_HEADER]: "" }).map((who) => (r: Request) => replaceHeaders(r, [USER_HEADER], who)),
      // CSRF token
      fc.oneof(fc.constant<Record<string, string>>({}), headerText.filter((t) => t !== alice.csrfToken).map((t) => ({ "x-civitas-csrf": t }))).map((token) => (r: Request) => replaceHeaders(r, ["x-civitas-csrf"], token)),
      // where the browser says it comes from
      fc.constantFrom<Record<string, string>>({ "sec-fetch-site": "cross-site" }, { "sec-fetch-site": "same-site" }, { "sec-fetch-site": "none" }, { origin: "http://evil.example" }, { origin: "null" }).map((marks) => (r: Request) => replaceHeaders(r, [], marks)),
      // content type
      fc.oneof(fc.constantFrom<Record<string, string>>({}, { "content-type": "text/plain" }, { "content-type": "application/x-www-form-urlencoded" }, { "content-type": "multipart/form-data; boundary=x" }), headerText.filter((t) => !/^\s*application\/json\s*(;|$)/i.test(t)).map((t) => ({ "content-type": t }))).map((type) => (r: Request) => replaceHeaders(r, ["content-type"], type)),
      // path
      fc.oneof(
        fc.string({ maxLength: 12 }).filter((name) => name !== "payer").map((name) => `/api/v1/agents/${encodeURIComponent(name)}/resume`),
        fc.constantFrom("/api/v1/agents/payer", "/api/v1/agents//resume", "/api/v1/agents/payer/resume/x", "/api/v1/agents/%zz/deny", "/api/v1/agents/suspended"),
      ).map((path) => (r: Request) => ({ ...r, path })),
      // body: not JSON, not an object, too large, fields wrong or extra, an identity field
      fc.oneof(
        fc.uint8Array({ maxLength: 700 }).map((bytes) => Buffer.from(bytes)),
        fc.string({ maxLength: 200 }).filter((text) => { try { const v: unknown = JSON.parse(text); return typeof v !== "object" || v === null || Array.isArray(v); } catch { return true; } }),
        fc.jsonValue({ maxDepth: 2 }).filter((v) => typeof v !== "object" || v === null || Array.isArray(v)).map((v) => JSON.stringify(v) ?? "null"),
        fc.constant(JSON.stringify({ suspensionId: realId, pad: "x".repeat(600) })),
      ).map((body) => (r: Request) => ({ ...r, body })),
      fc.oneof(
        fc.record({ approver: fc.string() }),
        fc.record({ decider: fc.string() }),
        fc.record({ suspensionId: fc.oneof(fc.string().filter((id) => id !== realId), fc.integer(), fc.constant(null)) }),
        fc.record({ reason: fc.oneof(fc.constantFrom("", "   ", "x".repeat(1025)), fc.integer()) }),
        fc.dictionary(fc.string({ maxLength: 8 }).filter((k) => k !== "suspensionId" && k !== "reason"), fc.jsonValue({ maxDepth: 1 }), { minKeys: 1, maxKeys: 3 }),
      ).map((fields) => (r: Request) => {
        const body = { ...(JSON.parse(String(r.body)) as Record<string, unknown>), ...fields };
        // a resume takes no reason: a "reason" field on it is a defect too
        return { ...r, body: JSON.stringify(body) };
      }),
    );

    await fc.assert(
      fc.asyncProperty(valid, fc.array(defect, { minLength: 1, maxLength: 3 }), async (base, defects) => {
        let request: Request = {
          path: base.path,
          headers: { [USER_HEADER]: "alice", "x-civitas-csrf": alice.csrfToken, "content-type": "application/json" },
          body: JSON.stringify(base.body),
        };
        for (const apply of defects) {
          try {
            request = apply(request);
          } catch {
            // a field defect on a body an earlier defect made non-JSON: that body stays malformed
          }
        }
        const answer = await call(server.url, "POST", request.path, request.headers, request.body);
        expect(REFUSAL_STATUSES).toContain(answer.status);
        expect(Object.keys(answer.json)).toEqual(["error"]);
        expect(answer.json.error?.code).toMatch(/^[A-Z_]+$/);
        expect(typeof answer.json.error?.message).toBe("string");
        expect(payer.status).toBe(ProcessStatus.SUSPENDED);
        expect(rt.listSuspended()).toEqual([pause]);
        expect(JSON.stringify(await store.get("payer"))).toBe(storedBefore);
        expect(audit.events.length).toBe(receiptsBefore);
      }),
      { numRuns: 300 },
    );
    expect(payer.executions.size).toBe(0);
  });
});
