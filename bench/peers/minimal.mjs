// A minimal runtime with civitas-ts's contract, written by hand, for the peer bench
// (../shared/bench-peers): how fast an actor loop can go on Node that pays what civitas-ts's
// contract makes every message pay, and nothing else, so that the bench tells the contract's cost
// (this against the raw baseline, and against Erlang) from the runtime's own (civitas-ts against
// this). It is not a lower bound: it is written plainly, not tuned (civitas-ts's ask path, tuned,
// runs faster than this one's). Copy bench/peers/*.mjs into the bench-peers folder and list
// `minimal-async minimal-enveloped` in JS_PEERS, with WORKLOADS="w1 w2 w3" (docs/benchmarks.md, "stop 45").
//
// What the contract costs that the raw baseline (bench-peers' baseline.mjs) does not pay:
// - every handler is an async function the loop awaits, and a send inside it is awaited (a send
//   returns a promise: mailboxes are bounded, and a full one makes the sender wait);
// - business mailboxes hold at most 1,000 messages (the runtime's default), puts beyond wait;
// - the loop looks at the time every 128 dispatches and yields one macrotask once 1 ms has passed
//   since its last yield (as the runtime's scheduler does, so that I/O and timers still run);
// - with `envelope: true`, every message is a SPEC §2 envelope built as the runtime builds one
//   (src/process/envelope.ts): a UUIDv7 id from civitas-ts's own `uuidv7`, a timestamp read from the
//   clock, the trace context carried over from the message being handled (a message from outside
//   starts a trace, a reply gets a span id of its own), the payload checked to be a plain JSON object.
// Nothing else: no supervision, lifecycle, priority lane, TTL, durable state, telemetry or policy.
import { uuidv7 } from 'civitas-ts';

const CAPACITY = 1000;
const RESOLVED = Promise.resolve();

let dispatched = 0;
let lastYield = Date.now();
let turn = null;

/** The scheduler's yield: a promise to await before the next dispatch, or undefined. */
function tick() {
  if (++dispatched < 128) return undefined;
  dispatched = 0;
  if (Date.now() - lastYield < 1) return undefined;
  turn ??= new Promise((resolve) => setImmediate(() => { turn = null; lastYield = Date.now(); resolve(); }));
  return turn;
}

class Actor {
  constructor(name, handle) {
    this.name = name;
    this.handle = handle; // async (message, self) => reply | undefined
    this.queue = new Array(CAPACITY);
    this.head = 0;
    this.size = 0;
    this.putters = []; // { message, resolve } waiting for room, oldest first
    this.putterHead = 0;
    this.wake = null;
    void this.loop();
  }

  /** Enqueues `message`; the promise settles once it is in the mailbox. */
  put(message) {
    if (this.size === CAPACITY) return new Promise((resolve) => this.putters.push({ message, resolve }));
    this.queue[(this.head + this.size++) % CAPACITY] = message;
    if (this.wake !== null) { const wake = this.wake; this.wake = null; wake(); }
    return RESOLVED;
  }

  take() {
    const message = this.queue[this.head];
    this.queue[this.head] = undefined;
    this.head = (this.head + 1) % CAPACITY;
    this.size--;
    if (this.putterHead < this.putters.length) {
      const putter = this.putters[this.putterHead];
      this.putters[this.putterHead++] = undefined;
      if (this.putterHead === this.putters.length) { this.putters.length = 0; this.putterHead = 0; }
      this.queue[(this.head + this.size++) % CAPACITY] = putter.message;
      putter.resolve();
    }
    return message;
  }

  async loop() {
    for (;;) {
      if (this.size === 0) {
        await new Promise((resolve) => { this.wake = resolve; });
        continue;
      }
      const pause = tick();
      if (pause !== undefined) await pause;
      const message = this.take();
      const reply = await this.handle(message, this);
      if (reply !== undefined) answer(reply);
    }
  }
}

