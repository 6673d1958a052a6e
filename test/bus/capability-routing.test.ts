/**
 * broadcast and sendCapable: who they reach, in which turn, when some matching
 * agents have stopped.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/loop-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import type { CivitasError } from "civitas-ts";
import { AgentProcess, ErrorAction, ProcessStatus, type Message } from "civitas-ts";
import { DynamicSupervisor } from "../../src/index.js";
import { eventually } from "../runtime/fixtures.js";
import { runtimes, whenStarted, supervisedRuntimes, until } from "../support/runtimes.js";
import { Sink, Doer, CodeReplier } from "../support/probe-agents.js";

const supervised = supervisedRuntimes();

describe("broadcast with a stopped match", () => {
  it("broadcast does not reject after having delivered to some matches when one match has stopped", async () => {
    class Quitter extends AgentProcess {
      override async handle(): Promise<void> {
        throw new Error("quit");
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.STOP;
      }
    }
    const quitter = new Quitter("w-quit");
    const live = new Sink("w-live");
    const doer = new Doer("doer");
    const rt = await whenStarted(supervised([quitter, live, doer]));
    await rt.send("w-quit", {});
    await until(() => quitter.status === ProcessStatus.STOPPED);
    doer.fn = async (self) => ({ count: await self.broadcast("w-*", { hello: true }) });
    const reply = await rt.ask("doer", {});
    await until(() => live.seen.length === 1);
    // it was delivered to w-live; the call must not report a failure for a broadcast that (partly) happened
    expect(reply.payload, JSON.stringify(reply.payload)).toMatchObject({ ok: true });
  });
});

describe("sendCapable takes turns", () => {
  it("a sendCapable refused for an empty type does not move the turn", async () => {
    const a = new Sink("a", { capabilities: ["cap"] });
    const b = new Sink("b", { capabilities: ["cap"] });
    const doer = new CodeReplier("doer");
    const rt = await whenStarted(supervised([a, b, doer]));
    doer.fn = async (self) => self.sendCapable("cap", { n: 1 }, { type: "" });
    expect((await rt.ask("doer", {})).payload.code).toBe("INVALID_ARGUMENT");
    doer.fn = async (self) => self.sendCapable("cap", { n: 2 });
    expect((await rt.ask("doer", {})).payload.ok).toBe(true);
    await eventually(() => a.seen.length + b.seen.length === 1);
    expect(a.seen.map((m) => m.payload.n)).toEqual([2]);
  });

  it("removing the agent whose turn just passed does not make the next one lose its turn", async () => {
    const dyn = new DynamicSupervisor("pool");
    const doer = new CodeReplier("doer");
    const rt = await whenStarted(supervised([doer, dyn]));
    const w1 = await dyn.spawn(Sink, "w1", { capabilities: ["cap"] });
    const w2 = await dyn.spawn(Sink, "w2", { capabilities: ["cap"] });
    const w3 = await dyn.spawn(Sink, "w3", { capabilities: ["cap"] });
    doer.fn = async (self) => self.sendCapable("cap", { n: 1 });
    await rt.ask("doer", {}); // w1's turn
    await dyn.despawn("w1");
    doer.fn = async (self) => self.sendCapable("cap", { n: 2 });
    await rt.ask("doer", {}); // w2's turn now (registration order)
    await eventually(() => w2.seen.length + w3.seen.length === 1);
    expect(w1.seen.map((m) => m.payload.n)).toEqual([1]);
    expect(w2.seen.map((m) => m.payload.n)).toEqual([2]);
  });

  it("agents that declare a capability again after all were removed take turns from the first", async () => {
    const dyn = new DynamicSupervisor("pool");
    const doer = new CodeReplier("doer");
    const rt = await whenStarted(supervised([doer, dyn]));
    await dyn.spawn(Sink, "old", { capabilities: ["cap"] });
    doer.fn = async (self) => self.sendCapable("cap", { n: 1 });
    await rt.ask("doer", {});
    await dyn.despawn("old");
    const x = await dyn.spawn(Sink, "x", { capabilities: ["cap"] });
    const y = await dyn.spawn(Sink, "y", { capabilities: ["cap"] });
    doer.fn = async (self) => self.sendCapable("cap", { n: 2 });
    await rt.ask("doer", {});
    await eventually(() => x.seen.length + y.seen.length === 1);
    expect(x.seen.map((m) => m.payload.n)).toEqual([2]);
  });
});

const runtime = runtimes({ stop: "full" });

// ---------------------------------------------------------------- capability routing
/** Handles messages until one says `quit`, then stops for good (ErrorAction.STOP). */
class Quitter extends AgentProcess {
  readonly handled: Message[] = [];
  override async handle(message: Message): Promise<void> {
    if (message.payload.quit === true) throw new Error("quit");
    this.handled.push(message);
  }
  override async onError(): Promise<ErrorAction> {
    return ErrorAction.STOP;
  }
}

describe("capability routing", () => {
  it("sendCapable does not route to a capable agent that has stopped for good while another one runs", async () => {
    const quitter = new Quitter("w1", { capabilities: ["work"] });
    const worker = new Quitter("w2", { capabilities: ["work"] });
    const outcomes: string[] = [];
    class Router extends AgentProcess {
      override async handle(): Promise<void> {
        for (let i = 0; i < 4; i++) {
          outcomes.push(await this.sendCapable("work", { i }).then(() => "sent", (e: CivitasError) => e.code));
        }
      }
    }
    const rt = await whenStarted(runtime([new Router("router"), quitter, worker]));
    await rt.send("w1", { quit: true });
    await eventually(() => quitter.status === ProcessStatus.STOPPED, "w1 to stop");
    await rt.send("router", {});
    await eventually(() => outcomes.length === 4, "the sends");
    expect(outcomes).toEqual(["sent", "sent", "sent", "sent"]);
    await eventually(() => worker.handled.length === 4, "w2 to get all four");
  });

  it("broadcast still reaches the live matches when one matching agent has stopped for good", async () => {
    const w1 = new Quitter("w1");
    const w2 = new Quitter("w2");
    let outcome: unknown = "not run";
    class Caster extends AgentProcess {
      override async handle(): Promise<void> {
        outcome = await this.broadcast("w*", { hello: true }).catch((e: CivitasError) => e.code);
      }
    }
    const rt = await whenStarted(runtime([new Caster("caster"), w1, w2]));
    await rt.send("w1", { quit: true });
    await eventually(() => w1.status === ProcessStatus.STOPPED, "w1 to stop");
    await rt.send("caster", {});
    await eventually(() => outcome !== "not run", "the broadcast");
    expect(outcome).toBe(1);
  });
});
