/**
 * Model-based test of the mailbox: random sequences of concurrent put / offer
 * / force / get / getPriority / poll / abort / close, checked after every step
 * against a small reference model (two queues, waiting puts per lane, one
 * FIFO list of waiting gets). Every operation's outcome (pending, resolved
 * with which message, rejected with which reason) must match the model
 * exactly; global invariants are checked once the mailbox is closed.
 */
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { MailboxClosedError } from "../../src/errors/errors.js";
import { forceMessage } from "../../src/mailbox/mailbox-internals.js";
import { Mailbox } from "../../src/mailbox/mailbox.js";
import { buildMessage, type Message } from "../../src/message/message.js";

type Lane = "business" | "priority";

type Outcome =
  | { readonly state: "pending" }
  | { readonly state: "resolved"; readonly value: string | undefined }
  | { readonly state: "rejected"; readonly reason: "closed" | "aborted" };

interface PendingPut {
  readonly op: number;
  readonly msg: string;
  readonly abortable: boolean;
}

interface PendingGet {
  readonly op: number;
  readonly priorityOnly: boolean;
  readonly abortable: boolean;
}

interface Model {
  readonly capacity: number;
  readonly priorityCapacity: number;
  readonly queues: Record<Lane, string[]>;
  readonly putters: Record<Lane, PendingPut[]>;
  readonly getters: PendingGet[];
  closed: boolean;
  nextOp: number;
  nextMsg: number;
  /** What every operation started so far should have come to. */
  readonly expected: Map<number, Outcome>;
}

interface Delivery {
  readonly msg: string;
  readonly by: "get" | "getPriority" | "poll" | "pollPriority" | "drain";
}

