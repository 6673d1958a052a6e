import type { JsonObject } from "../message/json.js";

/**
 * Where a signed audit chain stood when a receipt was recorded: the row's
 * `seq` and `hash`. A hash chain alone cannot show that rows were cut off its
 * end; the state store keeps the anchor of an agent's last pause or
 * settlement beside its state, so a log that ends before it is detected
 * (`verifySuspension(log, agent, { key, store })` → `failed`, `truncated`).
 *
 * `JsonlAuditSink.emit` and `PostgresAuditSink.emit` resolve with the anchor
 * of the row they wrote.
 */
export interface AuditAnchor {
  /** The row's position in the chain, from 0. */
  readonly seq: number;
  /** The row's hash (64 lower-case hex digits). */
  readonly hash: string;
}

/** The key under which the runtime keeps an agent's audit anchor inside its stored state (runtime-owned, like the suspension marker). */
export const AUDIT_ANCHOR_KEY = "_civitas.audit";

const HEX64 = /^[0-9a-f]{64}$/;

/** `value` as an anchor when it is one (what a sink's `emit` resolved with), else `undefined`. @internal */
export function anchorOf(value: unknown): AuditAnchor | undefined {
  const v = value as { seq?: unknown; hash?: unknown } | null | undefined;
  if (typeof v !== "object" || v === null) return undefined;
  if (typeof v.seq !== "number" || !Number.isSafeInteger(v.seq) || v.seq < 0 || typeof v.hash !== "string" || !HEX64.test(v.hash)) return undefined;
  return { seq: v.seq, hash: v.hash };
}

/** The anchor stored in an agent's `state`, or `undefined` (none, or not well formed). @internal */
export function readAnchor(state: JsonObject | undefined): AuditAnchor | undefined {
  return state === undefined ? undefined : anchorOf(state[AUDIT_ANCHOR_KEY]);
}

/**
 * `state` to persist with `anchor` (the newest this process's sink reported
 * for the agent) recorded under {@link AUDIT_ANCHOR_KEY}; `state` itself
 * when there is none. The one helper every write of a pause or a settlement
 * goes through (the runner's `persist`).
 * @internal
 */
export function anchoredState(state: JsonObject, anchor: AuditAnchor | undefined): JsonObject {
  if (anchor === undefined) return state;
  return { ...state, [AUDIT_ANCHOR_KEY]: { seq: anchor.seq, hash: anchor.hash } };
}
