/**
 * `civitas-ts/nats`: runtimes in many processes on one NATS server, and
 * Python Civitas on the same wire. Needs the optional peer dependencies
 * `@nats-io/transport-node` 3 and `@msgpack/msgpack` 3
 * (`npm install @nats-io/transport-node @msgpack/msgpack`).
 *
 * @example
 * ```ts
 * import { NatsTransport } from "civitas-ts/nats";
 * const runtime = new Runtime({ root, transport: new NatsTransport({ servers: "127.0.0.1:4222" }) });
 * ```
 * @packageDocumentation
 */
export { decodeMessage, decodeWire, encodeMessage, encodeWire } from "../nats/codec.js";
export type { WireSerializer } from "../nats/codec.js";
export { NatsTransport } from "../nats/nats-transport.js";
export type { NatsTransportOptions } from "../nats/nats-transport-options.js";
export type { RemoteAgentStatus } from "../nats/nats-transport.js";
export { TransportUnavailableError } from "../errors/errors.js";
export type { HostedAgent, Transport, TransportHost } from "../bus/transport.js";
export { AgentUnreachableError, ControlTimeoutError, RemoteControlError } from "../errors/errors.js";
export { RemoteFailureError } from "../bus/remote-failure.js";
