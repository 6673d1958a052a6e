import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { CivitasError } from "../../src/errors/civitas-error.js";
import { InvalidArgumentError, MailboxClosedError } from "../../src/errors/errors.js";
import { forceMessage } from "../../src/mailbox/mailbox-internals.js";
import { Mailbox } from "../../src/mailbox/mailbox.js";
import { buildMessage, type Message } from "../../src/message/message.js";
import type { Clock, TimerHandle } from "../../src/time/clock.js";
import { track } from "../support/outcome.js";

let counter = 0;

/** A business (priority 0) or control (priority >= 1) message with a readable id. */
function msg(priority = 0, extra: { ttlMs?: number; timestamp?: number } = {}): Message {
  counter++;
  return buildMessage({
    id: `${priority > 0 ? "p" : "b"}${counter}`,
    sender: "test",
    recipient: "box",
    payload: { n: counter },
    priority,
    ...extra,
  });
}


// put and offer enqueue a frozen copy of the message (see "Mailbox snapshots"): what comes out equals, but is not,
// what went in. Every message here has its own id and payload, so toStrictEqual tells them apart as toBe would.

/** Lets every queued microtask (promise callback) run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function expectClosed(reason: unknown): void {
  expect(reason).toBeInstanceOf(MailboxClosedError);
  expect(reason).toBeInstanceOf(CivitasError);
  expect((reason as MailboxClosedError).code).toBe("MAILBOX_CLOSED");
  expect((reason as MailboxClosedError).name).toBe("MailboxClosedError");
}

function fakeClock(start: number): Clock & { t: number } {
  const clock = {
    t: start,
    now: () => clock.t,
    setTimeout: (): TimerHandle => ({ cancel: () => undefined }),
  };
  return clock;
}

const abortListeners = (signal: AbortSignal): number => getEventListeners(signal, "abort").length;

describe("Mailbox capacities", () => {
  it("defaults to 1000 business and 100 priority slots", () => {
    const box = new Mailbox();
    for (let i = 0; i < 1000; i++) expect(box.offer(msg(0))).toBe(true);
    expect(box.offer(msg(0))).toBe(false);
    for (let i = 0; i < 100; i++) expect(box.offer(msg(1))).toBe(true);
    expect(box.offer(msg(1))).toBe(false);
    expect(box.size).toBe(1000);
    expect(box.prioritySize).toBe(100);
  });

  it("honours custom capacities", () => {
    const box = new Mailbox({ capacity: 2, priorityCapacity: 1 });
    expect(box.offer(msg(0))).toBe(true);
    expect(box.offer(msg(0))).toBe(true);
    expect(box.offer(msg(0))).toBe(false);
    expect(box.offer(msg(1))).toBe(true);
    expect(box.offer(msg(1))).toBe(false);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])("refuses capacity %s with INVALID_ARGUMENT", (bad) => {
    for (const options of [{ capacity: bad }, { priorityCapacity: bad }]) {
      let caught: unknown;
      try {
        new Mailbox(options);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(InvalidArgumentError);
      expect((caught as InvalidArgumentError).code).toBe("INVALID_ARGUMENT");
      expect((caught as InvalidArgumentError).argument).toBe(Object.keys(options)[0]);
      expect((caught as Error).message).toContain(String(bad));
    }
  });

  it.each<[string, unknown]>([
    ["null", null],
    ["a number", 5],
    ["a string", "big"],
  ])("refuses options that are %s with INVALID_ARGUMENT", (_what, options) => {
    let caught: unknown;
    try {
      new Mailbox(options as undefined);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidArgumentError);
    expect((caught as InvalidArgumentError).argument).toBe("options");
  });

  it("refuses something that is not a message with INVALID_ARGUMENT, enqueueing nothing", async () => {
    const box = new Mailbox();
    for (const bad of [undefined, null, 7, {}, { priority: "1" }]) {
      const notAMessage = bad as unknown as Message;
      await expect(box.put(notAMessage)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "message" });
      expect(() => box.offer(notAMessage)).toThrow(InvalidArgumentError);
      expect(() => forceMessage(box, notAMessage)).toThrow(InvalidArgumentError);
    }
    expect(box.size + box.prioritySize).toBe(0);
  });

  it("routes by priority: 0 to the business lane, >= 1 to the priority lane", () => {
    const box = new Mailbox();
    forceMessage(box, msg(0));
    forceMessage(box, msg(1));
    forceMessage(box, msg(2));
    expect(box.size).toBe(1);
    expect(box.prioritySize).toBe(2);
  });
});

  it("mailboxes whose priority lane nothing has been put into yet share nothing: each put lands in its own mailbox only", async () => {
    // Until its first priority put, a mailbox at the default priority capacity holds no lane of its own (lane.ts).
    const boxes = [new Mailbox(), new Mailbox(), new Mailbox()];
    const [a, b, c] = boxes as [Mailbox, Mailbox, Mailbox];
    expect(a.pollPriority()).toBeUndefined();
    c.close(); // closing an untouched mailbox, then taking from it, leaves the others as they are
    expect(c.poll()).toBeUndefined();
    const first = msg(1);
    const waiting = b.getPriority();
    expect(a.offer(first)).toBe(true);
    forceMessage(a, msg(2));
    expect([a.prioritySize, b.prioritySize, c.prioritySize]).toEqual([2, 0, 0]);
    expect(b.pollPriority()).toBeUndefined();
    const second = msg(1);
    await b.put(second);
    expect(await waiting).toStrictEqual(second);
    expect(a.pollPriority()).toStrictEqual(first);
    expect([a.prioritySize, b.prioritySize, c.prioritySize]).toEqual([1, 0, 0]);
    // Full at the default capacity on one mailbox: another still takes its own 100.
    for (let i = 1; i < 100; i++) expect(a.offer(msg(1))).toBe(true);
    expect(a.offer(msg(1))).toBe(false);
    for (let i = 0; i < 100; i++) expect(b.offer(msg(1))).toBe(true);
    expect(b.offer(msg(1))).toBe(false);
    expect(() => c.offer(msg(1))).toThrow(MailboxClosedError);
    expect([a.prioritySize, b.prioritySize, c.prioritySize]).toEqual([100, 100, 0]);
  });

describe("Mailbox ordering", () => {
  it("get() returns the oldest priority message first, then business messages in FIFO order", async () => {
    const box = new Mailbox();
    const b1 = msg(0);
    const b2 = msg(0);
    const p1 = msg(1);
    const b3 = msg(0);
    const p2 = msg(2);
    for (const m of [b1, b2, p1, b3, p2]) await box.put(m);
    const got: Message[] = [];
    for (let i = 0; i < 5; i++) got.push(await box.get());
    expect(got).toEqual([p1, p2, b1, b2, b3]);
  });

  it("poll() takes like get() without waiting, and pollPriority() ignores business messages", () => {
    const box = new Mailbox();
    expect(box.poll()).toBeUndefined();
    expect(box.pollPriority()).toBeUndefined();
    const b = msg(0);
    const p = msg(1);
    forceMessage(box, b);
    expect(box.pollPriority()).toBeUndefined();
    forceMessage(box, p);
    expect(box.pollPriority()).toStrictEqual(p);
    expect(box.pollPriority()).toBeUndefined();
    expect(box.poll()).toStrictEqual(b);
    expect(box.poll()).toBeUndefined();
  });

  it("drain() returns priority messages first, then business, and admits waiting puts", async () => {
    const box = new Mailbox({ capacity: 1 });
    const b1 = msg(0);
    const b2 = msg(0);
    const p1 = msg(1);
    await box.put(b1);
    const waiting = track(box.put(b2));
    await box.put(p1);
    expect(box.drain()).toEqual([p1, b1, b2]);
    await flush();
    expect(waiting.state).toBe("resolved");
    expect(box.size).toBe(0);
    expect(box.drain()).toEqual([]);
  });
});

describe("Mailbox backpressure", () => {
  it("put waits while its lane is full and completes when a get makes room", async () => {
    const box = new Mailbox({ capacity: 1 });
    const a = msg(0);
    const b = msg(0);
    await box.put(a);
    const second = track(box.put(b));
    await flush();
    expect(second.state).toBe("pending");
    expect(box.size).toBe(1);
    expect(await box.get()).toStrictEqual(a);
    await flush();
    expect(second.state).toBe("resolved");
    expect(box.size).toBe(1);
    expect(await box.get()).toStrictEqual(b);
  });

  it("serves waiting puts first come, first served", async () => {
    const box = new Mailbox({ capacity: 1 });
    const first = msg(0);
    await box.put(first);
    const later = [msg(0), msg(0), msg(0)];
    const puts = later.map((m) => track(box.put(m)));
    // offer() must not jump the queue of waiting puts either
    expect(box.offer(msg(0))).toBe(false);
    const got: Message[] = [];
    for (let i = 0; i < 4; i++) got.push(await box.get());
    expect(got).toEqual([first, ...later]);
    await flush();
    expect(puts.map((p) => p.state)).toEqual(["resolved", "resolved", "resolved"]);
  });

  it("a full business lane does not block the priority lane, and vice versa", async () => {
    const box = new Mailbox({ capacity: 1, priorityCapacity: 1 });
    await box.put(msg(0));
    const blockedBusiness = track(box.put(msg(0)));
    const p = msg(1);
    await box.put(p); // resolves although the business lane is full
    const blockedPriority = track(box.put(msg(1)));
    await flush();
    expect(blockedBusiness.state).toBe("pending");
    expect(blockedPriority.state).toBe("pending");
    expect(box.pollPriority()).toStrictEqual(p);
    await flush();
    expect(blockedPriority.state).toBe("resolved");
    expect(blockedBusiness.state).toBe("pending");
  });

  it("force() enqueues past capacity, ahead of waiting puts", async () => {
    const box = new Mailbox({ capacity: 1 });
    const a = msg(0);
    const waiting = msg(0);
    const forced = msg(0);
    await box.put(a);
    const put = track(box.put(waiting));
    forceMessage(box, forced);
    expect(box.size).toBe(2);
    expect(box.offer(msg(0))).toBe(false);
    expect(box.drain()).toEqual([a, forced, waiting]);
    await flush();
    expect(put.state).toBe("resolved");
  });

  it("force() hands the message straight to a waiting get", async () => {
    const box = new Mailbox({ capacity: 1 });
    const getter = track(box.get());
    const m = msg(0);
    forceMessage(box, m);
    await flush();
    expect(getter.value).toStrictEqual(m);
    expect(box.size).toBe(0);
  });
});

describe("Mailbox cancellation", () => {
  it("a put with an already-aborted signal rejects with its reason and enqueues nothing", async () => {
    const box = new Mailbox();
    const reason = new Error("gave up");
    await expect(box.put(msg(0), { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(box.size).toBe(0);
  });

  it("aborting a waiting put rejects it with the reason, removes its listener and never delivers it", async () => {
    const box = new Mailbox({ capacity: 1 });
    const a = msg(0);
    const aborted = msg(0);
    const c = msg(0);
    await box.put(a);
    const controller = new AbortController();
    const put = track(box.put(aborted, { signal: controller.signal }));
    const next = track(box.put(c));
    expect(abortListeners(controller.signal)).toBe(1);
    const reason = new Error("stop waiting");
    controller.abort(reason);
    await flush();
    expect(put.state).toBe("rejected");
    expect(put.reason).toBe(reason);
    expect(abortListeners(controller.signal)).toBe(0);
    expect(box.drain()).toEqual([a, c]);
    await flush();
    expect(next.state).toBe("resolved");
  });

  it("aborting without a reason rejects with the signal's AbortError", async () => {
    const box = new Mailbox({ capacity: 1 });
    await box.put(msg(0));
    const controller = new AbortController();
    const put = track(box.put(msg(0), { signal: controller.signal }));
    controller.abort();
    await flush();
    expect(put.state).toBe("rejected");
    expect((put.reason as Error).name).toBe("AbortError");
    expect(put.reason).toBe(controller.signal.reason);
  });

  it("removes the abort listener when a waiting put or get completes normally", async () => {
    const box = new Mailbox({ capacity: 1 });
    await box.put(msg(0));
    const putController = new AbortController();
    const put = track(box.put(msg(0), { signal: putController.signal }));
    expect(abortListeners(putController.signal)).toBe(1);
    box.drain();
    await flush();
    expect(put.state).toBe("resolved");
    expect(abortListeners(putController.signal)).toBe(0);

    const getController = new AbortController();
    const get = track(box.get({ signal: getController.signal }));
    expect(abortListeners(getController.signal)).toBe(1);
    forceMessage(box, msg(0));
    await flush();
    expect(get.state).toBe("resolved");
    expect(abortListeners(getController.signal)).toBe(0);
    // aborting afterwards changes nothing
    getController.abort(new Error("late"));
    await flush();
    expect(get.state).toBe("resolved");
  });

  it("a get with an already-aborted signal rejects with its reason and takes nothing when empty", async () => {
    const box = new Mailbox();
    const reason = new Error("no");
    await expect(box.get({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    await expect(box.getPriority({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });

  it("an aborted get is skipped: the next message goes to the next waiter", async () => {
    const box = new Mailbox();
    const controller = new AbortController();
    const first = track(box.get({ signal: controller.signal }));
    const second = track(box.get());
    const reason = new Error("cancelled");
    controller.abort(reason);
    const m = msg(0);
    await box.put(m);
    await flush();
    expect(first.state).toBe("rejected");
    expect(first.reason).toBe(reason);
    expect(second.value).toStrictEqual(m);
    expect(box.size).toBe(0);
  });

  it("an aborted get is skipped when a priority message arrives too", async () => {
    const box = new Mailbox();
    const controller = new AbortController();
    const first = track(box.getPriority({ signal: controller.signal }));
    const second = track(box.get());
    controller.abort(new Error("cancelled"));
    const p = msg(1);
    await box.put(p);
    await flush();
    expect(first.state).toBe("rejected");
    expect(second.value).toStrictEqual(p);
  });

  it("does not pile up aborted getters on an idle mailbox", async () => {
    const box = new Mailbox();
    for (let i = 0; i < 500; i++) {
      const controller = new AbortController();
      const get = box.get({ signal: controller.signal });
      controller.abort(new Error("timeout"));
      await expect(get).rejects.toThrow("timeout");
    }
    const internals = box as unknown as { waiting: { any: { length: number } } };
    expect(internals.waiting.any.length).toBeLessThanOrEqual(1);
  });
});

describe("Mailbox waiters", () => {
  it("get() waits for a message and waiting gets are served first come, first served", async () => {
    const box = new Mailbox();
    const g1 = track(box.get());
    const g2 = track(box.get());
    await flush();
    expect(g1.state).toBe("pending");
    const a = msg(0);
    const b = msg(0);
    await box.put(a);
    await box.put(b);
    await flush();
    expect(g1.value).toStrictEqual(a);
    expect(g2.value).toStrictEqual(b);
    expect(box.size).toBe(0);
  });

  it("a pending getPriority() is not woken by any number of business puts, only by a priority put", async () => {
    const box = new Mailbox();
    const pending = track(box.getPriority());
    const business: Message[] = [];
    for (let i = 0; i < 200; i++) {
      const m = msg(0);
      business.push(m);
      await box.put(m);
      await flush();
      expect(pending.state).toBe("pending");
    }
    expect(box.size).toBe(200);
    const p = msg(1);
    await box.put(p);
    await flush();
    expect(pending.state).toBe("resolved");
    expect(pending.value).toStrictEqual(p);
    expect(box.size).toBe(200);
    expect(box.prioritySize).toBe(0);
    expect(box.drain()).toEqual(business);
  });

  it("a business put goes to a waiting get() even when an older getPriority() waits", async () => {
    const box = new Mailbox();
    const prioOnly = track(box.getPriority());
    const any = track(box.get());
    const b = msg(0);
    await box.put(b);
    await flush();
    expect(any.value).toStrictEqual(b);
    expect(prioOnly.state).toBe("pending");
  });

  it("a priority put goes to the longest-waiting getter of either kind", async () => {
    const box = new Mailbox();
    const any = track(box.get());
    const prioOnly = track(box.getPriority());
    const p1 = msg(1);
    const p2 = msg(1);
    await box.put(p1);
    await flush();
    expect(any.value).toStrictEqual(p1);
    expect(prioOnly.state).toBe("pending");
    await box.put(p2);
    await flush();
    expect(prioOnly.value).toStrictEqual(p2);
  });

  it("getPriority() takes a queued priority message and leaves business messages queued", async () => {
    const box = new Mailbox();
    const b = msg(0);
    const p = msg(1);
    await box.put(b);
    await box.put(p);
    expect(await box.getPriority()).toStrictEqual(p);
    expect(box.size).toBe(1);
  });
});

describe("Mailbox close", () => {
  it("rejects pending get and getPriority with MAILBOX_CLOSED and removes their listeners", async () => {
    const box = new Mailbox();
    const getController = new AbortController();
    const prioController = new AbortController();
    const get = track(box.get({ signal: getController.signal }));
    const getPriority = track(box.getPriority({ signal: prioController.signal }));
    const plainGet = track(box.get());
    box.close();
    expect(box.closed).toBe(true);
    await flush();
    for (const t of [get, getPriority, plainGet]) {
      expect(t.state).toBe("rejected");
      expectClosed(t.reason);
    }
    expect(abortListeners(getController.signal)).toBe(0);
    expect(abortListeners(prioController.signal)).toBe(0);
  });

  it("rejects pending puts (and a getPriority waiting beside a full business lane) with MAILBOX_CLOSED", async () => {
    const box = new Mailbox({ capacity: 1, priorityCapacity: 1 });
    await box.put(msg(0));
    await box.put(msg(1));
    const businessController = new AbortController();
    const business = track(box.put(msg(0), { signal: businessController.signal }));
    const priority = track(box.put(msg(1)));
    expect(box.pollPriority()).toBeDefined(); // admits the waiting priority put
    expect(box.pollPriority()).toBeDefined();
    const getPriority = track(box.getPriority());
    await flush();
    expect(priority.state).toBe("resolved");
    expect(business.state).toBe("pending");
    expect(getPriority.state).toBe("pending");
    box.close();
    await flush();
    for (const t of [business, getPriority]) {
      expect(t.state).toBe("rejected");
      expectClosed(t.reason);
    }
    expect(abortListeners(businessController.signal)).toBe(0);
    expect(box.size).toBe(1);
  });

  it("refuses new puts, offers and forces once closed, without throwing synchronously from put", async () => {
    const box = new Mailbox();
    box.close();
    let put: Promise<void> | undefined;
    expect(() => {
      put = box.put(msg(0));
    }).not.toThrow();
    await expect(put).rejects.toBeInstanceOf(MailboxClosedError);
    expect(() => box.offer(msg(0))).toThrow(MailboxClosedError);
    expect(() => forceMessage(box, msg(1))).toThrow(MailboxClosedError);
    expect(box.size).toBe(0);
    expect(box.prioritySize).toBe(0);
  });

  it("lets queued messages be taken after close, then rejects get with MAILBOX_CLOSED", async () => {
    const box = new Mailbox({ capacity: 2 });
    const b1 = msg(0);
    const b2 = msg(0);
    const p1 = msg(1);
    await box.put(b1);
    await box.put(b2);
    await box.put(p1);
    const waiting = track(box.put(msg(0)));
    box.close();
    box.close(); // idempotent
    await flush();
    expect(waiting.state).toBe("rejected");
    expectClosed(waiting.reason);
    expect(await box.get()).toStrictEqual(p1);
    // getPriority finds no priority message and must not wait forever on a closed mailbox
    await expect(box.getPriority()).rejects.toBeInstanceOf(MailboxClosedError);
    expect(box.poll()).toStrictEqual(b1);
    expect(await box.get()).toStrictEqual(b2);
    expect(box.poll()).toBeUndefined();
    const last = box.get();
    await expect(last).rejects.toBeInstanceOf(MailboxClosedError);
    await last.catch((err: unknown) => expectClosed(err));
  });

  it("never delivers the message of a put rejected by close", async () => {
    const box = new Mailbox({ capacity: 1 });
    const a = msg(0);
    const b = msg(0);
    await box.put(a);
    const put = track(box.put(b));
    box.close();
    await flush();
    expect(put.state).toBe("rejected");
    expect(box.drain()).toEqual([a]);
  });
});

describe("Mailbox TTL", () => {
  it("discards a message older than its ttlMs at dequeue, counts it and reports it", async () => {
    const clock = fakeClock(1_000);
    const expired: Message[] = [];
    const box = new Mailbox({ clock, onExpired: (m) => expired.push(m) });
    const stale = msg(0, { ttlMs: 100, timestamp: 1_000 });
    const fresh = msg(0, { ttlMs: 100, timestamp: 1_050 });
    const forever = msg(0, { timestamp: 0 });
    await box.put(stale);
    await box.put(fresh);
    await box.put(forever);
    clock.t = 1_101; // stale is 101 ms old (> 100), fresh 51 ms
    expect(await box.get()).toStrictEqual(fresh);
    expect(box.expiredCount).toBe(1);
    expect(expired).toEqual([stale]);
    clock.t = 1_000_000;
    expect(await box.get()).toStrictEqual(forever); // no ttlMs: never expires
    expect(box.expiredCount).toBe(1);
  });

  it("keeps a message whose age equals its ttlMs", async () => {
    const clock = fakeClock(5_000);
    const box = new Mailbox({ clock });
    const m = msg(1, { ttlMs: 100, timestamp: 4_900 });
    await box.put(m);
    expect(box.pollPriority()).toStrictEqual(m);
    expect(box.expiredCount).toBe(0);
  });

  it("expires priority messages on poll and getPriority too, and a put waiting for room is admitted", async () => {
    const clock = fakeClock(0);
    const expired: string[] = [];
    const box = new Mailbox({ clock, priorityCapacity: 1, onExpired: (m) => expired.push(m.id) });
    const stale = msg(1, { ttlMs: 10, timestamp: 0 });
    const next = msg(1, { timestamp: 0 });
    await box.put(stale);
    const waiting = track(box.put(next));
    clock.t = 11;
    expect(await box.getPriority()).toStrictEqual(next);
    await flush();
    expect(waiting.state).toBe("resolved");
    expect(expired).toEqual([stale.id]);
    expect(box.poll()).toBeUndefined();
  });

  it("keeps a waiting get waiting when the message handed to it has already expired", async () => {
    const clock = fakeClock(10_000);
    const expired: Message[] = [];
    const box = new Mailbox({ clock, onExpired: (m) => expired.push(m) });
    const get = track(box.get());
    const prio = track(box.getPriority());
    const staleBusiness = msg(0, { ttlMs: 5, timestamp: 0 });
    const stalePriority = msg(1, { ttlMs: 5, timestamp: 0 });
    await box.put(staleBusiness);
    await box.put(stalePriority);
    await flush();
    expect(get.state).toBe("pending");
    expect(prio.state).toBe("pending");
    expect(box.expiredCount).toBe(2);
    expect(expired).toEqual([staleBusiness, stalePriority]);
    const live = msg(0);
    const livePriority = msg(1);
    await box.put(live);
    await box.put(livePriority);
    await flush();
    expect(get.value).toStrictEqual(live);
    expect(prio.value).toStrictEqual(livePriority);
    expect(box.size).toBe(0);
  });

  it("turns a throwing onExpired into a rejected get/put, never a synchronous throw", async () => {
    const clock = fakeClock(100);
    const boom = new Error("observer failed");
    const box = new Mailbox({
      clock,
      onExpired: () => {
        throw boom;
      },
    });
    forceMessage(box, msg(0, { ttlMs: 1, timestamp: 0 }));
    let get: Promise<Message> | undefined;
    expect(() => {
      get = box.get();
    }).not.toThrow();
    await expect(get).rejects.toBe(boom);
    expect(box.expiredCount).toBe(1);

    const waiting = track(box.get());
    let put: Promise<void> | undefined;
    expect(() => {
      put = box.put(msg(0, { ttlMs: 1, timestamp: 0 }));
    }).not.toThrow();
    await expect(put).rejects.toBe(boom);
    expect(box.expiredCount).toBe(2);
    // the waiting get survived and still takes the next live message
    const live = msg(0);
    await box.put(live);
    await flush();
    expect(waiting.value).toStrictEqual(live);
  });
});

describe("Mailbox snapshots", () => {
  it("put and offer enqueue a frozen copy: changing the object afterwards changes nothing queued", async () => {
    const box = new Mailbox();
    const put = { ...msg(0) } as { -readonly [K in keyof Message]: Message[K] };
    const offered = { ...msg(1) } as { -readonly [K in keyof Message]: Message[K] };
    await box.put(put);
    expect(box.offer(offered)).toBe(true);
    const [putId, offeredId] = [put.id, offered.id];
    put.type = "_agency.resume";
    put.priority = 1;
    (put.payload as Record<string, unknown>).n = "changed";
    offered.recipient = "elsewhere";
    const first = box.pollPriority()!;
    const second = box.poll()!;
    expect([first.id, first.recipient, first.priority]).toEqual([offeredId, "box", 1]);
    expect([second.id, second.type, second.priority, typeof second.payload.n]).toEqual([putId, "message", 0, "number"]);
    expect(Object.isFrozen(first) && Object.isFrozen(second)).toBe(true);
    expect(second).not.toBe(put);
  });

  it("reads a getter once: the lane and the reserved-type check see the same value as the taker", async () => {
    const box = new Mailbox();
    let reads = 0;
    const tricky = { ...msg(0) };
    Object.defineProperty(tricky, "type", { get: () => (reads++ === 0 ? "message" : "_agency.resume"), enumerable: true });
    Object.defineProperty(tricky, "priority", { get: () => (reads > 1 ? 1 : 0), enumerable: true });
    await box.put(tricky);
    expect(box.prioritySize).toBe(0);
    const taken = box.poll()!;
    expect([taken.type, taken.type, taken.priority]).toEqual(["message", "message", 0]);
    expect(reads).toBe(1);
  });

  it("a getter that throws rejects the put (never a synchronous throw) and enqueues nothing", async () => {
    const box = new Mailbox();
    const boom = new Error("getter");
    const broken = { ...msg(0) };
    Object.defineProperty(broken, "type", { get: () => { throw boom; }, enumerable: true });
    await expect(box.put(broken)).rejects.toBe(boom);
    expect(() => box.offer(broken)).toThrow(boom);
    expect(box.size + box.prioritySize).toBe(0);
  });
});
