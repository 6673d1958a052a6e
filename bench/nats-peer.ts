// The far side of `npm run bench -- nats`, in its own process: a civitas-ts
// runtime on the NATS bus with an echo agent, a counting sink and a pausable
// agent, and beside them the raw-client equivalents (an echo responder and a
// counting subscription). Prints "ready" once both are up; SIGTERM stops it.
// Usage: nats-peer.ts <servers> <prefix> [emitted src directory]: given the
// directory bench/civitas.ts emitted `src/` into, it runs that code (what the
// sending side measures); without it, `src/` through tsx.
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import type { Message } from "../src/index.js";
import type { CivitasModule, NatsModule } from "./civitas.js";

const servers = process.argv[2] ?? "127.0.0.1:4222";
const prefix = process.argv[3] ?? "bench";
const emitted = process.argv[4];
const civitas = (await import(emitted === undefined ? "../src/index.js" : pathToFileURL(join(emitted, "index.js")).href)) as CivitasModule;
const { NatsTransport } = (await import(emitted === undefined ? "../src/entries/nats.js" : pathToFileURL(join(emitted, "entries", "nats.js")).href)) as NatsModule;
const { AgentProcess, InMemoryStateStore, Runtime, silentLogger } = civitas;
let sunk = 0;

class Echo extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    if (message.replyTo !== undefined) return this.reply(message.payload);
  }
}

class Sink extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    if (message.replyTo !== undefined) return this.reply({ count: sunk });
    sunk++;
  }
}

const runtime = new Runtime({
  root: [new Echo(`${prefix}-echo`), new Sink(`${prefix}-sink`, { mailboxSize: 100_000 }), new Echo(`${prefix}-pausable`)],
  transport: new NatsTransport({ servers }),
  store: new InMemoryStateStore(),
  logger: silentLogger,
});
await runtime.start();
const nc = await connect({ servers });
let rawSunk = 0;
nc.subscribe(`${prefix}.raw.echo`, { callback: (_e, msg) => void msg.respond(msg.data) });
nc.subscribe(`${prefix}.raw.sink`, { callback: () => void rawSunk++ });
nc.subscribe(`${prefix}.raw.count`, { callback: (_e, msg) => void msg.respond(new TextEncoder().encode(String(rawSunk))) });
await nc.flush();
process.stdout.write("ready\n");
process.on("SIGTERM", () => {
  void Promise.all([runtime.stop(), nc.drain()]).then(() => process.exit(0));
});
