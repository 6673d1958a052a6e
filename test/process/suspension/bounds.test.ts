// Approvers and reasons are at most 1,024 characters (Unicode code points),
// refused with a coded error before anything is sent (issue 11, section 5).
import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, CivitasError, InvalidApproverError, InvalidArgumentError, ProcessStatus, type Message } from "../../../src/index.js";
import { Pausable, rig, suspendedRig, teardown } from "./helpers.js";
import { rejectsWithCode } from "../../support/outcome.js";
import { turns, waitUntil } from "../../support/agents.js";

afterEach(teardown);

const LIMIT = 1024;
/** `n` characters of which each is two UTF-16 units: its `length` is 2n. */
const emoji = (n: number): string => "😀".repeat(n);

describe("approvers of at most 1,024 characters", () => {
  it.each([
    ["1,025 ASCII characters", "a".repeat(LIMIT + 1), LIMIT + 1],
    ["1,025 characters outside the BMP", emoji(LIMIT + 1), LIMIT + 1],
    ["a megabyte", "b".repeat(1024 * 1024), 1024 * 1024],
  ])("refuses %s with INVALID_APPROVER before anything is sent, without echoing it", async (_what, approver, characters) => {
    const { agent, runtime, audit, store } = await suspendedRig({ reason: "large payment" });
    const eventsBefore = audit.events.length;
    const setsBefore = store.sets.length;
    const error = await rejectsWithCode(runtime.resume("a", approver), "INVALID_APPROVER");
    expect(error).toBeInstanceOf(InvalidApproverError);
    expect(error).toBeInstanceOf(CivitasError);
    expect(error.name).toBe("InvalidApproverError");
    expect(error.message).toContain(`${characters} characters`);
    expect(error.message).toContain("1024");
    expect(error.message.length).toBeLessThan(400);
    await turns(10);
    expect(agent.mailbox.prioritySize).toBe(0);
    expect(audit.events.length).toBe(eventsBefore);
    expect(store.sets.length).toBe(setsBefore);
    expect(agent.status).toBe(ProcessStatus.SUSPENDED);
    expect(agent.resumes).toEqual([]);
  });

  it.each([
    ["1,024 ASCII characters", "a".repeat(LIMIT)],
    ["1,024 characters outside the BMP (2,048 UTF-16 units)", emoji(LIMIT)],
  ])("accepts %s, and the receipt names the approver in full", async (_what, approver) => {
    const { agent, runtime, audit } = await suspendedRig({ reason: "large payment" });
    await runtime.resume("a", approver);
    expect(agent.status).toBe(ProcessStatus.RUNNING);
    expect(agent.resumes).toEqual([approver]);
    expect(audit.events.find((e) => e.event === "agent.resume")?.details.approver).toBe(approver);
  });
});

describe("reasons of at most 1,024 characters", () => {
  it("runtime.suspend refuses a longer reason with INVALID_ARGUMENT before anything is sent", async () => {
    const agent = new Pausable("a");
    const { runtime, audit, store } = rig([agent]);
    await runtime.start();
    const setsBefore = store.sets.length;
    const eventsBefore = audit.events.length;
    for (const reason of ["r".repeat(LIMIT + 1), emoji(LIMIT + 1)]) {
      const error = await rejectsWithCode(runtime.suspend("a", reason), "INVALID_ARGUMENT");
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error.name).toBe("InvalidArgumentError");
      expect((error as InvalidArgumentError).argument).toBe("reason");
      expect(error.message).toContain(`suspend('a')`);
      expect(error.message).toContain(`${LIMIT + 1}`);
    }
    await turns(10);
    expect(agent.mailbox.prioritySize).toBe(0);
    expect(agent.status).toBe(ProcessStatus.RUNNING);
    expect(store.sets.length).toBe(setsBefore);
    expect(audit.events.length).toBe(eventsBefore);
  });

  it("runtime.suspend accepts a reason of 1,024 characters, kept in full in the marker", async () => {
    const reason = emoji(LIMIT);
    const { agent } = await suspendedRig({ reason });
    expect(agent.suspension?.reason).toBe(reason);
  });

  it("this.suspend(reason) inside handle() throws INVALID_ARGUMENT for a longer reason and the agent stays RUNNING", async () => {
    const caught: unknown[] = [];
    class Asker extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        try {
          this.suspend(String(message.payload.reason));
        } catch (error) {
          caught.push(error);
        }
        return this.reply({});
      }
    }
    const agent = new Asker("a");
    const { runtime } = rig([agent]);
    await runtime.start();
    await runtime.ask("a", { reason: "r".repeat(LIMIT + 1) });
    expect(caught).toHaveLength(1);
    expect(caught[0]).toBeInstanceOf(InvalidArgumentError);
    expect((caught[0] as InvalidArgumentError).code).toBe("INVALID_ARGUMENT");
    expect(agent.status).toBe(ProcessStatus.RUNNING);
    await runtime.ask("a", { reason: "r".repeat(LIMIT) });
    await waitUntil(() => agent.status === ProcessStatus.SUSPENDED, "the 1,024-character pause");
    expect(agent.suspension?.reason).toBe("r".repeat(LIMIT));
  });
});