interface Real {
  readonly mailbox: Mailbox;
  /** What every operation has actually come to (filled in by promise callbacks). */
  readonly observed: Map<number, { state: "pending" | "resolved" | "rejected"; value?: string; reason?: unknown }>;
  readonly controllers: Map<number, { controller: AbortController; reason: Error }>;
  readonly deliveries: Delivery[];
  /** Messages the mailbox accepted (put resolved, offer true, force): each must come out exactly once. */
  readonly accepted: Set<string>;
  /** Messages whose put was aborted or rejected by close: none may ever come out. */
  readonly refused: Set<string>;
  readonly forced: Set<string>;
  readonly lanes: Map<string, Lane>;
  readonly seqOf: Map<string, number>;
  /** Which kind of get each get operation was. */
  readonly getKinds: Map<number, "get" | "getPriority">;
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function makeMessage(id: string, lane: Lane, seq: number): Message {
  return buildMessage({ id, sender: "s", recipient: "r", payload: { seq }, priority: lane === "priority" ? 1 : 0 });
}

function capacityOf(m: Model, lane: Lane): number {
  return lane === "priority" ? m.priorityCapacity : m.capacity;
}

// ---- the reference model -------------------------------------------------

/** Hands `msg` to the oldest getter allowed to take it, else queues it. */
function modelDeliver(m: Model, lane: Lane, msg: string): void {
  const index = m.getters.findIndex((g) => lane === "priority" || !g.priorityOnly);
  if (index >= 0) {
    const [getter] = m.getters.splice(index, 1);
    if (getter) m.expected.set(getter.op, { state: "resolved", value: msg });
    return;
  }
  m.queues[lane].push(msg);
}

/**
 * Takes the head of `lane`; a put waiting for room on that lane moves in
 * behind, if that leaves room (forced messages can hold a lane at or over capacity).
 */
function modelTake(m: Model, lane: Lane): string | undefined {
  const msg = m.queues[lane].shift();
  if (msg === undefined) return undefined;
  const putter = m.queues[lane].length < capacityOf(m, lane) ? m.putters[lane].shift() : undefined;
  if (putter) {
    m.queues[lane].push(putter.msg);
    m.expected.set(putter.op, { state: "resolved", value: undefined });
  }
  return msg;
}

function modelHasRoom(m: Model, lane: Lane): boolean {
  return m.queues[lane].length < capacityOf(m, lane) && m.putters[lane].length === 0;
}

// ---- helpers on the real side ---------------------------------------------

function observe<T>(r: Real, op: number, promise: Promise<T>, toValue: (value: T) => string | undefined): void {
  const entry: { state: "pending" | "resolved" | "rejected"; value?: string; reason?: unknown } = { state: "pending" };
  r.observed.set(op, entry);
  promise.then(
    (value) => {
      entry.state = "resolved";
      const v = toValue(value);
      if (v !== undefined) entry.value = v;
    },
    (reason: unknown) => {
      entry.state = "rejected";
      entry.reason = reason;
    },
  );
}

function newSignal(r: Real, op: number, abortable: boolean): AbortSignal | undefined {
  if (!abortable) return undefined;
  const controller = new AbortController();
  r.controllers.set(op, { controller, reason: new Error(`abort of op ${op}`) });
  return controller.signal;
}

/** Compares every operation and the lane sizes with the model. */
async function compare(m: Model, r: Real): Promise<void> {
  await flush();
  // plain comparisons first (fast); expect() only to report a mismatch
  const mismatches: string[] = [];
  for (const [op, want] of m.expected) {
    const got = r.observed.get(op);
    if (!got) {
      mismatches.push(`op ${op} was never started`);
      continue;
    }
    let ok = got.state === want.state;
    if (ok && want.state === "resolved") ok = got.value === want.value;
    if (ok && want.state === "rejected") {
      ok =
        want.reason === "closed"
          ? got.reason instanceof MailboxClosedError && got.reason.code === "MAILBOX_CLOSED"
          : got.reason === r.controllers.get(op)?.reason;
    }
    if (!ok) mismatches.push(`op ${op}: expected ${JSON.stringify(want)}, got ${got.state} ${String(got.value ?? got.reason)}`);
  }
  expect(mismatches).toEqual([]);
  expect([r.mailbox.size, r.mailbox.prioritySize, r.mailbox.closed]).toEqual([
    m.queues.business.length,
    m.queues.priority.length,
    m.closed,
  ]);
}

/** Records the messages handed to gets that were waiting before this step. */
function collectGets(m: Model, r: Real, before: Map<number, Outcome>): void {
  for (const [op, want] of m.expected) {
    const previous = before.get(op);
    if (want.state === "resolved" && previous?.state === "pending" && want.value !== undefined) {
      r.deliveries.push({ msg: want.value, by: r.getKinds.get(op) ?? "get" });
    }
  }
}

type Cmd = fc.AsyncCommand<Model, Real>;

/** Runs `step` on model and real, then checks they agree and records deliveries. */
async function step(m: Model, r: Real, action: () => void): Promise<void> {
  const before = new Map(m.expected);
  action();
  await compare(m, r);
  collectGets(m, r, before);
}

class PutCommand implements Cmd {
  constructor(
    readonly lane: Lane,
    readonly abortable: boolean,
  ) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const op = m.nextOp++;
    const seq = m.nextMsg++;
    const id = `${this.lane === "priority" ? "p" : "b"}${seq}`;
    r.lanes.set(id, this.lane);
    r.seqOf.set(id, seq);
    await step(m, r, () => {
      if (m.closed) {
        m.expected.set(op, { state: "rejected", reason: "closed" });
        r.refused.add(id);
      } else if (modelHasRoom(m, this.lane)) {
        modelDeliver(m, this.lane, id);
        m.expected.set(op, { state: "resolved", value: undefined });
      } else {
        m.putters[this.lane].push({ op, msg: id, abortable: this.abortable });
        m.expected.set(op, { state: "pending" });
      }
      const signal = newSignal(r, op, this.abortable);
      observe(r, op, r.mailbox.put(makeMessage(id, this.lane, seq), signal ? { signal } : undefined), () => {
        r.accepted.add(id);
        return undefined;
      });
    });
  }
  toString(): string {
    return `put(${this.lane}${this.abortable ? ", signal" : ""})`;
  }
}

class OfferCommand implements Cmd {
  constructor(
    readonly lane: Lane,
    readonly force: boolean,
  ) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const seq = m.nextMsg++;
    const id = `${this.lane === "priority" ? "p" : "b"}${seq}`;
    r.lanes.set(id, this.lane);
    r.seqOf.set(id, seq);
    await step(m, r, () => {
      const message = makeMessage(id, this.lane, seq);
      if (m.closed) {
        expect(() => (this.force ? forceMessage(r.mailbox, message) : r.mailbox.offer(message))).toThrow(MailboxClosedError);
        return;
      }
      if (this.force) {
        modelDeliver(m, this.lane, id);
        forceMessage(r.mailbox, message);
        r.accepted.add(id);
        r.forced.add(id);
        return;
      }
      const room = modelHasRoom(m, this.lane);
      if (room) modelDeliver(m, this.lane, id);
      expect(r.mailbox.offer(message)).toBe(room);
      if (room) r.accepted.add(id);
    });
  }
  toString(): string {
    return `${this.force ? "force" : "offer"}(${this.lane})`;
  }
}

