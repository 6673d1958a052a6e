import { NoRespondersError, RequestError, TimeoutError, type NatsConnection } from "@nats-io/transport-node";
import { ControlAttemptError, controlFailure, type ControlChannel, type ControlServer } from "../bus/control-protocol.js";
import type { Message } from "../message/message.js";
import { decodeMessage, encodeMessage, type WireSerializer } from "./codec.js";

/**
 * The NATS side of control across processes: the protocol itself
 * (`ControlServer`, `requestControl`) is transport-neutral and lives in
 * src/bus/control-protocol.ts; here requests and answers are encoded for the
 * bus, and nats.js's errors are told apart.
 */

/** Why one attempt of a request failed, as nats.js says it. */
function kindOf(error: unknown): "no-responders" | "timeout" | "other" {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof NoRespondersError || (e instanceof RequestError && e.isNoResponders())) return "no-responders";
    if (e instanceof TimeoutError) return "timeout";
  }
  return "other";
}

/**
 * A {@link ControlChannel} over a NATS connection: `nc.request` with the
 * envelope encoded by `serializer`; "no responders" and a timeout become a
 * {@link ControlAttemptError}, anything else is passed on (the request
 * could not be sent).
 * @internal
 */
export function natsControlChannel(nc: NatsConnection, serializer: WireSerializer): ControlChannel {
  return {
    async request(subject: string, request: Message, timeoutMs: number): Promise<Message> {
      let data: Uint8Array;
      try {
        data = (await nc.request(subject, encodeMessage(request, serializer), { timeout: timeoutMs })).data;
      } catch (error) {
        const kind = kindOf(error);
        if (kind === "other") throw error;
        throw new ControlAttemptError(kind, { cause: error });
      }
      return decodeMessage(data);
    },
  };
}

/**
 * Answers one control request from the bus through `server`: an envelope
 * that cannot be read is answered `INVALID_WIRE_MESSAGE`.
 * @internal
 */
export async function answerControl(server: ControlServer, data: Uint8Array, name: string, serializer: WireSerializer): Promise<Uint8Array> {
  let answer: Message;
  try {
    answer = await server.answer(decodeMessage(data), name);
  } catch (error) {
    answer = server.result(controlFailure(error));
  }
  return encodeMessage(answer, serializer);
}
