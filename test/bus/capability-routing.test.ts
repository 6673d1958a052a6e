/**
 * broadcast and sendCapable: who they reach, in which turn, when some matching
 * agents have stopped.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/loop-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, ErrorAction, ProcessStatus, type JsonObject, type Message } from "civitas-ts";
import { codeOf, supervisedRuntimes, until } from "../support/review-kit.js";

const supervised = supervisedRuntimes();

class Sink extends AgentProcess {
  readonly seen: Message[] = [];
  override async handle(message: Message): Promise<void> {
    this.seen.push(message);
  }
}

/** Runs `fn` inside handle() and replies with what it resolved to, or the error code. */
class Doer extends AgentProcess {
  fn: ((self: Doer) => Promise<unknown>) | undefined;
  override async handle(): Promise<Message | void> {
    try {
      const value = await this.fn?.(this);
      return this.reply({ ok: true, value: value === undefined ? null : (value as JsonObject) });
    } catch (error) {
      return this.reply({ ok: false, code: codeOf(error), message: error instanceof Error ? error.message : String(error) });
    }
  }
}

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
    const rt = supervised([quitter, live, doer]);
    await rt.start();
    await rt.send("w-quit", {});
    await until(() => quitter.status === ProcessStatus.STOPPED);
    doer.fn = async (self) => ({ count: await self.broadcast("w-*", { hello: true }) });
    const reply = await rt.ask("doer", {});
    await until(() => live.seen.length === 1);
    // it was delivered to w-live; the call must not report a failure for a broadcast that (partly) happened
    expect(reply.payload, JSON.stringify(reply.payload)).toMatchObject({ ok: true });
  });
});
