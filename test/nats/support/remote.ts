import type { NatsConnection } from "@nats-io/transport-node";
import { AgentProcess, type JsonObject, type Message } from "../../../src/index.js";
import { uuidv7 } from "../../../src/message/ids.js";
import { encodeMessage } from "../../../src/nats/codec.js";
import type { NatsTransport } from "../../../src/nats/nats-transport.js";

/** An agent of the test's own runtime that only owns a name (and a fence) on the bus: it handles nothing. */
export class Desk extends AgentProcess {
  override async handle(_message: Message): Promise<void> {}
}

/** An audit receipt as a peer's probe agent reports it. */
export interface Receipt {
  event: string;
  agent: string;
  details: JsonObject;
}

/**
 * Waits until `transport` sees `name` hosted by another runtime on the bus
 * (with `hosted: false`, until it no longer does), polling every 20 ms for at
 * most `timeoutMs`; resolves with whether it then does.
 */
export async function untilHosted(transport: NatsTransport, name: string, options: { hosted?: boolean; timeoutMs?: number } = {}): Promise<boolean> {
  const hosted = options.hosted ?? true;
  const deadline = Date.now() + (options.timeoutMs ?? 5000);
  while (transport.hosts(name) !== hosted && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return transport.hosts(name);
}

/** Publishes an `_agency.register` of `name` straight on the bus, as if a runtime (one that may be gone) hosted it. */
export async function announceAgent(raw: NatsConnection, name: string, format: "json" | "msgpack"): Promise<void> {
  const register = { id: uuidv7(), type: "_agency.register", sender: "", recipient: "", payload: { name, capabilities: [], capability_metadata: {} }, timestamp: Date.now(), traceId: "", spanId: "", attempt: 0, priority: 1 };
  raw.publish("civitas.agent._agency.register", encodeMessage(register, format));
  await raw.flush();
}
