import { History, type HistoryOperation } from "./history.js";

/** A sequential specification: what each operation does to the state, and what it returns. */
export interface SequentialModel<S> {
  /** The state before any operation. */
  init(): S;
  /** The state after `kind(input)` on `state`, and the output it returns; `undefined` for an operation the model does not know. */
  step(state: S, kind: string, input: unknown): { state: S; output: unknown } | undefined;
}

/** The outcome of {@link checkLinearizable}. */
export type LinearizabilityResult =
  | { readonly linearizable: true; readonly order: readonly HistoryOperation[] }
  | { readonly linearizable: false; readonly reason: string }
  | { readonly linearizable: "unknown"; readonly reason: string };

/** Options of {@link checkLinearizable}. */
export interface LinearizabilityOptions {
  /** The most search states to visit before answering `"unknown"`. @defaultValue 100_000 */
  readonly maxStates?: number;
}

const MAX_OPERATIONS = 64;

/**
 * Whether `history` is linearizable against `model` (Wing & Gong's search,
 * memoized on the set of operations placed and the model's state, as
 * Knossos and Porcupine do): is there one order of the operations, each
 * taking effect at a single point between its invocation and its
 * completion, in which every `ok` operation returns what the model says?
 * A `fail` operation took no effect; an `info` one may have taken effect
 * at any point after it began, or never. Bounded: at most 64 operations,
 * and `maxStates` search states; past either the answer is `"unknown"`.
 */
export function checkLinearizable<S>(history: History | readonly HistoryOperation[], model: SequentialModel<S>, options: LinearizabilityOptions = {}): LinearizabilityResult {
  const all: readonly HistoryOperation[] = history instanceof History ? history.operations : history;
  const operations = all.filter((op) => op.status !== "fail");
  if (operations.length > MAX_OPERATIONS) return { linearizable: "unknown", reason: `${operations.length} operations; the search takes at most ${MAX_OPERATIONS}` };
  const maxStates = options.maxStates ?? 100_000;
  const mustPlace = operations.reduce((mask, op, i) => (op.status === "ok" ? mask | (1n << BigInt(i)) : mask), 0n);
  const seen = new Set<string>();
  let visited = 0;
  let deepest: { placed: number; order: HistoryOperation[] } = { placed: -1, order: [] };
  const order: HistoryOperation[] = [];

  const search = (placed: bigint, state: S): boolean | "limit" => {
    if ((placed & mustPlace) === mustPlace) return true;
    const key = `${placed.toString(36)}|${JSON.stringify(state)}`;
    if (seen.has(key)) return false;
    if (++visited > maxStates) return "limit";
    seen.add(key);
    if (order.length > deepest.placed) deepest = { placed: order.length, order: [...order] };
    // An operation can go next only if it began before every unplaced ok operation ended.
    let horizon = Infinity;
    for (let i = 0; i < operations.length; i++) {
      const op = operations[i] as HistoryOperation;
      if ((placed & (1n << BigInt(i))) === 0n && op.status === "ok") horizon = Math.min(horizon, op.completedAt as number);
    }
    for (let i = 0; i < operations.length; i++) {
      const bit = 1n << BigInt(i);
      const op = operations[i] as HistoryOperation;
      if ((placed & bit) !== 0n || op.invokedAt > horizon) continue;
      const next = model.step(state, op.kind, op.input);
      if (next === undefined) continue;
      if (op.status === "ok" && !equalJson(next.output, op.output)) continue;
      order.push(op);
      const found = search(placed | bit, next.state);
      if (found !== false) return found;
      order.pop();
    }
    return false;
  };

  const found = search(0n, model.init());
  if (found === true) return { linearizable: true, order: [...order] };
  if (found === "limit") return { linearizable: "unknown", reason: `the search visited ${maxStates} states without an answer; raise maxStates or shorten the history` };
  const stuck = operations.filter((op) => op.status === "ok" && !deepest.order.includes(op)).map(describe);
  return {
    linearizable: false,
    reason: `no order of the ${operations.length} operations explains their outputs; the longest that does places ${deepest.placed} (${deepest.order.map(describe).join(", ") || "none"}), and none of ${stuck.join(", ")} can follow it`,
  };
}

function describe(op: HistoryOperation): string {
  const output = op.status === "ok" ? ` -> ${JSON.stringify(op.output)}` : op.status === "info" ? " -> ?" : "";
  return `${op.process}:${op.kind}(${JSON.stringify(op.input) ?? ""})${output}`;
}

/**
 * A read/write/compare-and-set register holding JSON: `read` returns the
 * value, `write(value)` returns nothing, `cas([expected, next])` returns
 * whether it swapped.
 */
export function registerModel(initial: unknown): SequentialModel<unknown> {
  return {
    init: () => initial,
    step(state, kind, input) {
      if (kind === "read") return { state, output: state };
      if (kind === "write") return { state: input, output: undefined };
      if (kind === "cas" && Array.isArray(input) && input.length === 2) {
        const [expected, next] = input as unknown[];
        const swapped = equalJson(state, expected);
        return { state: swapped ? next : state, output: swapped };
      }
      return undefined;
    },
  };
}

/** A map of string keys to JSON values: `get(key)` returns the value (`null` when absent), `put([key, value])` returns nothing. */
export function mapModel(): SequentialModel<Readonly<Record<string, unknown>>> {
  return {
    init: () => ({}),
    step(state, kind, input) {
      if (kind === "get" && typeof input === "string") return { state, output: state[input] ?? null };
      if (kind === "put" && Array.isArray(input) && input.length === 2) {
        const [key, value] = input as unknown[];
        if (typeof key === "string") return { state: { ...state, [key]: value }, output: undefined };
      }
      return undefined;
    },
  };
}

/** Whether two JSON values are equal (objects compared key by key, whatever the order of their keys). */
function equalJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const aKeys = Object.keys(a);
  const bRecord = b as Record<string, unknown>;
  return aKeys.length === Object.keys(b).length && aKeys.every((key) => key in bRecord && equalJson((a as Record<string, unknown>)[key], bRecord[key]));
}
