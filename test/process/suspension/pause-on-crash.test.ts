/**
 * A pause asked for by a handler that then crashes is kept, but none of the
 * handler's un-checkpointed state is written with it.
 *
 * Each test pins a defect found by the review of d33f573..HEAD (these tests
 * were in test/review/diff-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, ErrorAction, ProcessStatus, Supervisor, type Message } from "../../../src/index.js";
import { startedRig, teardown } from "./helpers.js";
import { turns, waitUntil } from "../../support/agents.js";

afterEach(teardown);

const S = ProcessStatus;

/** Deposits are checkpointed; a debit asks for approval, does half its work in memory, then fails. */
class Ledger extends AgentProcess<{ balance: number }> {
  override state = { balance: 100 };
  override async handle(message: Message): Promise<void> {
    if (message.payload.op === "deposit") {
      this.state.balance += 10;
      await this.checkpoint();
      return;
    }
    if (message.payload.op === "debit") {
      if (message.payload.suspend === true) this.suspend("approve debit");
      this.state.balance -= 50; // half-done, never checkpointed
      throw new Error("payment gateway down");
    }
  }
  override async onError(): Promise<ErrorAction> {
    return ErrorAction.ESCALATE;
  }
}

describe("a crash after this.suspend()", () => {
  // Without this.suspend() the same crash restarts on the checkpointed balance (110): only the pause asked for changes it.
  it("a crash after this.suspend() does not write the crashed handler's un-checkpointed state to the store", async () => {
    const agent = new Ledger("ledger");
    const r = await startedRig(new Supervisor("sup", { backoffBaseMs: 0, children: [agent] }));
    await r.runtime.send("ledger", { op: "deposit" });
    await r.runtime.send("ledger", { op: "debit", suspend: true });
    await waitUntil(() => agent.incarnation === 2 && agent.status !== S.INITIALIZING, "restarted");
    await turns(10);
    // SPEC 11.4: a restart restores the last checkpoint (balance 110), not what the failed handler left in memory
    expect((await r.store.get("ledger"))?.balance).toBe(110);
    expect(agent.state.balance).toBe(110);
  });
});
