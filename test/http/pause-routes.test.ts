/**
 * The whole-agent pause routes over real loopback HTTP: listing suspended
 * agents (filters, paging), resuming and denying them as the authenticated
 * identity, and every refusal with its status and code.
 */
import { describe, expect, it } from "vitest";
import { MemoryAuditSink, ProcessStatus, Supervisor, type Runtime } from "../../src/index.js";
import { runtimes, until } from "../support/runtimes.js";
import { call, headerIdentity, Inbox, inboxes, LIMIT_CENTS, Payer, signIn, USER_HEADER } from "./support.js";

const runtime = runtimes();
const serve = inboxes();

/** A runtime with `count` payers (payer-0 …), each paused on one large payment, and a `requester` that hears of denials. */
async function pausedPayers(count: number, options: Parameters<typeof runtime>[1] = {}): Promise<{ rt: Runtime; payers: Payer[]; requester: Inbox }> {
  const payers = Array.from({ length: count }, (_, i) => new Payer(`payer-${i}`));
  const requester = new Inbox("requester");
  const rt = runtime(new Supervisor("root", { children: [...payers, requester] }), options);
  await rt.start();
  for (const [i, payer] of payers.entries()) {
    await rt.send(payer.name, { invoice: `INV-${i}`, cents: LIMIT_CENTS + 1 + i, notify: "requester" });
    await until(() => payer.status === ProcessStatus.SUSPENDED);
  }
  return { rt, payers, requester };
}

