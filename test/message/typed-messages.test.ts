/**
 * Typed messages: payload types declared as `interface` or type alias flow
 * through `send`, `ask<Req, Res>`, `reply` and `handle(message: Message<P>)`,
 * and the type-level JSON check (`JsonPayload`) refuses what JSON cannot
 * carry. The type assertions here are checked by `tsc` (npm test type-checks
 * test/): an `expectTypeOf` that no longer holds, or a `@ts-expect-error`
 * line that stops being an error, fails the type check. The run-time tests
 * pin that the types change nothing at run time.
 */
import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import {
  AgentProcess,
  createMessage,
  Runtime,
  silentLogger,
  type JsonCompatible,
  type JsonObject,
  type JsonPayload,
  type Message,
} from "../../src/index.js";
import { rejectsWithCode } from "../support/outcome.js";

interface Payment {
  invoice: string;
  amountCents: number;
  memo?: string;
  lines: readonly { sku: string; qty: number }[];
  approvedBy: string | null;
}

interface Receipt {
  invoice: string;
  paid: boolean;
}

/** Declared as a type alias: these were accepted before and still are. */
type Ping = { n: number };

/** The agent a user writes: typed handler, typed reply. */
class Payments extends AgentProcess<{ paid: number }> {
  override state = { paid: 0 };
  readonly seen: Payment[] = [];

  override async handle(message: Message<Payment>): Promise<Message<Receipt>> {
    expectTypeOf(message.payload.amountCents).toEqualTypeOf<number>();
    expectTypeOf(message.payload.memo).toEqualTypeOf<string | undefined>();
    this.seen.push(message.payload);
    this.state.paid += message.payload.amountCents;
    return this.reply<Receipt>({ invoice: message.payload.invoice, paid: true });
  }

  override async onError(_error: unknown, message: Message<Payment>): Promise<never> {
    throw new Error(`cannot fail on ${message.payload.invoice}`);
  }
}

/** An agent that asks another one, typed, from inside a handler. */
class Cashier extends AgentProcess {
  override async handle(message: Message<Ping>): Promise<Message<Receipt>> {
    const receipt = await this.ask<Payment, Receipt>("payments", {
      invoice: `INV-${message.payload.n}`,
      amountCents: 100 * message.payload.n,
      lines: [{ sku: "a", qty: message.payload.n }],
      approvedBy: null,
    });
    expectTypeOf(receipt).toEqualTypeOf<Message<Receipt>>();
    return this.reply(receipt.payload);
  }
}

/** Untyped code as it was written before typed messages. */
class Untyped extends AgentProcess {
  override async handle(message: Message): Promise<Message> {
    expectTypeOf(message.payload).toEqualTypeOf<JsonObject>();
    return this.reply({ ...message.payload, echoed: true });
  }
}

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.stop()));
});

function startRuntime(...agents: AgentProcess[]): Promise<Runtime> {
  const rt = new Runtime({ root: agents, logger: silentLogger, keepAlive: false });
  runtimes.push(rt);
  return rt.start().then(() => rt);
}

const payment: Payment = { invoice: "INV-1", amountCents: 4000, lines: [{ sku: "a", qty: 2 }], approvedBy: "alice" };

describe("typed messages at run time", () => {
  it("an interface payload goes through runtime.ask<Req, Res> and a typed handle/reply unchanged", async () => {
    const payments = new Payments("payments");
    const rt = await startRuntime(payments);
    const reply = await rt.ask<Payment, Receipt>("payments", payment);
    expectTypeOf(reply).toEqualTypeOf<Message<Receipt>>();
    expect(reply.payload).toEqual({ invoice: "INV-1", paid: true });
    expect(payments.seen).toEqual([payment]);
    expect(payments.state.paid).toBe(4000);
  });

  it("an agent asks another with ask<Req, Res> and replies with the typed payload it got", async () => {
    const rt = await startRuntime(new Payments("payments"), new Cashier("cashier"));
    const reply = await rt.ask<Ping, Receipt>("cashier", { n: 3 });
    expect(reply.payload).toEqual({ invoice: "INV-3", paid: true });
  });

  it("untyped send and ask keep their JsonObject payloads", async () => {
    const rt = await startRuntime(new Untyped("untyped"));
    const payload: JsonObject = { a: 1 };
    const reply = await rt.ask("untyped", payload);
    expectTypeOf(reply).toEqualTypeOf<Message>();
    expectTypeOf(reply).toEqualTypeOf<Message<JsonObject>>();
    expect(reply.payload).toEqual({ a: 1, echoed: true });
    await expect(rt.send("untyped", { b: [1, "two", null, { c: false }] })).resolves.toBeUndefined();
  });

  it("what the types cannot see is still refused at run time with PAYLOAD_NOT_SERIALIZABLE", async () => {
    class Point {
      x = 1;
    }
    const rt = await startRuntime(new Untyped("untyped"));
    // A class with only data fields passes the type check; its instances are not plain objects.
    await rejectsWithCode(rt.send("untyped", { at: new Point() }), "PAYLOAD_NOT_SERIALIZABLE");
    await rejectsWithCode(rt.send("untyped", { n: Number.NaN }), "PAYLOAD_NOT_SERIALIZABLE");
    // And a payload whose type was cast away is checked as before.
    await rejectsWithCode(rt.send("untyped", { at: new Date() } as unknown as JsonObject), "PAYLOAD_NOT_SERIALIZABLE");
  });

  it("createMessage takes an interface payload and types the message with it", () => {
    const m = createMessage({ sender: "a", recipient: "b", payload });
    expectTypeOf(m).toEqualTypeOf<Message<Payment>>();
    expect(m.payload).toBe(payload);
  });
});

