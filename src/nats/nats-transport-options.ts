import type { NatsConnection, NodeConnectionOptions } from "@nats-io/transport-node";
import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import { checkSerializer, type WireSerializer } from "./codec.js";

/** Options of a {@link NatsTransport}: where the server is, how envelopes are encoded, and any nats.js connection option (auth, TLS …). */
export interface NatsTransportOptions extends Omit<NodeConnectionOptions, "servers" | "name"> {
  /** The NATS server(s) to connect to, e.g. `"127.0.0.1:4222"`. Required unless `connection` is given. */
  servers?: string | string[];
  /**
   * A connection you opened and own: the transport uses it and never drains
   * or closes it (`runtime.stop()` closes only a connection the transport created).
   */
  connection?: NatsConnection;
  /** How envelopes are encoded; readers take either. @defaultValue "msgpack" (as Python Civitas) */
  serializer?: WireSerializer;
  /** The connection's name, shown by the server's monitoring. @defaultValue "civitas-ts" */
  name?: string;
  /**
   * How long `start()` waits for the other civitas-ts runtimes to list their
   * agents (it stops waiting 100 ms after the last answer). @defaultValue 2000
   */
  discoveryMs?: number;
  /**
   * How long a send waits for a lost connection to come back before it
   * rejects with `TRANSPORT_UNAVAILABLE` (an `AbortSignal` ends it sooner).
   * @defaultValue 30000
   */
  sendTimeoutMs?: number;
}

/**
 * Refuses {@link NatsTransportOptions} that cannot work, as `new NatsTransport()` does.
 * @throws {@link InvalidArgumentError} for options that are not an object, neither
 *   `servers` nor `connection`, an unknown `serializer`, a negative `discoveryMs` or `sendTimeoutMs`.
 * @internal
 */
export function checkTransportOptions(options: NatsTransportOptions): void {
  if (typeof options !== "object" || (options as unknown) === null) {
    throw new InvalidArgumentError("options", `new NatsTransport() needs { servers } (or { connection }), got ${describeValue(options)}`);
  }
  if (options.connection === undefined && options.servers === undefined) {
    throw new InvalidArgumentError("servers", "new NatsTransport() needs the NATS server to connect to, e.g. { servers: \"127.0.0.1:4222\" }, or a connection you opened ({ connection })");
  }
  checkSerializer(options.serializer ?? "msgpack", "new NatsTransport()");
  for (const key of ["discoveryMs", "sendTimeoutMs"] as const) {
    const value = options[key];
    if (value !== undefined && !(typeof value === "number" && Number.isFinite(value) && value >= 0)) {
      throw new InvalidArgumentError(key, `new NatsTransport(): ${key} must be a non-negative number of milliseconds, got ${describeValue(value)}`);
    }
  }
}
