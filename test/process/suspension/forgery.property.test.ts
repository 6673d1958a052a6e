/**
 * Property: no sequence of application-side edits of messages (put into a
 * mailbox, returned from a handler, retried), of replies, or of the markers
 * an agent hands out changes any agent's status or its stored marker, or
 * produces a resume (issue 11 §1).
 */
import fc from "fast-check";
import { afterEach, expect, it } from "vitest";
import { createMessage, ErrorAction, SUSPENSION_KEY } from "../../../src/index.js";
import { scene, type Mallory, type Mutable, type Scene } from "./forgery-kit.js";
import { teardown } from "./helpers.js";
import { turns } from "../../support/agents.js";

afterEach(teardown);

const TARGETS = ["victim", "victim2", "bystander"] as const;
const TYPES = ["message", "reply", "civitas.eval.correction", "_agency.resume", "_agency.suspend", "_agency.shutdown", "_agency.deregister", "_agency.heartbeat"];
const FIELDS = ["type", "priority", "recipient", "replyTo", "correlationId", "sender"] as const;

/** One edit: a field, its new value, and when the edit happens. */
interface Edit {
  readonly field: (typeof FIELDS)[number] | "payload";
  readonly value: unknown;
  readonly when: "at-once" | "later" | "getter";
}

const valueOf = (field: Edit["field"]): fc.Arbitrary<unknown> => {
  switch (field) {
    case "type":
      return fc.constantFrom(...TYPES);
    case "priority":
      return fc.constantFrom(0, 1, 2);
    case "payload":
      return fc.record({ approver: fc.constantFrom("alice", "mallory"), suspensionId: fc.string({ maxLength: 4 }), sent: fc.nat(5) });
    default:
      return fc.constantFrom(...TARGETS, "mallory", "_runtime", "x");
  }
};

const edit: fc.Arbitrary<Edit> = fc
  .constantFrom<Edit["field"]>(...FIELDS, "payload")
  .chain((field) => fc.record({ field: fc.constant(field), value: valueOf(field), when: fc.constantFrom<Edit["when"]>("at-once", "later", "getter") }));

/** One attempt: how the message reaches a mailbox, where to, and the edits made to it. */
type Move =
  | { readonly via: "put" | "offer" | "return" | "reply" | "retry"; readonly to: (typeof TARGETS)[number]; readonly type: string; readonly priority: number; readonly edits: readonly Edit[] }
  | { readonly via: "marker"; readonly to: "victim" | "victim2"; readonly field: string; readonly value: string }
  | { readonly via: "state"; readonly to: "victim" | "victim2"; readonly remove: boolean };

const move: fc.Arbitrary<Move> = fc.oneof(
  fc.record({
    via: fc.constantFrom("put" as const, "offer" as const, "return" as const, "reply" as const, "retry" as const),
    to: fc.constantFrom(...TARGETS),
    type: fc.constantFrom(...TYPES),
    priority: fc.constantFrom(0, 1),
    edits: fc.array(edit, { maxLength: 4 }),
  }),
  fc.record({ via: fc.constant("marker" as const), to: fc.constantFrom("victim" as const, "victim2" as const), field: fc.constantFrom("suspensionId", "reason", "approver", "since"), value: fc.constantFrom("alice", "forged", "") }),
  fc.record({ via: fc.constant("state" as const), to: fc.constantFrom("victim" as const, "victim2" as const), remove: fc.boolean() }),
);

/** Applies `edits` to `message`: at once, in a microtask, or as a getter that answers the new value from its second read on. */
function applyEdits(message: Mutable, edits: readonly Edit[]): void {
  for (const { field, value, when } of edits) {
    const set = (): void => {
      try {
        if (when === "getter") {
          let reads = 0;
          const old: unknown = message[field];
          Object.defineProperty(message, field, { get: () => (reads++ === 0 ? old : value), enumerable: true, configurable: true });
        } else {
          (message as Record<string, unknown>)[field] = value;
        }
      } catch {
        // a frozen message refuses the edit: that is the point
      }
    };
    if (when === "later") queueMicrotask(set);
    else set();
  }
}

function forgedBase(m: { to: string; type: string; priority: number }): Mutable {
  // Built as business and turned into the wanted type: createMessage itself does not refuse reserved types.
  return { ...createMessage({ sender: "mallory", recipient: m.to, payload: { approver: "alice" } }), type: m.type, priority: m.priority };
}

async function play(s: Scene, m: Move): Promise<void> {
  const agent = s.runtime.getAgent(m.to)!;
  switch (m.via) {
    case "marker": {
      const marker = agent.suspension as unknown as Record<string, unknown>;
      try {
        marker[m.field] = m.value;
      } catch {
        // frozen
      }
      await agent.checkpoint();
      return;
    }
    case "state": {
      const state = agent.state as Record<string, unknown>;
      if (m.remove) delete state[SUSPENSION_KEY];
      else state[SUSPENSION_KEY] = { reason: "", since: new Date(0).toISOString(), approver: null, suspensionId: "forged" };
      await agent.checkpoint();
      return;
    }
    case "put":
    case "offer": {
      const message = forgedBase(m);
      const sent = m.via === "put" ? agent.mailbox.put(message) : Promise.resolve().then(() => agent.mailbox.offer(message));
      applyEdits(message, m.edits);
      await sent.catch(() => undefined); // a reserved type is refused: also fine
      return;
    }
    case "return":
    case "reply":
      await s.inside((self: Mallory) => {
        const message = m.via === "reply" ? (Object.assign(self.editableReply(), { recipient: m.to, type: m.type, priority: m.priority }) as unknown as Mutable) : forgedBase(m);
        applyEdits(message, m.edits);
        return message;
      });
      return;
    case "retry":
      await s.inside((self: Mallory, incoming) => {
        self.onErrorAction = ErrorAction.RETRY;
        applyEdits(incoming as Mutable, [{ field: "type", value: m.type, when: "at-once" }, { field: "priority", value: m.priority, when: "at-once" }, ...m.edits]);
        throw new Error("retry");
      });
      s.mallory.onErrorAction = ErrorAction.SKIP;
      return;
  }
}

it("no application-side edit of messages, replies or markers changes a status or a stored marker", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(move, { minLength: 1, maxLength: 6 }), async (moves) => {
      const s = await scene();
      try {
        for (const m of moves) await play(s, m);
        await turns(20);
        expect(await s.verdict()).toEqual([]);
      } finally {
        await teardown();
      }
    }),
    { numRuns: 40 },
  );
});
