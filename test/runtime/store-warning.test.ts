import { describe, expect, it } from "vitest";
import { AgentProcess, InMemoryStateStore, Runtime, type Logger, type Message } from "../../src/index.js";

class Idle extends AgentProcess {
  override async handle(_message: Message): Promise<void> {}
}

function recording(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const ignore = (): void => undefined;
  return { warnings, logger: { debug: ignore, info: ignore, warn: (message: string) => void warnings.push(message), error: ignore } };
}

describe("the warning that the state store is not durable", () => {
  it("is given when the runtime hosts agents on a store that is not durable", () => {
    const { logger, warnings } = recording();
    new Runtime({ root: [new Idle("worker")], logger });
    expect(warnings.filter((w) => w.includes("not durable"))).toHaveLength(1);
  });

  it("is not given for a runtime that hosts no agents (an approver-only process has no checkpoints to lose)", () => {
    const { logger, warnings } = recording();
    new Runtime({ root: [], logger });
    new Runtime({ root: [], store: new InMemoryStateStore(), logger });
    expect(warnings).toEqual([]);
  });
});