const payload: Payment = payment;

describe("the type-level JSON check", () => {
  // The arrow functions below are never called: they exist for tsc to check.
  const agent = new Payments("typecheck-only");
  const rt = new Runtime({ root: [new Untyped("typecheck-only-untyped")], logger: silentLogger, keepAlive: false });

  it("accepts interfaces, type aliases, optional fields, null, nested arrays, tuples and recursive types", () => {
    interface Tree {
      label: string;
      children: Tree[];
    }
    interface Tagged {
      tag: readonly [string, number];
      meta?: { deep?: boolean[] };
      length: number;
    }
    expectTypeOf<Payment>().toExtend<JsonPayload<Payment>>();
    expectTypeOf<Ping>().toExtend<JsonPayload<Ping>>();
    expectTypeOf<Tree>().toExtend<JsonPayload<Tree>>();
    expectTypeOf<Tagged>().toExtend<JsonPayload<Tagged>>();
    expectTypeOf<JsonObject>().toExtend<JsonPayload<JsonObject>>();
    expectTypeOf<Record<string, number>>().toExtend<JsonPayload<Record<string, number>>>();
    expectTypeOf<Payment[]>().toExtend<JsonCompatible<Payment[]>>();
    expectTypeOf<string>().toExtend<JsonCompatible<string>>();
    const typed = (): unknown => [
      rt.send<Payment>("x", payload),
      rt.send("x", { tree: { label: "root", children: [] } satisfies Tree }),
      agent.send<Tagged>("x", { tag: ["a", 1], length: 3 }),
      agent.broadcast<Payment>("*", payload),
      agent.sendCapable("pay", payload),
      agent.reply<Receipt>({ invoice: "x", paid: false }),
    ];
    expect(typed).toBeTypeOf("function");
  });

  it("refuses what JSON cannot carry: Date, functions, methods, bigint, symbols, undefined, Map, arrays and primitives", () => {
    interface WithDate {
      at: Date;
    }
    interface WithCallback {
      onDone: () => void;
    }
    interface WithMethod {
      n: number;
      total(): number;
    }
    interface WithBigint {
      big: bigint;
    }
    interface WithSymbol {
      s: symbol;
    }
    interface WithUndefined {
      maybe: string | undefined;
    }
    interface WithMap {
      byId: Map<string, number>;
    }
    interface Nested {
      a: { b: { at: Date }[] };
    }
    interface WithUnknown {
      data: unknown;
    }
    expectTypeOf<WithDate>().not.toExtend<JsonPayload<WithDate>>();
    expectTypeOf<WithCallback>().not.toExtend<JsonPayload<WithCallback>>();
    expectTypeOf<WithMethod>().not.toExtend<JsonPayload<WithMethod>>();
    expectTypeOf<WithBigint>().not.toExtend<JsonPayload<WithBigint>>();
    expectTypeOf<WithSymbol>().not.toExtend<JsonPayload<WithSymbol>>();
    expectTypeOf<WithUndefined>().not.toExtend<JsonPayload<WithUndefined>>();
    expectTypeOf<WithMap>().not.toExtend<JsonPayload<WithMap>>();
    expectTypeOf<Nested>().not.toExtend<JsonPayload<Nested>>();
    expectTypeOf<WithUnknown>().not.toExtend<JsonPayload<WithUnknown>>();
    expectTypeOf<number[]>().not.toExtend<JsonPayload<number[]>>();
    expectTypeOf<Date>().not.toExtend<JsonCompatible<Date>>();
    expectTypeOf<bigint>().not.toExtend<JsonCompatible<bigint>>();
    expectTypeOf<undefined>().not.toExtend<JsonCompatible<undefined>>();

    const withMethod: WithMethod = { n: 1, total: () => 1 };
    const withUndefined: WithUndefined = { maybe: undefined };
    const nested: Nested = { a: { b: [{ at: new Date() }] } };
    const withUnknown: WithUnknown = { data: 1 };
    const refused = (): unknown => [
      // @ts-expect-error a Date is not JSON
      rt.send("x", { at: new Date() }),
      // @ts-expect-error a Date is not JSON, also in an interface
      rt.send<WithDate>("x", { at: new Date() }),
      // @ts-expect-error a function is not JSON
      rt.send("x", { onDone: () => undefined }),
      // @ts-expect-error a method is not JSON
      rt.ask("x", withMethod),
      // @ts-expect-error a bigint is not JSON
      rt.send("x", { big: 1n }),
      // @ts-expect-error a symbol is not JSON
      rt.send("x", { s: Symbol("s") }),
      // @ts-expect-error a required field that may be undefined
      rt.send("x", withUndefined),
      // @ts-expect-error a Map is not JSON
      rt.send("x", { byId: new Map<string, number>() }),
      // @ts-expect-error a Date deep inside
      agent.send("x", nested),
      // @ts-expect-error a payload is an object, not an array
      agent.send("x", [1, 2]),
      // @ts-expect-error a payload is an object, not a string
      agent.send("x", "hello"),
      // @ts-expect-error unknown may be anything
      agent.broadcast("*", withUnknown),
      // @ts-expect-error the reply type cannot hold a Date either
      rt.ask<Ping, WithDate>("x", { n: 1 }),
      // @ts-expect-error reply<Receipt> checks the payload against Receipt
      agent.reply<Receipt>({ invoice: "x", paid: "yes" }),
      // @ts-expect-error reply() refuses a Date too
      agent.reply({ at: new Date() }),
      // @ts-expect-error createMessage checks its payload type
      createMessage({ sender: "a", recipient: "b", payload: { at: new Date() } }),
      // @ts-expect-error send<Payment> checks the payload against Payment
      rt.send<Payment>("x", { invoice: "INV-1" }),
    ];
    expect(refused).toBeTypeOf("function");
  });

  it("ask<Req, Res> resolves Message<Res>; ask without type arguments resolves the untyped Message", () => {
    expectTypeOf<typeof rt.ask<Payment, Receipt>>().returns.toEqualTypeOf<Promise<Message<Receipt>>>();
    expectTypeOf<typeof agent.ask<Payment, Receipt>>().returns.toEqualTypeOf<Promise<Message<Receipt>>>();
    expectTypeOf<typeof rt.ask<Payment>>().returns.toEqualTypeOf<Promise<Message>>();
    expectTypeOf<typeof agent.reply<Receipt>>().returns.toEqualTypeOf<Message<Receipt>>();
    expectTypeOf<typeof agent.reply<Receipt>>().parameter(0).toEqualTypeOf<Receipt>();
    expectTypeOf<typeof rt.send<Payment>>().parameter(1).toEqualTypeOf<Payment>();
  });

  it("handle(message: Message<P>) with an interface P overrides the base handle, as does the untyped one", () => {
    expectTypeOf<Payments["handle"]>().parameter(0).toEqualTypeOf<Message<Payment>>();
    expectTypeOf<Payments>().toExtend<AgentProcess<{ paid: number }>>();
    expectTypeOf<Untyped>().toExtend<AgentProcess>();
    // The agents above compile: an override whose types do not fit would be TS2416 on the class.
    class Wrong extends AgentProcess {
      // @ts-expect-error a handler must return a message (or nothing), not a number
      override async handle(_message: Message<Payment>): Promise<number> {
        return 1;
      }
    }
    expect(new Wrong("wrong").name).toBe("wrong");
  });

  it("generic code forwards payloads constrained by JsonPayload<P> or JsonObject", () => {
    const forward = <P extends JsonPayload<P>>(from: AgentProcess, to: string, body: P): Promise<void> => from.send(to, body);
    const forwardObject = <P extends JsonObject>(from: AgentProcess, to: string, body: P): Promise<void> => from.send(to, body);
    expectTypeOf(forward<Payment>).parameter(2).toEqualTypeOf<Payment>();
    expectTypeOf(forwardObject<{ a: number }>).parameter(2).toEqualTypeOf<{ a: number }>();
  });
});
