/**
 * State types: `AgentProcess<S>` takes what a payload takes (`JsonPayload<S>`),
 * an `interface` included, and refuses what is not JSON. The type checks run
 * in `npm run typecheck` (this file is under test/): an `expectTypeOf` that
 * no longer holds, or a `@ts-expect-error` that no longer errs, fails it.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { AgentProcess, DynamicSupervisor, InMemoryStateStore, Runtime, silentLogger, type Message } from "../../src/index.js";
import { whenStarted } from "../support/runtimes.js";

interface Totals {
  count: number;
  last?: string;
  lines: { sku: string; qty: number }[];
}

class Counter extends AgentProcess<Totals> {
  override state: Totals = { count: 0, lines: [] };
  override async handle(message: Message<{ sku: string }>): Promise<Message | void> {
    this.state.count += 1;
    this.state.last = message.payload.sku;
    this.state.lines.push({ sku: message.payload.sku, qty: 1 });
    await this.checkpoint();
    return this.reply({ count: this.state.count });
  }
}

// @ts-expect-error a Date is not JSON
class WithDate extends AgentProcess<{ at: Date }> {}
// @ts-expect-error a function is not JSON
class WithCallback extends AgentProcess<{ done: () => void }> {}
interface Loose {
  // a required field that may be undefined cannot be written as JSON
  note: string | undefined;
}
// @ts-expect-error a required field that may be undefined
class WithUndefined extends AgentProcess<Loose> {}

describe("state types", () => {
  it("an interface is a state type, typed as declared, and the agent runs and checkpoints it", async () => {
    const counter = new Counter("counter");
    expectTypeOf(counter.state).toEqualTypeOf<Totals>();
    const store = new InMemoryStateStore();
    const runtime = await whenStarted(new Runtime({ root: [counter], store, logger: silentLogger }));
    try {
      const reply = await runtime.ask("counter", { sku: "A-1" }, { timeoutMs: 5000 });
      expect(reply.payload).toEqual({ count: 1 });
      expect(await store.get("counter")).toMatchObject({ count: 1, last: "A-1", lines: [{ sku: "A-1", qty: 1 }] });
      expectTypeOf(runtime.getAgent("counter")).toEqualTypeOf<AgentProcess | undefined>();
    } finally {
      await runtime.stop();
    }
  });

  it("the refused state types stay classes at run time (only the types refuse them)", () => {
    expect([WithDate, WithCallback, WithUndefined].map((c) => c.name)).toEqual(["WithDate", "WithCallback", "WithUndefined"]);
  });
});

describe("an agent with an interface state where agents are taken", () => {
  it("is spawned under a dynamic supervisor by its factory", async () => {
    const dyn = new DynamicSupervisor("dyn");
    const runtime = await whenStarted(new Runtime({ root: [dyn], logger: silentLogger }));
    try {
      const child = await dyn.spawn((name) => new Counter(name), "spawned-counter");
      expectTypeOf(child).toEqualTypeOf<Counter>();
      expect((await runtime.ask("spawned-counter", { sku: "B" }, { timeoutMs: 5000 })).payload).toEqual({ count: 1 });
    } finally {
      await runtime.stop();
    }
  });
});
