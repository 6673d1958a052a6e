/**
 * A request/reply pipeline: `api` asks `parser`, which asks `enricher`; each
 * reply travels back up the chain. It also shows an ask that times out
 * (ASK_TIMEOUT, caught) and the late reply that follows, a broadcast to every
 * agent matching a glob, and sendCapable, which picks one agent by capability.
 *
 * Run it with `npx tsx examples/request-reply-pipeline.ts`.
 */
import { AgentProcess, CivitasError, Runtime, Supervisor, silentLogger, type JsonObject, type Message } from "civitas-ts";

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Looks words up; a word starting with "slow" takes 300 ms. */
class Enricher extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    const words = Array.isArray(message.payload.words) ? message.payload.words.map(String) : [];
    if (words.some((w) => w.startsWith("slow"))) await sleep(300);
    const entities = words.filter((w) => /^[A-Z]/.test(w)).map((w) => ({ word: w, kind: "name" }));
    return this.reply({ entities });
  }
}

/** Splits text into words and asks the enricher about them, giving it 100 ms. */
class Parser extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    const text = typeof message.payload.text === "string" ? message.payload.text : "";
    const words = text.split(/\s+/).filter((w) => w.length > 0);
    try {
      const enriched = await this.ask("enricher", { words }, { timeoutMs: 100 });
      return this.reply({ words, entities: enriched.payload.entities ?? [], degraded: false });
    } catch (error) {
      if (error instanceof CivitasError && error.code === "ASK_TIMEOUT") {
        console.log(`  parser: ${error.code} after 100 ms; replying without entities`);
        return this.reply({ words, entities: [], degraded: true });
      }
      throw error;
    }
  }
}

/** The agent the outside world talks to. */
class Api extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    switch (message.type) {
      case "analyze": {
        const parsed = await this.ask("parser", message.payload, { timeoutMs: 2000 });
        const { words, entities, degraded } = parsed.payload;
        return this.reply({ wordCount: Array.isArray(words) ? words.length : 0, entities: entities ?? [], degraded: degraded ?? false });
      }
      case "flush-caches": {
        // every other agent whose name matches the glob
        const notified = await this.broadcast("cache-*", { reason: "config changed" });
        return this.reply({ notified });
      }
      case "record": {
        // one agent that declared the capability, round-robin
        await this.sendCapable("audit-log", message.payload);
        return this.reply({ recorded: true });
      }
      default:
        return this.reply({ error: `unknown request type '${message.type}'` });
    }
  }
}

/** A cache that counts flushes; `stats` reports them. */
class Cache extends AgentProcess<{ flushes: number }> {
  override state = { flushes: 0 };
  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "stats") return this.reply({ flushes: this.state.flushes });
    this.state.flushes += 1;
    console.log(`  ${this.name} flushed (${String(message.payload.reason)}), sent by ${message.sender}`);
  }
}

/** Keeps the entries it was sent; `count` reports how many. */
class AuditLog extends AgentProcess<{ entries: JsonObject[] }> {
  override state: { entries: JsonObject[] } = { entries: [] };
  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "count") return this.reply({ entries: this.state.entries.length });
    this.state.entries.push(message.payload);
    console.log(`  ${this.name} recorded ${JSON.stringify(message.payload)}`);
  }
}

const runtime = new Runtime({
  root: new Supervisor("root", {
    children: [
      new Api("api"),
      new Parser("parser"),
      new Enricher("enricher"),
      new Cache("cache-eu"),
      new Cache("cache-us"),
      new AuditLog("audit-1", { capabilities: ["audit-log"] }),
      new AuditLog("audit-2", { capabilities: ["audit-log"] }),
    ],
  }),
  logger: silentLogger, // the in-memory store's "not durable" warning is expected here
});

runtime.on("reply.late", (reply) => {
  console.log(`  reply.late: ${reply.sender} answered after the ask gave up; the reply was dropped`);
});

await runtime.start();

console.log("1. api -> parser -> enricher, replies flowing back");
const ok = await runtime.ask("api", { text: "Ada met Grace in London" }, { type: "analyze" });
console.log(`  api replied: ${JSON.stringify(ok.payload)}`);

console.log("2. the enricher is slow: the parser's ask times out");
const degraded = await runtime.ask("api", { text: "slowly Ada" }, { type: "analyze" });
console.log(`  api replied: ${JSON.stringify(degraded.payload)}`);
await keepAliveUntil(() => runtime.lateReplies > 0, 2000);
console.log(`  runtime.lateReplies = ${runtime.lateReplies}`);

console.log("3. an ask from outside that gives up");
try {
  await runtime.ask("enricher", { words: ["slow"] }, { timeoutMs: 50 });
} catch (error) {
  if (!(error instanceof CivitasError) || error.code !== "ASK_TIMEOUT") throw error;
  console.log(`  caught ${error.code}: ${error.message}`);
}
await keepAliveUntil(() => runtime.lateReplies > 1, 2000);
console.log(`  runtime.lateReplies = ${runtime.lateReplies}`);

console.log("4. broadcast to cache-*");
const flushed = await runtime.ask("api", {}, { type: "flush-caches" });
console.log(`  api replied: notified ${String(flushed.payload.notified)} caches`);
// A mailbox is FIFO, so each stats ask is answered after that cache's flush.
for (const cache of ["cache-eu", "cache-us"]) {
  const stats = await runtime.ask(cache, {}, { type: "stats" });
  console.log(`  ${cache} flushes = ${String(stats.payload.flushes)}`);
}

console.log("5. sendCapable('audit-log') twice: round-robin between audit-1 and audit-2");
await runtime.ask("api", { action: "login", user: "ada" }, { type: "record" });
await runtime.ask("api", { action: "logout", user: "ada" }, { type: "record" });
for (const log of ["audit-1", "audit-2"]) {
  const count = await runtime.ask(log, {}, { type: "count" });
  console.log(`  ${log} holds ${String(count.payload.entries)} entry`);
}

await runtime.stop();
console.log("stopped");

/** Waits (holding the process open) until `done()` is true. */
async function keepAliveUntil(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(10);
  }
}
