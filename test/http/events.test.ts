/**
 * `GET /api/v1/events`: server-sent events of every status change, a
 * keep-alive on idle streams, a bound on open streams, and no listener left
 * behind once a stream closes.
 */
import { request as httpRequest, type ClientRequest } from "node:http";
import { describe, expect, it } from "vitest";
import { ProcessStatus } from "../../src/index.js";
import { runtimes, until } from "../support/runtimes.js";
import { call, headerIdentity, inboxes, LIMIT_CENTS, Payer, signIn, USER_HEADER } from "./support.js";

const runtime = runtimes();
const serve = inboxes();

/** An open event stream: the raw text received so far, and a way to close it. */
interface Stream {
  readonly status: number;
  text(): string;
  close(): void;
}

function openStream(base: string, identity: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    let received = "";
    const req: ClientRequest = httpRequest(new URL("api/v1/events", base), { headers: { [USER_HEADER]: identity, accept: "text/event-stream" } }, (res) => {
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (received += chunk));
      res.on("error", () => undefined);
      resolve({ status: res.statusCode ?? 0, text: () => received, close: () => req.destroy() });
    });
    req.on("error", (error) => (received === "" ? reject(error) : undefined));
    req.end();
  });
}

/** The `agent.status` events in `text`, as `[agent, from, to]`. */
function statusEvents(text: string): [string, string, string][] {
  return [...text.matchAll(/event: agent\.status\ndata: (.*)\n\n/g)].map((match) => {
    const data = JSON.parse(match[1] ?? "{}") as { agent: string; from: string; to: string };
    return [data.agent, data.from, data.to];
  });
}

describe("GET /api/v1/events", () => {
  it("streams a pause and its resume through the API as agent.status events", async () => {
    const payer = new Payer("payer");
    const rt = runtime([payer]);
    await rt.start();
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const stream = await openStream(server.url, "alice");
    expect(stream.status).toBe(200);
    await until(() => stream.text().includes(": connected"));
    await rt.send("payer", { invoice: "INV-1", cents: LIMIT_CENTS * 3 });
    await until(() => statusEvents(stream.text()).length === 1, "the pause event");
    expect(statusEvents(stream.text())).toEqual([["payer", ProcessStatus.RUNNING, ProcessStatus.SUSPENDED]]);
    const alice = await signIn(server.url, "alice");
    const [pause] = rt.listSuspended();
    await alice.post("/api/v1/agents/payer/resume", { suspensionId: pause?.suspensionId });
    await until(() => statusEvents(stream.text()).length === 2, "the resume event");
    expect(statusEvents(stream.text())[1]).toEqual(["payer", ProcessStatus.SUSPENDED, ProcessStatus.RUNNING]);
    stream.close();
  });

  it("sends a keep-alive comment on an idle stream", async () => {
    const rt = runtime([new Payer("payer")]);
    await rt.start();
    const server = await serve({ runtime: rt, authenticate: headerIdentity, keepAliveMs: 20 });
    const stream = await openStream(server.url, "alice");
    await until(() => stream.text().includes(": keep-alive\n\n"), "a keep-alive");
    stream.close();
  });

  it("refuses a stream beyond maxEventStreams with 503 EVENT_STREAMS_FULL, and frees the slot and the listener on close", async () => {
    const rt = runtime([new Payer("payer")]);
    await rt.start();
    const baseline = rt.listenerCount("agent.status");
    const server = await serve({ runtime: rt, authenticate: headerIdentity, maxEventStreams: 2 });
    const first = await openStream(server.url, "alice");
    const second = await openStream(server.url, "bob");
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(rt.listenerCount("agent.status")).toBe(baseline + 2);
    const third = await call(server.url, "GET", "/api/v1/events", { [USER_HEADER]: "carol" });
    expect([third.status, third.json.error?.code]).toEqual([503, "EVENT_STREAMS_FULL"]);
    first.close();
    await until(() => rt.listenerCount("agent.status") === baseline + 1, "the closed stream's listener removed");
    const again = await openStream(server.url, "carol");
    expect(again.status).toBe(200);
    again.close();
    second.close();
    await until(() => rt.listenerCount("agent.status") === baseline, "every listener removed");
  });

  it("ends open streams when the server closes", async () => {
    const rt = runtime([new Payer("payer")]);
    await rt.start();
    const baseline = rt.listenerCount("agent.status");
    const server = await serve({ runtime: rt, authenticate: headerIdentity });
    const stream = await openStream(server.url, "alice");
    expect(rt.listenerCount("agent.status")).toBe(baseline + 1);
    await server.close();
    await until(() => stream.text().includes(": connected"));
    expect(rt.listenerCount("agent.status")).toBe(baseline);
  });
});