describe("GET /api/v1/agents/suspended", () => {
  it("lists every paused agent, oldest first, with reason, since and suspension id", async () => {
    const { rt } = await pausedPayers(3);
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    const answer = await alice.get("/api/v1/agents/suspended");
    expect(answer.status).toBe(200);
    expect(answer.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(answer.headers["cache-control"]).toBe("no-store");
    const expected = rt.listSuspended().sort((a, b) => a.since.localeCompare(b.since) || a.name.localeCompare(b.name));
    expect(answer.json).toEqual({ scope: "local", total: 3, items: expected });
    expect((answer.json.items as { reason: string }[])[0]?.reason).toBe("approve payment INV-0: 1000.01");
  });

  it("filters by agent name and by text in the name or reason", async () => {
    const { rt } = await pausedPayers(3);
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    const byName = await alice.get("/api/v1/agents/suspended?agent=payer-1");
    expect((byName.json.items as { name: string }[]).map((p) => p.name)).toEqual(["payer-1"]);
    const byText = await alice.get("/api/v1/agents/suspended?q=inv-2");
    expect((byText.json.items as { name: string }[]).map((p) => p.name)).toEqual(["payer-2"]);
    expect(byText.json.total).toBe(1);
    const none = await alice.get("/api/v1/agents/suspended?agent=nobody");
    expect(none.json).toEqual({ scope: "local", total: 0, items: [] });
  });

  it("pages with limit and an opaque cursor that stays right when earlier items are decided", async () => {
    const { rt } = await pausedPayers(5);
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    const first = await alice.get("/api/v1/agents/suspended?limit=2");
    expect((first.json.items as { name: string }[]).map((p) => p.name)).toEqual(["payer-0", "payer-1"]);
    expect(first.json.total).toBe(5);
    const cursor = String(first.json.nextCursor);
    // payer-0 is decided between the two pages: the second page still starts at payer-2
    const pause = rt.listSuspended().find((p) => p.name === "payer-0");
    expect((await alice.post("/api/v1/agents/payer-0/resume", { suspensionId: pause?.suspensionId })).status).toBe(200);
    const second = await alice.get(`/api/v1/agents/suspended?limit=2&cursor=${cursor}`);
    expect((second.json.items as { name: string }[]).map((p) => p.name)).toEqual(["payer-2", "payer-3"]);
    const third = await alice.get(`/api/v1/agents/suspended?limit=2&cursor=${String(second.json.nextCursor)}`);
    expect((third.json.items as { name: string }[]).map((p) => p.name)).toEqual(["payer-4"]);
    expect(third.json.nextCursor).toBeUndefined();
  });

  it("refuses a bad limit, cursor or scope with 400 INVALID_REQUEST, and cluster scope on a local store with 422", async () => {
    const { rt } = await pausedPayers(1);
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    for (const query of ["limit=0", "limit=501", "limit=abc", "limit=1.5", "cursor=%%%", "cursor=", "scope=world"]) {
      const answer = await alice.get(`/api/v1/agents/suspended?${query}`);
      expect([query, answer.status, answer.json.error?.code]).toEqual([query, 400, "INVALID_REQUEST"]);
    }
    const cluster = await alice.get("/api/v1/agents/suspended?scope=cluster");
    expect(cluster.status).toBe(422);
    expect(cluster.json.error?.code).toBe("CLUSTER_SCOPE_UNSUPPORTED");
  });
});

describe("POST /api/v1/agents/{name}/resume and /deny", () => {
  it("resumes as the authenticated identity: the agent runs the held payment once, and the receipt names that identity", async () => {
    const audit = new MemoryAuditSink();
    const { rt, payers } = await pausedPayers(1, { auditSink: audit });
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice@finance");
    const [pause] = rt.listSuspended();
    const answer = await alice.post("/api/v1/agents/payer-0/resume", { suspensionId: pause?.suspensionId });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ agent: "payer-0", suspensionId: pause?.suspensionId, decision: "approved", decidedBy: "alice@finance" });
    expect(payers[0]?.status).toBe(ProcessStatus.RUNNING);
    expect(payers[0]?.executions.get("INV-0")).toBe(1);
    expect(payers[0]?.state.paid).toEqual([{ invoice: "INV-0", cents: LIMIT_CENTS + 1, approvedBy: "alice@finance" }]);
    const receipt = audit.events.find((e) => e.event === "agent.resume");
    expect(receipt?.details).toMatchObject({ approver: "alice@finance", suspensionId: pause?.suspensionId });
    // the same approval again: 409, and the payment is not made twice
    const again = await alice.post("/api/v1/agents/payer-0/resume", { suspensionId: pause?.suspensionId });
    expect([again.status, again.json.error?.code]).toEqual([409, "STALE_APPROVAL"]);
    expect(payers[0]?.executions.get("INV-0")).toBe(1);
  });

  it("denies with a reason that reaches the agent and the sender of the held payment", async () => {
    const audit = new MemoryAuditSink();
    const { rt, payers, requester } = await pausedPayers(1, { auditSink: audit });
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const bob = await signIn(server.url, "bob");
    const [pause] = rt.listSuspended();
    const answer = await bob.post("/api/v1/agents/payer-0/deny", { suspensionId: pause?.suspensionId, reason: "over budget" });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ agent: "payer-0", suspensionId: pause?.suspensionId, decision: "denied", decidedBy: "bob", reason: "over budget" });
    expect(payers[0]?.state.denied).toEqual([{ invoice: "INV-0", cents: LIMIT_CENTS + 1, decider: "bob", reason: "over budget" }]);
    expect(payers[0]?.executions.size).toBe(0);
    await until(() => requester.received.length === 1);
    expect(requester.received[0]?.type).toBe("payment.denied");
    expect(requester.received[0]?.payload).toEqual({ invoice: "INV-0", decider: "bob", reason: "over budget" });
    expect(audit.events.find((e) => e.event === "agent.deny")?.details).toMatchObject({ decider: "bob", reason: "over budget", suspensionId: pause?.suspensionId });
  });

  it("answers an unknown agent with 404 AGENT_NOT_FOUND and a refusing authorizeResume with 403 RESUME_REFUSED", async () => {
    const { rt, payers } = await pausedPayers(1, { authorizeResume: (_agent, approver) => approver === "cfo" });
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const intern = await signIn(server.url, "intern");
    const [pause] = rt.listSuspended();
    const unknown = await intern.post("/api/v1/agents/nobody/resume", { suspensionId: pause?.suspensionId });
    expect([unknown.status, unknown.json.error?.code]).toEqual([404, "AGENT_NOT_FOUND"]);
    const refused = await intern.post("/api/v1/agents/payer-0/resume", { suspensionId: pause?.suspensionId });
    expect([refused.status, refused.json.error?.code]).toEqual([403, "RESUME_REFUSED"]);
    const refusedDeny = await intern.post("/api/v1/agents/payer-0/deny", { suspensionId: pause?.suspensionId, reason: "no" });
    expect([refusedDeny.status, refusedDeny.json.error?.code]).toEqual([403, "RESUME_REFUSED"]);
    expect(payers[0]?.status).toBe(ProcessStatus.SUSPENDED);
    const cfo = await signIn(server.url, "cfo");
    expect((await cfo.post("/api/v1/agents/payer-0/resume", { suspensionId: pause?.suspensionId })).status).toBe(200);
  });

  it("refuses bodies that name who decides, lack the suspension id or the deny reason, with 422 INVALID_ARGUMENT", async () => {
    const { rt, payers } = await pausedPayers(1);
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    const [pause] = rt.listSuspended();
    const id = pause?.suspensionId;
    const cases: [string, unknown][] = [
      ["/api/v1/agents/payer-0/resume", { suspensionId: id, approver: "mallory" }],
      ["/api/v1/agents/payer-0/deny", { suspensionId: id, reason: "x", decider: "mallory" }],
      ["/api/v1/agents/payer-0/resume", {}],
      ["/api/v1/agents/payer-0/resume", { suspensionId: 7 }],
      ["/api/v1/agents/payer-0/resume", { suspensionId: "   " }],
      ["/api/v1/agents/payer-0/deny", { suspensionId: id }],
      ["/api/v1/agents/payer-0/deny", { suspensionId: id, reason: "" }],
      ["/api/v1/agents/payer-0/deny", { suspensionId: id, reason: "x".repeat(1025) }],
      ["/api/v1/agents/payer-0/resume", { suspensionId: id, extra: true }],
    ];
    for (const [path, body] of cases) {
      const answer = await alice.post(path, body);
      expect([JSON.stringify(body).slice(0, 60), answer.status, answer.json.error?.code]).toEqual([JSON.stringify(body).slice(0, 60), 422, "INVALID_ARGUMENT"]);
    }
    const named = await alice.post("/api/v1/agents/payer-0/resume", { suspensionId: id, approver: "mallory" });
    expect(named.json.error?.message).toMatch(/takes no 'approver': who decides is the identity the server authenticated/);
    expect(payers[0]?.status).toBe(ProcessStatus.SUSPENDED);
  });

  it("answers a decision on a pause that was already superseded with 409 STALE_APPROVAL and changes nothing", async () => {
    const { rt, payers } = await pausedPayers(1);
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    const [first] = rt.listSuspended();
    await rt.resume("payer-0", "someone-else", { suspensionId: first?.suspensionId ?? "" });
    await rt.send("payer-0", { invoice: "INV-9", cents: LIMIT_CENTS * 2 });
    await until(() => payers[0]?.status === ProcessStatus.SUSPENDED);
    const stale = await alice.post("/api/v1/agents/payer-0/deny", { suspensionId: first?.suspensionId, reason: "late" });
    expect([stale.status, stale.json.error?.code]).toEqual([409, "STALE_APPROVAL"]);
    expect(payers[0]?.state.pending).toEqual({ invoice: "INV-9", cents: LIMIT_CENTS * 2 });
  });
});