class GetCommand implements Cmd {
  constructor(
    readonly priorityOnly: boolean,
    readonly abortable: boolean,
  ) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const op = m.nextOp++;
    r.getKinds.set(op, this.priorityOnly ? "getPriority" : "get");
    await step(m, r, () => {
      const taken = this.priorityOnly ? modelTake(m, "priority") : (modelTake(m, "priority") ?? modelTake(m, "business"));
      if (taken !== undefined) {
        m.expected.set(op, { state: "resolved", value: taken });
        r.deliveries.push({ msg: taken, by: this.priorityOnly ? "getPriority" : "get" });
      } else if (m.closed) {
        m.expected.set(op, { state: "rejected", reason: "closed" });
      } else {
        m.getters.push({ op, priorityOnly: this.priorityOnly, abortable: this.abortable });
        m.expected.set(op, { state: "pending" });
      }
      const signal = newSignal(r, op, this.abortable);
      const options = signal ? { signal } : undefined;
      const promise = this.priorityOnly ? r.mailbox.getPriority(options) : r.mailbox.get(options);
      observe(r, op, promise, (message) => message.id);
    });
  }
  toString(): string {
    return `${this.priorityOnly ? "getPriority" : "get"}(${this.abortable ? "signal" : ""})`;
  }
}

class PollCommand implements Cmd {
  constructor(readonly priorityOnly: boolean) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    await step(m, r, () => {
      const want = this.priorityOnly ? modelTake(m, "priority") : (modelTake(m, "priority") ?? modelTake(m, "business"));
      const got = this.priorityOnly ? r.mailbox.pollPriority() : r.mailbox.poll();
      expect(got?.id).toBe(want);
      if (got) r.deliveries.push({ msg: got.id, by: this.priorityOnly ? "pollPriority" : "poll" });
    });
  }
  toString(): string {
    return this.priorityOnly ? "pollPriority()" : "poll()";
  }
}

class AbortPutCommand implements Cmd {
  constructor(readonly pick: number) {}
  private candidates(m: Model): { lane: Lane; putter: PendingPut }[] {
    return (["business", "priority"] as const).flatMap((lane) =>
      m.putters[lane].filter((p) => p.abortable).map((putter) => ({ lane, putter })),
    );
  }
  check(m: Model): boolean {
    return this.candidates(m).length > 0;
  }
  async run(m: Model, r: Real): Promise<void> {
    const candidates = this.candidates(m);
    const target = candidates[this.pick % candidates.length];
    if (!target) throw new Error("check() guarantees a candidate");
    await step(m, r, () => {
      const list = m.putters[target.lane];
      list.splice(list.indexOf(target.putter), 1);
      m.expected.set(target.putter.op, { state: "rejected", reason: "aborted" });
      r.refused.add(target.putter.msg);
      const entry = r.controllers.get(target.putter.op);
      entry?.controller.abort(entry.reason);
    });
  }
  toString(): string {
    return `abortPut(#${this.pick})`;
  }
}

class AbortGetCommand implements Cmd {
  constructor(readonly pick: number) {}
  check(m: Model): boolean {
    return m.getters.some((g) => g.abortable);
  }
  async run(m: Model, r: Real): Promise<void> {
    const candidates = m.getters.filter((g) => g.abortable);
    const target = candidates[this.pick % candidates.length];
    if (!target) throw new Error("check() guarantees a candidate");
    await step(m, r, () => {
      m.getters.splice(m.getters.indexOf(target), 1);
      m.expected.set(target.op, { state: "rejected", reason: "aborted" });
      const entry = r.controllers.get(target.op);
      entry?.controller.abort(entry.reason);
    });
  }
  toString(): string {
    return `abortGet(#${this.pick})`;
  }
}

