import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  ErrorAction,
  isLegalTransition,
  ProcessStatus,
  Runtime,
  silentLogger,
  Supervisor,
  type Message,
} from "../../src/index.js";

type Fate = "ok" | "skip" | "retry" | "escalate" | "stop";

const MAX_RETRIES = 2;

/** An agent whose messages say how they fail; it records every call to handle. */
class Scripted extends AgentProcess {
  readonly calls: Array<{ id: number; attempt: number; incarnation: number }> = [];
  inFlight = 0;
  overlapped = false;

  override async handle(message: Message): Promise<void> {
    this.inFlight++;
    if (this.inFlight > 1) this.overlapped = true;
    this.calls.push({ id: message.payload.id as number, attempt: message.attempt, incarnation: this.incarnation });
    await Promise.resolve();
    this.inFlight--;
    if (message.payload.fate !== "ok") throw new Error(String(message.payload.fate));
  }

  override async onError(error: unknown): Promise<ErrorAction> {
    const fate = (error as Error).message as Fate;
    return fate === "skip" ? ErrorAction.SKIP : fate === "retry" ? ErrorAction.RETRY : fate === "stop" ? ErrorAction.STOP : ErrorAction.ESCALATE;
  }
}

async function quiet(agent: Scripted, runtime: Runtime): Promise<void> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const settled = (): boolean =>
      agent.status === ProcessStatus.STOPPED || (agent.status === ProcessStatus.RUNNING && agent.mailbox.size === 0 && agent.inFlight === 0);
    if (settled()) {
      await new Promise((r) => setTimeout(r, 2));
      if (settled()) return;
    }
    if (Date.now() > deadline) throw new Error(`did not settle: ${agent.status}, ${agent.mailbox.size} queued (${runtime.name})`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

describe("agent message loop (property)", () => {
  it("handles every message per its fate, in order, one at a time, through legal transitions only", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.constantFrom<Fate>("ok", "ok", "ok", "skip", "retry", "escalate", "stop"), { minLength: 1, maxLength: 6 }), {
          minLength: 1,
          maxLength: 6,
        }),
        async (batches) => {
          const agent = new Scripted("scripted", { maxRetries: MAX_RETRIES });
          const runtime = new Runtime({
            root: new Supervisor("root", { children: [agent], maxRestarts: 1000, backoffBaseMs: 0 }),
            logger: silentLogger,
          });
          const transitions: Array<[ProcessStatus, ProcessStatus]> = [];
          runtime.on("agent.status", (_name, from, to) => transitions.push([from, to]));
          await runtime.start();
          let id = 0;
          try {
            for (const batch of batches) {
              if (agent.status === ProcessStatus.STOPPED) break;
              // a whole batch is enqueued before the agent gets to run: the loop sees a backlog
              await Promise.all(
                batch.map((fate) => {
                  return runtime.send("scripted", { id: id++, fate });
                }),
              );
              await quiet(agent, runtime);
            }
          } finally {
            await runtime.stop();
          }

          expect(agent.overlapped).toBe(false);
          for (const [from, to] of transitions) expect(isLegalTransition(from, to), `${from} -> ${to}`).toBe(true);

          // the reference model replays the batches against a FIFO queue
          const model = replay(batches);
          expect(agent.calls.map((c) => `${c.id}@${c.attempt}`)).toEqual(model.calls);
          expect(agent.incarnation).toBe(1 + model.crashes);
          expect(agent.status).toBe(ProcessStatus.STOPPED);
        },
      ),
      { numRuns: 60 },
    );
  });
});

/**
 * What the agent must do: take messages in FIFO order; RETRY puts the message
 * back at the end with attempt + 1 until maxRetries, then crashes; ESCALATE
 * crashes; a crash restarts the agent with its mailbox intact; STOP ends it.
 */
function replay(batches: Fate[][]): { calls: string[]; crashes: number } {
  const queue: Array<{ id: number; fate: Fate; attempt: number }> = [];
  const calls: string[] = [];
  let crashes = 0;
  let id = 0;
  let stopped = false;
  for (const batch of batches) {
    if (stopped) break;
    for (const fate of batch) queue.push({ id: id++, fate, attempt: 0 });
    while (!stopped && queue.length > 0) {
      const m = queue.shift()!;
      calls.push(`${m.id}@${m.attempt}`);
      if (m.fate === "retry") {
        if (m.attempt < MAX_RETRIES) queue.push({ ...m, attempt: m.attempt + 1 });
        else crashes++;
      } else if (m.fate === "escalate") crashes++;
      else if (m.fate === "stop") stopped = true;
    }
  }
  return { calls, crashes };
}
