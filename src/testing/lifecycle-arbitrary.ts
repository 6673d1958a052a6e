import type { Arbitrary, SizeForArbitrary } from "fast-check";
import { fc } from "./fast-check.js";
import type { ApproverKind, LifecycleCommand, LifecycleCommandKind } from "./lifecycle-command.js";

/** A command before ids are numbered. */
type Draft =
  | { readonly kind: "send" | "ask" | "crash" | "siblingCrash" | "restart" | "shutdown" | "elapse" }
  | { readonly kind: "selfSuspend"; readonly reason: string }
  | { readonly kind: "suspend"; readonly reason: string; readonly deadline: boolean }
  | { readonly kind: "resume" | "deny"; readonly approver: ApproverKind; readonly bySuspensionId: boolean };

/** Options of {@link lifecycleCommandsArbitrary}. */
export interface LifecycleCommandsOptions {
  /** Fewest commands (not counting a final `shutdown`). @defaultValue 0 */
  minLength?: number;
  /** Most commands (not counting a final `shutdown`). @defaultValue 40 */
  maxLength?: number;
  /**
   * How often each kind is drawn, relative to the others; 0 leaves a kind out.
   * @defaultValue send 4, ask 2, selfSuspend 2, crash 1, suspend 2, resume 5, deny 2, elapse 1, siblingCrash 1, restart 1
   */
  weights?: Partial<Record<Exclude<LifecycleCommandKind, "shutdown">, number>>;
  /** How often each approver kind is drawn in a `resume` or `deny`. @defaultValue valid 5, empty 1, whitespace 1, stale 2 */
  approverWeights?: Partial<Record<ApproverKind, number>>;
  /**
   * Where `shutdown` may appear: `"never"`, `"last"` (half of the scenarios
   * end with one) or `"anywhere"` (any command may be one; the rest of the
   * scenario is then ignored). @defaultValue "last"
   */
  shutdown?: "never" | "last" | "anywhere";
  /** The reasons given to `suspend` and `selfSuspend`. @defaultValue short strings, `""` included */
  reason?: Arbitrary<string>;
  /**
   * fast-check's size for the list: how far towards `maxLength` lengths go.
   * `"max"` draws lengths across the whole range; fast-check's own default
   * (`"small"`) would rarely exceed 10 commands. @defaultValue "max"
   */
  size?: SizeForArbitrary;
}

const DEFAULT_WEIGHTS: Readonly<Record<Exclude<LifecycleCommandKind, "shutdown">, number>> = {
  send: 4,
  ask: 2,
  selfSuspend: 2,
  crash: 1,
  suspend: 2,
  resume: 5,
  deny: 2,
  elapse: 1,
  siblingCrash: 1,
  restart: 1,
};

const DEFAULT_APPROVER_WEIGHTS: Readonly<Record<ApproverKind, number>> = { valid: 5, empty: 1, whitespace: 1, stale: 2 };

/**
 * Scenarios for one agent under a ONE_FOR_ALL supervisor: interleavings of
 * business messages, external (with or without a deadline) and self
 * suspensions, resumes and denies with valid, empty, blank and stale
 * approvals, time passing deadlines, crashes, sibling crashes, process
 * restarts and a shutdown. Message ids are numbered 0, 1, 2 … in command
 * order; shrinking keeps them so. Feed the result to {@link SuspensionModel}
 * and to {@link runLifecycleCommands} and compare.
 *
 * @throws {@link RangeError} when every weight is 0 or a length is negative
 * @example
 * ```ts
 * await fc.assert(fc.asyncProperty(lifecycleCommandsArbitrary({ maxLength: 30 }), async (commands) => {
 *   const observed = await runLifecycleCommands(commands);
 *   expect(observed.outcome).toEqual(SuspensionModel.run(commands));
 * }), { numRuns: 50 });
 * ```
 */
