import { connect, type NatsConnection } from "@nats-io/transport-node";
import { describeValue } from "../errors/civitas-error.js";
import { TransportUnavailableError } from "../errors/errors.js";
import type { NatsTransportOptions } from "./nats-transport-options.js";

/**
 * Opens the connection a {@link NatsTransport} owns (it was given none): to
 * `servers`, with every nats.js option the transport's options carry,
 * reconnecting without end unless told otherwise.
 * @throws {@link TransportUnavailableError} when the server cannot be reached.
 * @internal
 */
export async function openConnection(options: NatsTransportOptions): Promise<NatsConnection> {
  const { connection: _c, servers, serializer: _s, discoveryMs: _d, sendTimeoutMs: _t, name, ...rest } = options;
  try {
    return await connect({ maxReconnectAttempts: -1, ...rest, ...(servers === undefined ? {} : { servers }), name: name ?? "civitas-ts" });
  } catch (error) {
    throw new TransportUnavailableError(`NatsTransport could not connect to ${describeValue(servers)}: ${(error as Error).message}; check that nats-server runs there and the options (auth, TLS) match`, { cause: error });
  }
}
