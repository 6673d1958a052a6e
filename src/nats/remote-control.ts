import { NoRespondersError, RequestError, TimeoutError, type NatsConnection } from "@nats-io/transport-node";
import type { ControlOperation, TransportHost } from "../bus/transport.js";
import { describeValue } from "../errors/civitas-error.js";
import { AgentUnreachableError, ControlTimeoutError, RemoteControlError, TransportUnavailableError } from "../errors/errors.js";
import { newSpanId, newTraceId, uuidv7 } from "../message/ids.js";
import type { JsonObject } from "../message/json.js";
import type { Message } from "../message/message.js";
import { decodeMessage, encodeMessage, type WireSerializer } from "./codec.js";

/** Subject of the control requests for the agent `name`: only its owner subscribes. @internal */
export function controlSubject(name: string): string {
  return `civitas.ctl.${name}`;
}

const OPERATIONS: Record<string, ControlOperation> = { "_agency.suspend": "suspend", "_agency.resume": "resume", "civitas.ctl.status": "status" };
const TYPES: Record<ControlOperation, string> = { suspend: "_agency.suspend", resume: "_agency.resume", status: "civitas.ctl.status" };
const RESULT_TYPE = "civitas.ctl.result";
/** How many outcomes an owner remembers by request id, for retried requests. */
const REMEMBERED = 10_000;
/** How long a requester waits between attempts while nobody answers the agent's control subject. */
const RETRY_MS = 100;
/**
 * How long one attempt waits for its answer before the same request (same
 * `requestId`) is sent again: an answer lost in transit costs at most this.
 */
const ATTEMPT_MS = 1_000;

function envelope(type: string, recipient: string, payload: JsonObject): Message {
  const timestamp = Date.now();
  return { id: uuidv7(timestamp), type, sender: "_runtime", recipient, payload, timestamp, traceId: newTraceId(), spanId: newSpanId(), attempt: 0, priority: 1 };
}

/**
 * The owner's side of cross-process control: decides each request through
 * the runtime's own calls, and answers a retried request (same `requestId`)
 * with the outcome recorded for it, never a second effect.
 * @internal
 */
export class ControlServer {
  private readonly outcomes = new Map<string, Promise<JsonObject>>();

  constructor(
    private readonly host: TransportHost,
    private readonly serializer: WireSerializer,
  ) {}

  /** Answers one request (already known to be for the agent `name`). */
  async answer(data: Uint8Array, name: string): Promise<Uint8Array> {
    let result: JsonObject;
    try {
      const request = decodeMessage(data);
      const operation = OPERATIONS[request.type];
      const requestId = request.payload.requestId;
      const timeoutMs = request.payload.timeoutMs;
      if (operation === undefined || typeof requestId !== "string" || requestId.length === 0 || typeof timeoutMs !== "number") {
        result = { ok: false, code: "INVALID_WIRE_MESSAGE", message: `a control request for '${name}' must be a suspend, resume or status request with a requestId and timeoutMs, got type ${describeValue(request.type)}` };
      } else {
        let outcome = this.outcomes.get(requestId);
        if (outcome === undefined) {
          outcome = this.decide(name, operation, request.payload.args as JsonObject, timeoutMs);
          this.remember(requestId, operation === "status" ? undefined : outcome);
        }
        result = await outcome;
      }
    } catch (error) {
      result = failure(error);
    }
    return encodeMessage(envelope(RESULT_TYPE, "", result), this.serializer);
  }

  private decide(name: string, operation: ControlOperation, args: JsonObject, timeoutMs: number): Promise<JsonObject> {
    return this.host.control(name, operation, typeof args === "object" && args !== null ? args : {}, timeoutMs).then(
      (answer) => ({ ok: true, answer }),
      (error: unknown) => failure(error),
    );
  }

  /** Keeps the outcome of a state-changing request (not of a status query) for retries; the oldest are forgotten first. */
  private remember(requestId: string, outcome: Promise<JsonObject> | undefined): void {
    if (outcome === undefined) return;
    this.outcomes.set(requestId, outcome);
    if (this.outcomes.size > REMEMBERED) this.outcomes.delete(this.outcomes.keys().next().value as string);
  }
}

function failure(error: unknown): JsonObject {
  const code = typeof (error as { code?: unknown } | null)?.code === "string" ? (error as { code: string }).code : "HANDLER_FAILED";
  return { ok: false, code, message: error instanceof Error ? error.message : String(error) };
}

/** Why one attempt of a request failed. */
function kindOf(error: unknown): "no-responders" | "timeout" | "other" {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof NoRespondersError || (e instanceof RequestError && e.isNoResponders())) return "no-responders";
    if (e instanceof TimeoutError) return "timeout";
  }
  return "other";
}

/**
 * Sends a control request to the owner of `name` and resolves with its
 * answer. While nobody answers the agent's control subject it tries again
 * until the deadline (`AGENT_UNREACHABLE`). An attempt that was taken and
 * got no answer within {@link ATTEMPT_MS} (the answer may have been lost in
 * transit, or the owner is still deciding) is sent again, with the same
 * `requestId`, so the owner answers with the outcome it recorded for it and
 * acts once; once some attempt was taken and no answer came by the
 * deadline, `CONTROL_TIMEOUT`. A refusal rejects with its own code.
 * @internal
 */
export async function requestControl(nc: NatsConnection, serializer: WireSerializer, name: string, operation: ControlOperation, args: JsonObject, timeoutMs: number, signal: AbortSignal | undefined): Promise<JsonObject> {
  const deadline = Date.now() + timeoutMs;
  const payload: JsonObject = { requestId: uuidv7(), args, timeoutMs };
  const data = encodeMessage(envelope(TYPES[operation], name, payload), serializer);
  let taken = false;
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    const left = deadline - Date.now();
    if (left <= 0) throw taken ? new ControlTimeoutError(name, timeoutMs) : new AgentUnreachableError(name, timeoutMs);
    let reply: Uint8Array;
    try {
      reply = (await nc.request(controlSubject(name), data, { timeout: Math.max(1, Math.min(left, ATTEMPT_MS)) })).data;
    } catch (error) {
      const kind = kindOf(error);
      if (kind === "other") throw new TransportUnavailableError(`the control request for '${name}' could not be sent: ${(error as Error).message}`, { cause: error });
      if (kind === "timeout") {
        taken = true; // a subscriber took it (else the server would have said "no responders"): ask again for the recorded outcome
        continue;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(RETRY_MS, Math.max(0, deadline - Date.now()))));
      continue;
    }
    const result = decodeMessage(reply).payload;
    if (result.ok === true) return typeof result.answer === "object" && result.answer !== null && !Array.isArray(result.answer) ? result.answer : {};
    throw new RemoteControlError(name, typeof result.code === "string" ? result.code : "HANDLER_FAILED", typeof result.message === "string" ? result.message : "refused");
  }
}
