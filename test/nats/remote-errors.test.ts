/**
 * Errors across processes, on the real NATS server and PostgreSQL: a request
 * another process fails or refuses rejects its asker with HANDLER_FAILED at
 * once (the remote code and message as cause), not with ASK_TIMEOUT; control
 * of an agent whose owner left the bus answers AGENT_UNREACHABLE, naming the
 * store that knows it, not AGENT_NOT_FOUND.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CivitasError, HandlerFailedError, Runtime, silentLogger } from "../../src/index.js";
import { RemoteFailureError } from "../../src/bus/remote-failure.js";
import { uuidv7 } from "../../src/message/ids.js";
import { NatsTransport } from "../../src/nats/nats-transport.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { createTestSchema, PG_URL, type TestSchema } from "../support/postgres.js";
import { startPeer, type PeerProcess } from "./support/peer-process.js";
import { untilHosted } from "./support/remote.js";

const SERVERS = "127.0.0.1:4222";
const PEER = "test/nats/fixtures/failing-peer.ts";
const p = `e${uuidv7().slice(-8)}`;

let schema: TestSchema;
let table: string;
let transport: NatsTransport;
let runtime: Runtime;
let peer: PeerProcess;

async function rejection(promise: Promise<unknown>): Promise<CivitasError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(CivitasError);
  return error as CivitasError;
}

beforeAll(async () => {
  schema = await createTestSchema("remoteerr");
  table = schema.table("state");
  transport = new NatsTransport({ servers: SERVERS });
  // An approver-only process: no agents of its own, the agents' store to know them by.
  runtime = new Runtime({ root: [], transport, store: new PostgresStateStore({ pool: schema.pool }, { table }), logger: silentLogger });
  await runtime.start();
  peer = await startPeer(PEER, [SERVERS, p, PG_URL, table], 40_000);
  await untilHosted(transport, `${p}-pausable`, { timeoutMs: 10_000 });
}, 60_000);

afterAll(async () => {
  await peer?.stop();
  await runtime?.stop();
  await schema?.drop();
});

describe("a request another process fails or refuses", () => {
  it("rejects with HANDLER_FAILED at once, the remote error's code and message as cause", async () => {
    const started = Date.now();
    const error = await rejection(runtime.ask(`${p}-crasher`, { amount: 120 }, { timeoutMs: 15_000 }));
    expect(Date.now() - started).toBeLessThan(5000);
    expect(error).toBeInstanceOf(HandlerFailedError);
    expect(error.code).toBe("HANDLER_FAILED");
    expect((error as HandlerFailedError).action).toBe("ESCALATE");
    expect(error.cause).toBeInstanceOf(RemoteFailureError);
    const cause = error.cause as RemoteFailureError;
    expect(cause.code).toBe("PAYMENT_DECLINED");
    expect(cause.message).toContain("card declined for 120");
    expect(cause.agent).toBe(`${p}-crasher`);
  });

  it("a handler that throws and skips the message (a denial): HANDLER_FAILED with the thrown error's name as code", async () => {
    const started = Date.now();
    const error = await rejection(runtime.ask(`${p}-denier`, {}, { timeoutMs: 15_000 }));
    expect(Date.now() - started).toBeLessThan(5000);
    expect(error.code).toBe("HANDLER_FAILED");
    expect((error as HandlerFailedError).action).toBe("SKIP");
    expect((error.cause as RemoteFailureError).code).toBe("TypeError");
    expect((error.cause as RemoteFailureError).message).toContain("not allowed for this account");
  });

  it("the agent keeps answering afterwards (a refusal settles one ask, not the next)", async () => {
    const reply = await runtime.ask(`${p}-pausable`, {}, { type: "ping", timeoutMs: 5000 });
    expect(reply.payload).toEqual({ handled: "ping" });
  });
});

describe("control of an agent whose owner is gone", () => {
  it("answers AGENT_UNREACHABLE, saying the store knows it, and AGENT_NOT_FOUND only for a name the store does not know", async () => {
    await runtime.send(`${p}-pausable`, {}, { type: "pause" });
    await peer.waitFor((event) => event.event === "paused", 10_000);
    await peer.stop();
    expect(await untilHosted(transport, `${p}-pausable`, { hosted: false, timeoutMs: 10_000 })).toBe(false);

    const error = await rejection(runtime.resume(`${p}-pausable`, "alice", { timeoutMs: 1500 }));
    expect(error.code).toBe("AGENT_UNREACHABLE");
    expect(error.message).toContain("known to the state store");
    expect(error.message).toContain(`'${p}-pausable'`);

    const started = Date.now();
    const unknown = await rejection(runtime.resume(`${p}-nobody`, "alice", { timeoutMs: 1500 }));
    expect(unknown.code).toBe("AGENT_NOT_FOUND");
    expect(Date.now() - started).toBeLessThan(1500);
  });
});
