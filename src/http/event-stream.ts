import type { ServerResponse } from "node:http";
import type { ApprovalView } from "../approvals/approval-types.js";
import type { ProcessStatus } from "../contracts/process-status.js";
import { approvalItem } from "./approval-routes.js";
import type { Runtime } from "../runtime/runtime.js";
import { EventStreamsFullError } from "./http-errors.js";
import { writeHead } from "./respond.js";
import { route, type Route } from "./route.js";

/**
 * The server-sent event streams of `GET /api/v1/events`: every change the
 * runtime announces, as `event: <name>` with a JSON `data:` line —
 * `agent.status` (`{ agent, from, to }`) and, with approvals, `approval.changed`
 * (the approval's view). An idle stream gets a comment every `keepAliveMs`.
 * @internal
 */
export class EventStreams {
  /** Each open stream, with what ends its subscription. */
  private readonly open = new Map<ServerResponse, () => void>();

  constructor(
    private readonly runtime: Runtime,
    private readonly maxStreams: number,
    private readonly keepAliveMs: number,
  ) {}

  /** The route that opens a stream. */
  route(): Route {
    return route("GET", "/api/v1/events", async ({ req, res }) => {
      if (this.open.size >= this.maxStreams) throw new EventStreamsFullError(this.maxStreams);
      writeHead(res, 200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      });
      res.write("retry: 2000\n: connected\n\n");
      const send = (event: string, data: unknown): void => {
        res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      };
      const onStatus = (agent: string, from: ProcessStatus, to: ProcessStatus): void => send("agent.status", { agent, from, to });
      const onApproval = (view: ApprovalView): void => send("approval.changed", approvalItem(view));
      this.runtime.on("agent.status", onStatus);
      this.runtime.on("approval.changed", onApproval);
      const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), this.keepAliveMs);
      keepAlive.unref();
      const close = (): void => {
        clearInterval(keepAlive);
        this.runtime.off("agent.status", onStatus);
        this.runtime.off("approval.changed", onApproval);
        this.open.delete(res);
      };
      this.open.set(res, close);
      req.once("close", close);
      res.once("close", close);
      return undefined;
    });
  }

  /** Ends every open stream (the server is closing). */
  closeAll(): void {
    for (const [res, close] of [...this.open]) {
      close();
      res.end();
    }
  }
}