describe("refusals before any route runs", () => {
  it("refuses a request without an identity with 401 UNAUTHENTICATED, for the API and the page alike", async () => {
    const { rt, payers } = await pausedPayers(1);
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    for (const path of ["/", "/assets/inbox.js", "/api/v1/agents/suspended", "/api/v1/session", "/api/v1/events", "/api/v1/no-such-route"]) {
      const answer = await call(server.url, "GET", path);
      expect([path, answer.status, answer.json.error?.code]).toEqual([path, 401, "UNAUTHENTICATED"]);
    }
    const [pause] = rt.listSuspended();
    const post = await call(server.url, "POST", "/api/v1/agents/payer-0/resume", { "content-type": "application/json" }, JSON.stringify({ suspensionId: pause?.suspensionId }));
    expect([post.status, post.json.error?.code]).toEqual([401, "UNAUTHENTICATED"]);
    expect(payers[0]?.status).toBe(ProcessStatus.SUSPENDED);
  });

  it("refuses, with 401, an identity authenticate() returns blank, and one whose authenticate() throws (the throw is logged, not shown)", async () => {
    const { rt } = await pausedPayers(1);
    const logged: string[] = [];
    const logger = { debug: () => undefined, info: () => undefined, warn: (m: string) => logged.push(m), error: (m: string) => logged.push(m) };
    const blank = await serve({ runtime: rt, authenticate: () => "  " });
    expect((await call(blank.url, "GET", "/api/v1/session")).status).toBe(401);
    const throwing = await serve({ runtime: rt, logger, authenticate: () => { throw new Error("token service down: secret=abc"); } });
    const answer = await call(throwing.url, "GET", "/api/v1/session");
    expect([answer.status, answer.json.error?.code]).toEqual([401, "UNAUTHENTICATED"]);
    expect(answer.text).not.toContain("secret=abc");
    expect(logged).toEqual(["civitas-ts/http: authenticate() threw; the request was refused with 401"]);
  });

  it("refuses cross-site and tokenless state changes with 403 CROSS_SITE_REQUEST before reading the body", async () => {
    const { rt, payers } = await pausedPayers(1);
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    const mallory = await signIn(server.url, "mallory");
    const [pause] = rt.listSuspended();
    const body = { suspensionId: pause?.suspensionId };
    const host = new URL(server.url).host;
    const refusals: Record<string, string>[] = [
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
      { origin: "http://evil.example" },
      { origin: "null" },
      { origin: `http://${host}.evil.example` },
      { "x-civitas-csrf": "" },
      { "x-civitas-csrf": mallory.csrfToken }, // another identity's token
    ];
    for (const headers of refusals) {
      const answer = await alice.post("/api/v1/agents/payer-0/resume", body, headers);
      expect([headers, answer.status, answer.json.error?.code]).toEqual([headers, 403, "CROSS_SITE_REQUEST"]);
    }
    // a form post from another site: no JSON, no token, the browser's marks
    const form = await call(server.url, "POST", "/api/v1/agents/payer-0/resume", { [USER_HEADER]: "alice", "content-type": "application/x-www-form-urlencoded", origin: "http://evil.example", "sec-fetch-site": "cross-site" }, `suspensionId=${pause?.suspensionId ?? ""}`);
    expect([form.status, form.json.error?.code]).toEqual([403, "CROSS_SITE_REQUEST"]);
    // without the token header at all
    const tokenless = await call(server.url, "POST", "/api/v1/agents/payer-0/resume", { [USER_HEADER]: "alice", "content-type": "application/json" }, JSON.stringify(body));
    expect([tokenless.status, tokenless.json.error?.code]).toEqual([403, "CROSS_SITE_REQUEST"]);
    expect(payers[0]?.status).toBe(ProcessStatus.SUSPENDED);
    // same origin, as the page sends it: accepted
    const ok = await alice.post("/api/v1/agents/payer-0/resume", body, { origin: `http://${host}`, "sec-fetch-site": "same-origin" });
    expect(ok.status).toBe(200);
  });

  it("accepts an origin named in allowedOrigins (a proxy that rewrites Host)", async () => {
    const { rt } = await pausedPayers(1);
    const server = await serve({ runtime: rt, authenticate: headerIdentity, allowedOrigins: ["https://inbox.example.com"] });
    const alice = await signIn(server.url, "alice");
    const [pause] = rt.listSuspended();
    const ok = await alice.post("/api/v1/agents/payer-0/resume", { suspensionId: pause?.suspensionId }, { origin: "https://inbox.example.com" });
    expect(ok.status).toBe(200);
  });

  it("refuses a body over maxBodyBytes with 413 BODY_TOO_LARGE, declared or streamed", async () => {
    const { rt, payers } = await pausedPayers(1);
    const server = await serve({ runtime: rt, authenticate: headerIdentity, maxBodyBytes: 256 });
    const alice = await signIn(server.url, "alice");
    const [pause] = rt.listSuspended();
    const big = JSON.stringify({ suspensionId: pause?.suspensionId, pad: "x".repeat(300) });
    const declared = await alice.post("/api/v1/agents/payer-0/resume", JSON.parse(big));
    expect([declared.status, declared.json.error?.code]).toEqual([413, "BODY_TOO_LARGE"]);
    const chunked = await call(server.url, "POST", "/api/v1/agents/payer-0/resume", { [USER_HEADER]: "alice", "content-type": "application/json", "x-civitas-csrf": alice.csrfToken, "transfer-encoding": "chunked" }, big);
    expect([chunked.status, chunked.json.error?.code]).toEqual([413, "BODY_TOO_LARGE"]);
    expect(payers[0]?.status).toBe(ProcessStatus.SUSPENDED);
  });

  it("refuses a body that is not a JSON object with 400 INVALID_REQUEST", async () => {
    const { rt } = await pausedPayers(1);
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    const headers = { [USER_HEADER]: "alice", "x-civitas-csrf": alice.csrfToken };
    const cases: [Record<string, string>, string | Buffer][] = [
      [{ "content-type": "application/json" }, "{not json"],
      [{ "content-type": "application/json" }, "[1,2]"],
      [{ "content-type": "application/json" }, "null"],
      [{ "content-type": "application/json" }, ""],
      [{ "content-type": "application/json" }, Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d])],
      [{ "content-type": "text/plain" }, "{}"],
      [{}, "{}"],
    ];
    for (const [extra, body] of cases) {
      const answer = await call(server.url, "POST", "/api/v1/agents/payer-0/resume", { ...headers, ...extra }, body);
      expect([String(body), answer.status, answer.json.error?.code]).toEqual([String(body), 400, "INVALID_REQUEST"]);
    }
  });

  it("answers an unknown route or method with 404 ROUTE_NOT_FOUND and a bad percent-encoding with 400 INVALID_REQUEST", async () => {
    const { rt } = await pausedPayers(1);
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    for (const [method, path] of [["GET", "/api/v2/agents/suspended"], ["DELETE", "/api/v1/agents/payer-0/resume"], ["GET", "/api/v1/agents/payer-0/resume"], ["POST", "/api/v1/agents/suspended"]] as const) {
      const answer = await call(server.url, method, path, { [USER_HEADER]: "alice", "x-civitas-csrf": alice.csrfToken, "content-type": "application/json" }, method === "POST" ? "{}" : undefined);
      expect([method, path, answer.status, answer.json.error?.code]).toEqual([method, path, 404, "ROUTE_NOT_FOUND"]);
    }
    const bad = await alice.get("/api/v1/agents/%E0%A4%A/resume");
    expect([bad.status, bad.json.error?.code]).toEqual([400, "INVALID_REQUEST"]);
  });
});