class CloseCommand implements Cmd {
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    await step(m, r, () => {
      if (!m.closed) {
        m.closed = true;
        for (const g of m.getters.splice(0)) m.expected.set(g.op, { state: "rejected", reason: "closed" });
        for (const lane of ["business", "priority"] as const) {
          for (const p of m.putters[lane].splice(0)) {
            m.expected.set(p.op, { state: "rejected", reason: "closed" });
            r.refused.add(p.msg);
          }
        }
      }
      r.mailbox.close();
    });
  }
  toString(): string {
    return "close()";
  }
}

const lane = fc.constantFrom<Lane>("business", "priority");
const commandArbs: fc.Arbitrary<Cmd>[] = [
  fc.tuple(lane, fc.boolean()).map(([l, abortable]): Cmd => new PutCommand(l, abortable)),
  fc.boolean().map((abortable): Cmd => new PutCommand("business", abortable)),
  fc.tuple(lane, fc.boolean()).map(([l, force]): Cmd => new OfferCommand(l, force)),
  fc.tuple(fc.boolean(), fc.boolean()).map(([priorityOnly, abortable]): Cmd => new GetCommand(priorityOnly, abortable)),
  fc.boolean().map((priorityOnly): Cmd => new PollCommand(priorityOnly)),
  fc.nat(7).map((pick): Cmd => new AbortPutCommand(pick)),
  fc.nat(7).map((pick): Cmd => new AbortGetCommand(pick)),
  // close is rare so that most runs build up contention before it
  fc.nat(5).map((n): Cmd => (n === 0 ? new CloseCommand() : new PollCommand(n % 2 === 0))),
];

/** After the run: close, settle everything, drain, and check the global invariants. */
async function finish(m: Model, r: Real): Promise<void> {
  await new CloseCommand().run(m, r);
  // every operation ever started has settled
  for (const [op, got] of r.observed) expect(got.state, `op ${op} still pending after close`).not.toBe("pending");
  for (const message of r.mailbox.drain()) r.deliveries.push({ msg: message.id, by: "drain" });
  expect(r.mailbox.size + r.mailbox.prioritySize).toBe(0);

  const delivered = r.deliveries.map((d) => d.msg);
  // nothing duplicated
  expect(new Set(delivered).size).toBe(delivered.length);
  // nothing lost: every accepted message came out, and nothing else did
  expect(new Set(delivered)).toEqual(r.accepted);
  // aborted puts (and puts refused by close) never deliver their message
  for (const msg of r.refused) expect(r.accepted.has(msg)).toBe(false);
  // getPriority / pollPriority never return a business message
  for (const d of r.deliveries) {
    if (d.by === "getPriority" || d.by === "pollPriority") expect(r.lanes.get(d.msg)).toBe("priority");
  }
  // FIFO within each lane: messages that entered through put/offer come out in the order they were sent
  for (const l of ["business", "priority"] as const) {
    const seqs = delivered.filter((id) => r.lanes.get(id) === l && !r.forced.has(id)).map((id) => r.seqOf.get(id) ?? -1);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  }
  // no abort listener is left behind on any signal
  for (const { controller } of r.controllers.values()) {
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  }
}

describe("Mailbox model-based", () => {
  it("agrees with a reference model under any mix of concurrent put/get/getPriority/poll/abort/close", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        fc.commands(commandArbs, { maxCommands: 30, size: "max" }),
        async (capacity, priorityCapacity, cmds) => {
          const setup = (): { model: Model; real: Real } => ({
            model: {
              capacity,
              priorityCapacity,
              queues: { business: [], priority: [] },
              putters: { business: [], priority: [] },
              getters: [],
              closed: false,
              nextOp: 0,
              nextMsg: 0,
              expected: new Map(),
            },
            real: {
              mailbox: new Mailbox({ capacity, priorityCapacity }),
              observed: new Map(),
              controllers: new Map(),
              deliveries: [],
              accepted: new Set(),
              refused: new Set(),
              forced: new Set(),
              lanes: new Map(),
              seqOf: new Map(),
              getKinds: new Map(),
            },
          });
          let state: { model: Model; real: Real } | undefined;
          await fc.asyncModelRun(() => {
            state = setup();
            return state;
          }, cmds);
          if (!state) throw new Error("asyncModelRun did not call setup");
          await finish(state.model, state.real);
        },
      ),
      { numRuns: 300 },
    );
  });
});