export function lifecycleCommandsArbitrary(options: LifecycleCommandsOptions = {}): Arbitrary<LifecycleCommand[]> {
  const minLength = options.minLength ?? 0;
  const maxLength = options.maxLength ?? 40;
  if (!Number.isInteger(minLength) || !Number.isInteger(maxLength) || minLength < 0 || maxLength < minLength) {
    throw new RangeError(`lifecycleCommandsArbitrary: need integers 0 <= minLength <= maxLength, got ${minLength} and ${maxLength}`);
  }
  const reason = options.reason ?? fc.oneof(fc.constantFrom("", "review", "needs approval"), fc.string({ maxLength: 10 }));
  const weights = { ...DEFAULT_WEIGHTS, ...options.weights };
  const approverWeights = { ...DEFAULT_APPROVER_WEIGHTS, ...options.approverWeights };
  const approver = weighted(
    (Object.keys(approverWeights) as ApproverKind[]).map((kind) => [approverWeights[kind], fc.constant(kind)] as const),
    "approverWeights",
  );
  const byKind: Record<Exclude<LifecycleCommandKind, "shutdown">, Arbitrary<Draft>> = {
    send: fc.constant({ kind: "send" }),
    ask: fc.constant({ kind: "ask" }),
    crash: fc.constant({ kind: "crash" }),
    siblingCrash: fc.constant({ kind: "siblingCrash" }),
    restart: fc.constant({ kind: "restart" }),
    elapse: fc.constant({ kind: "elapse" }),
    selfSuspend: reason.map((r) => ({ kind: "selfSuspend", reason: r })),
    suspend: fc.record({ reason, deadline: fc.boolean() }).map((r) => ({ kind: "suspend", ...r })),
    resume: fc.record({ approver, bySuspensionId: fc.boolean() }).map((r) => ({ kind: "resume", ...r })),
    deny: fc.record({ approver, bySuspensionId: fc.boolean() }).map((r) => ({ kind: "deny", ...r })),
  };
  const entries = (Object.keys(byKind) as Array<keyof typeof byKind>).map((kind) => [weights[kind], byKind[kind]] as const);
  const shutdown = options.shutdown ?? "last";
  if (shutdown === "anywhere") entries.push([Math.max(1, Math.round(total(entries) / 20)), fc.constant<Draft>({ kind: "shutdown" })]);
  const command = weighted(entries, "weights");
  const body = fc.array(command, { minLength, maxLength, size: options.size ?? "max" });
  const end: Draft = { kind: "shutdown" };
  const drafts = shutdown === "last" ? fc.tuple(body, fc.boolean()).map(([list, ends]) => (ends ? [...list, end] : list)) : body;
  return drafts.map(number);
}

/** Numbers the message commands 0, 1, 2 … in order. */
function number(drafts: readonly Draft[]): LifecycleCommand[] {
  let next = 0;
  return drafts.map((draft): LifecycleCommand => {
    switch (draft.kind) {
      case "send":
      case "ask":
      case "crash":
        return { kind: draft.kind, id: next++ };
      case "selfSuspend":
        return { kind: "selfSuspend", id: next++, reason: draft.reason };
      case "suspend":
        return draft.deadline ? { kind: "suspend", reason: draft.reason, deadline: true } : { kind: "suspend", reason: draft.reason };
      case "resume":
      case "deny":
        return draft.approver === "valid" ? { kind: draft.kind, approver: "valid", bySuspensionId: draft.bySuspensionId } : { kind: draft.kind, approver: draft.approver };
      default:
        return { kind: draft.kind };
    }
  });
}

function total(entries: ReadonlyArray<readonly [number, unknown]>): number {
  return entries.reduce((sum, [weight]) => sum + weight, 0);
}

function weighted<T>(entries: ReadonlyArray<readonly [number, Arbitrary<T>]>, what: string): Arbitrary<T> {
  for (const [weight] of entries) {
    if (!Number.isInteger(weight) || weight < 0) throw new RangeError(`lifecycleCommandsArbitrary: ${what} must be non-negative integers, got ${weight}`);
  }
  const used = entries.filter(([weight]) => weight > 0).map(([weight, arbitrary]) => ({ weight, arbitrary }));
  if (used.length === 0) throw new RangeError(`lifecycleCommandsArbitrary: every one of ${what} is 0; give at least one kind a positive weight`);
  return fc.oneof(...used);
}
