/**
 * What the HTTP tests share: a payments agent that pauses itself for large
 * payments (checkpoint-and-return) and tells the sender about a denial, an
 * inbox served on a loopback port for each test, and a raw HTTP client that
 * sends exactly the headers it is given.
 */
import { request as httpRequest } from "node:http";
import { afterEach } from "vitest";
import { AgentProcess, ProcessStatus, type ApprovalPolicy, type Message, type Runtime, type SuspensionMarker } from "../../src/index.js";
import { serveInbox, type InboxServer, type ServeInboxOptions } from "../../src/entries/http.js";
import { until, type RuntimeFactory } from "../support/runtimes.js";

export type Payment = { invoice: string; cents: number };
type PayerState = { pending: Payment | null; paid: (Payment & { approvedBy: string })[]; denied: (Payment & { decider: string; reason: string })[] };

/** Payments above this many cents pause the agent until a person decides. */
export const LIMIT_CENTS = 100_000;

/**
 * Pays small payments at once; a large one is stored as pending, the agent
 * suspends itself and returns. `onResume` pays it (once), `onDeny` drops it
 * and sends `{ invoice, decider, reason }` as a `payment.denied` message to
 * whoever asked for the payment (`notify` in the payload).
 */
export class Payer extends AgentProcess<PayerState> {
  override state: PayerState = { pending: null, paid: [], denied: [] };
  /** Every time the approved action ran, by invoice: must never exceed 1 per invoice. */
  readonly executions = new Map<string, number>();
  private notify: string | undefined;

  override async handle(message: Message): Promise<Message | void> {
    const payment: Payment = { invoice: String(message.payload.invoice), cents: Number(message.payload.cents) };
    this.notify = typeof message.payload.notify === "string" ? message.payload.notify : undefined;
    if (payment.cents <= LIMIT_CENTS) {
      this.pay(payment, "policy");
      return;
    }
    this.state.pending = payment;
    this.suspend(`approve payment ${payment.invoice}: ${(payment.cents / 100).toFixed(2)}`);
    await this.checkpoint();
  }

  override async onResume(approver: string): Promise<void> {
    const pending = this.state.pending;
    if (pending === null) return;
    this.state.pending = null;
    this.pay(pending, approver);
    await this.checkpoint();
  }

  override async onDeny(decider: string, _marker: SuspensionMarker, reason: string): Promise<void> {
    const pending = this.state.pending;
    if (pending === null) return;
    this.state.pending = null;
    this.state.denied.push({ ...pending, decider, reason });
    await this.checkpoint();
    if (this.notify !== undefined) await this.send(this.notify, { invoice: pending.invoice, decider, reason }, { type: "payment.denied" });
  }

  private pay(payment: Payment, approvedBy: string): void {
    this.executions.set(payment.invoice, (this.executions.get(payment.invoice) ?? 0) + 1);
    this.state.paid.push({ ...payment, approvedBy });
  }
}

/**
 * Starts one `Payer` ("payer") alone on a runtime made by `runtime` and sends
 * it the large payment `invoice`; resolves once the payer is SUSPENDED on it.
 */
export async function pausedPayer(runtime: RuntimeFactory, invoice: string): Promise<{ rt: Runtime; payer: Payer }> {
  const payer = new Payer("payer");
  const rt = runtime([payer]);
  await rt.start();
  await rt.send("payer", { invoice, cents: LIMIT_CENTS + 1 });
  await until(() => payer.status === ProcessStatus.SUSPENDED);
  return { rt, payer };
}

/** Records every message it gets. */
export class Inbox extends AgentProcess {
  readonly received: Message[] = [];
  override async handle(message: Message): Promise<void> {
    this.received.push(message);
  }
}

/** The identity header the tests' `authenticate` trusts, as a reverse proxy would set it. */
export const USER_HEADER = "x-test-user";

/** An `authenticate` that takes the identity from {@link USER_HEADER}. */
export const headerIdentity: ServeInboxOptions["authenticate"] = (req) => {
  const user = req.headers[USER_HEADER];
  return typeof user === "string" ? user : undefined;
};

/** Serves inboxes for a test and closes them after it (register at the top level, after `runtimes()`). */
export function inboxes(): (options: ServeInboxOptions) => Promise<InboxServer> {
  const open: InboxServer[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((server) => server.close()));
  });
  return async (options) => {
    const server = await serveInbox(options);
    open.push(server);
    return server;
  };
}

/** What {@link call} got back. */
export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** The body parsed as JSON (`undefined` when it is not JSON). */
  readonly json: { error?: { code: string; message: string } } & Record<string, unknown>;
}

/** Sends one request with exactly `headers` (and `body`, bytes or a string, with its content-length unless `headers` says chunked) and reads the whole answer. */
export function call(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<Answer> {
  const url = new URL(path.replace(/^\//, ""), base);
  return new Promise((resolve, reject) => {
    const sized = body === undefined || headers["transfer-encoding"] !== undefined ? headers : { "content-length": String(Buffer.byteLength(body)), ...headers };
    const req = httpRequest(url, { method, headers: sized }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: Answer["json"];
        try {
          json = JSON.parse(text) as Answer["json"];
        } catch {
          json = {};
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** A signed-in approver: GETs with the identity header, POSTs with the session's CSRF token and JSON. */
export interface Approver {
  readonly identity: string;
  readonly csrfToken: string;
  get(path: string): Promise<Answer>;
  post(path: string, body: unknown, extraHeaders?: Record<string, string>): Promise<Answer>;
}

/** Signs `identity` in at `base` (fetches its CSRF token from `GET /api/v1/session`). */
export async function signIn(base: string, identity: string): Promise<Approver> {
  const session = await call(base, "GET", "/api/v1/session", { [USER_HEADER]: identity });
  if (session.status !== 200) throw new Error(`sign-in failed: ${session.status} ${session.text}`);
  const csrfToken = String(session.json.csrfToken);
  return {
    identity,
    csrfToken,
    get: (path) => call(base, "GET", path, { [USER_HEADER]: identity }),
    post: (path, body, extraHeaders = {}) =>
      call(base, "POST", path, { [USER_HEADER]: identity, "content-type": "application/json", "x-civitas-csrf": csrfToken, ...extraHeaders }, JSON.stringify(body)),
  };
}

/** Two stages: one of the finance approvers, then the CFO. */
export const TWO_STAGES = Object.freeze({
  stages: [
    { name: "finance", approvers: ["ana", "ben"], min: 1 },
    { name: "cfo", approvers: ["carol"], min: 1 },
  ],
});

const ALLOW = Object.freeze({ decision: "allow" } as const);

/** Holds every `pay` message of 1,000.00 or more for {@link TWO_STAGES}. */
export const treasuryPolicy: ApprovalPolicy = ({ message }) =>
  message.type === "pay" && Number(message.payload.amountCents) >= 100_000 ? { decision: "require_approval", reason: "large payment", rule: TWO_STAGES } : ALLOW;

/** Pays what reaches its handler, and counts how often each message was handled (must never exceed 1). */
export class Treasury extends AgentProcess {
  readonly handled = new Map<string, number>();
  override async handle(message: Message): Promise<Message | void> {
    this.handled.set(message.id, (this.handled.get(message.id) ?? 0) + 1);
    return this.reply({ paid: message.payload.amountCents ?? null, approvedBy: this.approval?.decidedBy ?? null });
  }
}

/** Polls the async `predicate` every 5 ms until it holds; rejects after `timeoutMs`. */
export async function eventually(predicate: () => Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