/** The envelope's fields, as the runtime composes them (checks of the type and recipient left out: they are constants here). */
function compose(sender, recipient, payload, traceId, spanId) {
  if (!isJsonObject(payload)) throw new TypeError('payload must be a plain JSON object');
  const timestamp = Date.now();
  return { id: uuidv7(timestamp), type: 'message', sender, recipient, payload, timestamp, traceId, spanId, attempt: 0, priority: 0 };
}

function isJsonObject(value) {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key in value) {
    const v = value[key];
    if (typeof v === 'object' ? v !== null && !isJsonObject(v) : typeof v === 'number' ? !Number.isFinite(v) : typeof v !== 'string' && typeof v !== 'boolean') return false;
  }
  return true;
}

const HEX3 = Array.from({ length: 4096 }, (_, i) => i.toString(16).padStart(3, '0'));
let traces = 0xfff;
let tracePrefix = '';
let spans = 0xfff;
let spanPrefix = '';
const randomHex = (length) => Array.from({ length }, () => Math.floor(Math.random() * 16).toString(16)).join('');
/** Trace and span ids as the runtime mints them: random bits once per 4,095 ids, then a counter. */
function newTraceId() {
  if (++traces > 0xfff) { traces = 1; tracePrefix = randomHex(29); }
  return tracePrefix + HEX3[traces];
}
function newSpanId() {
  if (++spans > 0xfff) { spans = 1; spanPrefix = randomHex(13); }
  return spanPrefix + HEX3[spans];
}

const waiting = new Map(); // correlation id -> resolve of the ask

function answer(reply) {
  const resolve = waiting.get(reply.correlationId);
  waiting.delete(reply.correlationId);
  resolve(reply);
}

/** The peer's workloads, with or without envelopes. */
export function minimal(envelope) {
  // A message to `to` with `payload`, sent while handling `current` (undefined: from outside).
  const message = envelope
    ? (from, to, payload, current) => compose(from, to.name, payload, current?.traceId ?? newTraceId(), current?.spanId ?? newSpanId())
    : (_from, _to, payload) => ({ payload });
  const request = envelope
    ? (to, payload) => { const m = compose('_runtime', to.name, payload, newTraceId(), newSpanId()); m.correlationId = m.id; m.replyTo = '_runtime'; return m; }
    : (_to, payload) => ({ payload, correlationId: Symbol('ask') });
  const reply = envelope
    ? (self, to, payload) => { const m = compose(self.name, to.replyTo, payload, to.traceId, newSpanId()); m.correlationId = to.correlationId; m.parentSpanId = to.spanId; return m; }
    : (_self, to, payload) => ({ payload, correlationId: to.correlationId });

  return {
    async w1(total) {
      const half = total / 2;
      let done;
      const finished = new Promise((resolve) => { done = resolve; });
      let n = 0;
      const pong = new Actor('pong', async (m, self) => { await ping.put(message(self.name, ping, {}, m)); });
      const ping = new Actor('ping', async (m, self) => { if (++n === half) done(); else await pong.put(message(self.name, pong, {}, m)); });
      return () => { void pong.put(message('_runtime', pong, {}, undefined)); return finished; };
    },

    async w2(senders, perSender) {
      const total = senders * perSender;
      let done;
      const finished = new Promise((resolve) => { done = resolve; });
      let n = 0;
      const receiver = new Actor('receiver', async () => { if (++n === total) done(); });
      const all = [];
      for (let i = 0; i < senders; i++) {
        all.push(new Actor(`sender-${i}`, async (m, self) => { for (let j = 0; j < perSender; j++) await receiver.put(message(self.name, receiver, { j }, m)); }));
      }
      return () => { for (const sender of all) void sender.put(message('_runtime', sender, {}, undefined)); return finished; };
    },

    async w3() {
      const server = new Actor('server', async (m, self) => reply(self, m, { n: m.payload.n + 1 }));
      return {
        ask: (n) => {
          const asked = request(server, { n });
          const replied = new Promise((resolve) => waiting.set(asked.correlationId, resolve));
          void server.put(asked);
          return replied.then((r) => r.payload.n);
        },
      };
    },
  };
}
