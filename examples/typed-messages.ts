/**
 * Typed messages: payload types declared as interfaces flow through
 * `runtime.ask<Req, Res>`, `this.ask<Req, Res>` inside an agent,
 * `handle(message: Message<Req>)` and `this.reply<Res>(...)`. The compiler
 * refuses payloads JSON cannot carry (a `Date`, a function, a `bigint` …);
 * the run-time check still refuses what types cannot see.
 *
 * Run it with `npx tsx examples/typed-messages.ts`.
 */
import { AgentProcess, CivitasError, Runtime, silentLogger, type Message } from "civitas-ts";

/** What the pricing agent is asked. */
interface PriceQuery {
  sku: string;
  qty: number;
}

/** What it answers. */
interface Quote {
  sku: string;
  qty: number;
  unitCents: number;
  totalCents: number;
}

/** An order, as the outside world sends it to the checkout agent. */
interface Order {
  orderId: string;
  lines: PriceQuery[];
  coupon?: string;
}

/** The checkout agent's answer. */
interface OrderTotal {
  orderId: string;
  quotes: Quote[];
  totalCents: number;
  discounted: boolean;
}

const PRICES: Readonly<Record<string, number>> = { "tea-green": 450, "tea-black": 390, mug: 1200 };

/** Prices one line. */
class Pricing extends AgentProcess {
  override async handle(message: Message<PriceQuery>): Promise<Message<Quote>> {
    const { sku, qty } = message.payload; // typed: string, number
    const unitCents = PRICES[sku] ?? 0;
    return this.reply<Quote>({ sku, qty, unitCents, totalCents: unitCents * qty });
  }
}

/** Prices every line of an order by asking `pricing`, and totals it. */
class Checkout extends AgentProcess {
  override async handle(message: Message<Order>): Promise<Message<OrderTotal>> {
    const order = message.payload;
    const quotes: Quote[] = [];
    for (const line of order.lines) {
      const quote = await this.ask<PriceQuery, Quote>("pricing", line);
      quotes.push(quote.payload);
    }
    const subtotal = quotes.reduce((sum, q) => sum + q.totalCents, 0);
    const discounted = order.coupon === "WELCOME10";
    return this.reply<OrderTotal>({ orderId: order.orderId, quotes, totalCents: discounted ? Math.round(subtotal * 0.9) : subtotal, discounted });
  }
}

const euros = (cents: number): string => (cents / 100).toFixed(2);

const runtime = new Runtime({ root: [new Pricing("pricing"), new Checkout("checkout")], logger: silentLogger });
await runtime.start();
try {
  const order: Order = { orderId: "A-17", lines: [{ sku: "tea-green", qty: 2 }, { sku: "mug", qty: 1 }], coupon: "WELCOME10" };
  const total = await runtime.ask<Order, OrderTotal>("checkout", order);
  // total.payload is an OrderTotal: the compiler knows its fields.
  for (const q of total.payload.quotes) console.log(`  ${q.sku} x${q.qty}: ${euros(q.totalCents)}`);
  console.log(`order ${total.payload.orderId}: total ${euros(total.payload.totalCents)} EUR (discounted: ${total.payload.discounted})`);

  // A payload JSON cannot carry is refused by the compiler ...
  const placedAt = new Date();
  try {
    // @ts-expect-error a Date is not JSON: send it as placedAt.toISOString()
    await runtime.send("checkout", { orderId: "A-18", lines: [], placedAt });
  } catch (error) {
    // ... and, when the compiler is talked out of it, at run time.
    if (!(error instanceof CivitasError)) throw error;
    console.log(`a Date in a payload: refused by the compiler, and at run time with ${error.code}`);
  }

  // A class instance with data fields only passes the type check; the run-time check refuses it.
  class Money {
    constructor(readonly cents: number) {}
  }
  try {
    await runtime.send("checkout", { orderId: "A-19", lines: [], price: new Money(100) });
  } catch (error) {
    if (!(error instanceof CivitasError)) throw error;
    console.log(`a class instance in a payload: refused at run time with ${error.code} (${error.message.split(":")[0]})`);
  }
} finally {
  await runtime.stop();
}
console.log("stopped");
