/**
 * While an agent is SUSPENDED its priority lane takes control messages only:
 * business put there is not handled.
 *
 * Each test pins a defect found by the review of durable suspension (SPEC §5,
 * §11) (these tests were in test/review/suspension-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { createMessage, ProcessStatus } from "../../../src/index.js";
import { suspendedRig, teardown } from "./helpers.js";
import { turns } from "../../support/agents.js";

afterEach(teardown);

const S = ProcessStatus;

describe("the priority lane while SUSPENDED", () => {
  it("a business-typed message put on the priority lane through agent.mailbox.put is not handled while SUSPENDED", async () => {
    const { agent } = await suspendedRig();
    // A public path: the agent's mailbox and createMessage are both exported API.
    await agent.mailbox.put(createMessage({ sender: "x", recipient: "a", payload: { seq: 1 }, priority: 1 }));
    await turns(20);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.entered).toBe(0);
    expect(agent.handled).toEqual([]);
  });
});
