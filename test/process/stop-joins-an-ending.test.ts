/**
 * A stop asked of an agent that is already ending (a stop of its own, a
 * crash) joins that end: it resolves once the agent's `onStop` has returned,
 * also when it is asked at the very instant the end begins (from an
 * `agent.status` listener).
 *
 * Found by the adversarial review of the lifecycle phases (issue 12): the
 * end's promise must exist from the first instant of the `stopping` phase.
 */
import { describe, expect, it } from "vitest";
import { AgentProcess, ErrorAction, ProcessStatus } from "../../src/index.js";
import { runtimes, sleep, whenStarted, until } from "../support/runtimes.js";

const runtime = runtimes();

/** Fails every message with `action`; its `onStop` takes a while. */
class Ending extends AgentProcess {
  stopReturned = false;
  constructor(
    name: string,
    private readonly action: ErrorAction,
  ) {
    super(name);
  }
  override async handle(): Promise<void> {
    throw new Error("this message ends the agent");
  }
  override async onError(): Promise<ErrorAction> {
    return this.action;
  }
  override async onStop(): Promise<void> {
    await sleep(30);
    this.stopReturned = true;
  }
}

describe("a stop asked as the agent's own end begins joins that end", () => {
  for (const [action, status] of [
    [ErrorAction.STOP, ProcessStatus.STOPPING],
    [ErrorAction.ESCALATE, ProcessStatus.CRASHED],
  ] as const) {
    it(`runtime.stop() from an agent.status listener as the agent goes ${status} (onError: ${action}) resolves after its onStop`, async () => {
      const agent = new Ending("a", action);
      const rt = await whenStarted(runtime(agent));
      let stopping: Promise<void> | undefined;
      rt.on("agent.status", (_name, _from, to) => {
        if (to === status) stopping = rt.stop();
      });
      await rt.send("a", {});
      await until(() => stopping !== undefined, "the agent's own end");
      await stopping;
      expect(agent.stopReturned).toBe(true);
      expect(agent.status).toBe(action === ErrorAction.STOP ? ProcessStatus.STOPPED : ProcessStatus.CRASHED);
    });
  }
});
