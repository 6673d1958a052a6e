/**
 * An agent cannot lift the pause it asked for, nor answer a runtime control
 * request in the agent's stead (issue 11 §1). Mallory calls `this.suspend()`
 * in its handler and then tries to smuggle a resume into its own mailbox, so
 * that its loop, once SUSPENDED, would take it from the priority lane; or it
 * takes a runtime request out of a mailbox and returns a reply naming it.
 */
import { afterAll, afterEach, expect, it } from "vitest";
import { createMessage, ErrorAction, ProcessStatus, type Message } from "../../../src/index.js";
import { expectNoEffect, expectOwnPauseKept, scene, tally, type Mutable, type Scene } from "./forgery-kit.js";
import { teardown } from "./helpers.js";
import { rejectsWithCode } from "../../support/outcome.js";

afterEach(teardown);
afterAll(() => {
  console.info(`forgery attempts (own pause, acknowledgements): ${tally.tried} tried, ${tally.succeeded.length} succeeded${tally.succeeded.length > 0 ? `: ${tally.succeeded.join("; ")}` : ""}`);
});

/** `type` answers "message" on its first read and a resume on every read after it. */
function flipToResume(message: Record<string, unknown>): Message {
  let reads = 0;
  Object.defineProperty(message, "type", { get: () => (reads++ === 0 ? "message" : "_agency.resume"), enumerable: true, configurable: true });
  return message as unknown as Message;
}

const selfResumes: [string, (s: Scene) => Promise<void>][] = [
  [
    "returns this.reply() to itself, on the priority lane, with a type getter that turns into a resume",
    (s) =>
      s.inside((self) => {
        self.suspend("asked for");
        return flipToResume(Object.assign(self.editableReply(), { recipient: "mallory", priority: 1 }));
      }),
  ],
  [
    "edits its own message into a resume, fails it and asks for a RETRY",
    (s) =>
      s.inside((self, message) => {
        self.suspend("asked for");
        self.onErrorAction = ErrorAction.RETRY;
        Object.assign(message as Mutable, { type: "_agency.resume", priority: 1, payload: { approver: "alice" } });
        throw new Error("retry me");
      }),
  ],
  [
    "returns a message to itself and edits it after the return",
    (s) =>
      s.inside((self) => {
        self.suspend("asked for");
        const m = { ...createMessage({ sender: "mallory", recipient: "mallory", payload: { approver: "alice" } }), priority: 1 } as Mutable;
        queueMicrotask(() => (m.type = "_agency.resume"));
        return m;
      }),
  ],
  [
    "puts into its own mailbox and edits the message at once",
    (s) =>
      s.inside(async (self) => {
        self.suspend("asked for");
        const m = { ...createMessage({ sender: "mallory", recipient: "mallory", payload: { approver: "alice" } }), priority: 1 } as Mutable;
        const put = self.mailbox.put(m);
        m.type = "_agency.resume";
        await put;
      }),
  ],
];

it.each(selfResumes)("Mallory, paused on its own request, %s: it stays paused", async (name, attack) => {
  const s = await scene();
  await attack(s);
  await expectOwnPauseKept(s, `own pause: ${name}`);
  expect(s.mallory.resumes).toEqual([]);
});

it("a reply naming a runtime.suspend request does not make runtime.suspend resolve", async () => {
  const s = await scene();
  let suspending: Promise<unknown> | undefined;
  await s.inside(async (self) => {
    suspending = s.runtime.suspend("mallory", "stop", { timeoutMs: 1_000 });
    suspending.catch(() => undefined);
    const request = self.mailbox.pollPriority();
    expect(request?.type).toBe("_agency.suspend");
    return Object.assign(self.editableReply(), { correlationId: request!.correlationId, recipient: "_runtime" }) as unknown as Message;
  });
  let resolvedWhile: ProcessStatus | undefined;
  void suspending!.then(() => (resolvedWhile = s.mallory.status), () => undefined);
  await s.clock.advance(1_000);
  await rejectsWithCode(suspending!, "ASK_TIMEOUT");
  tally.tried++;
  if (resolvedWhile !== undefined) tally.succeeded.push("forged acknowledgement of runtime.suspend");
  expect(resolvedWhile).toBeUndefined();
});

it("a reply naming another agent's runtime.resume request does not make runtime.resume resolve", async () => {
  const s = await scene({ authorizeResume: () => false });
  let resuming: Promise<void> | undefined;
  await s.inside((self) => {
    resuming = s.runtime.resume("victim", "alice", { timeoutMs: 1_000 });
    resuming.catch(() => undefined);
    const request = s.victim.mailbox.pollPriority();
    return Object.assign(self.editableReply(), { correlationId: request!.correlationId, recipient: "_runtime" }) as unknown as Message;
  });
  let resolved = false;
  void resuming!.then(() => (resolved = true), () => undefined);
  await expectNoEffect(s, "forged acknowledgement of runtime.resume");
  await s.clock.advance(1_000);
  await rejectsWithCode(resuming!, "ASK_TIMEOUT");
  expect(resolved).toBe(false);
});

it("onStart's sends of reserved types are refused", async () => {
  const codes: unknown[] = [];
  const s = await scene({
    startPlan: async (self) => {
      await self.send("victim", { approver: "alice" }, { type: "_agency.resume" }).catch((error: { code?: string }) => codes.push(error.code));
      await self.broadcast("victim*", { approver: "alice" }, { type: "_agency.resume" }).catch((error: { code?: string }) => codes.push(error.code));
      await self.send("bystander", {}, { type: "_agency.shutdown" }).catch((error: { code?: string }) => codes.push(error.code));
    },
  });
  expect(codes).toEqual(["RESERVED_MESSAGE_TYPE", "RESERVED_MESSAGE_TYPE", "RESERVED_MESSAGE_TYPE"]);
  expect([s.victim.status, s.victim2.status, s.bystander.status]).toEqual([ProcessStatus.SUSPENDED, ProcessStatus.SUSPENDED, ProcessStatus.RUNNING]);
  await expectNoEffect(s, "onStart sends reserved types");
});
