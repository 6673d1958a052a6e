import { spawn, type ChildProcess } from "node:child_process";
import { answers, freePort } from "../../support/ports.js";

/** A nats-server of a test's own, on a free port: the shared one on 4222 is never stopped. */
export interface OwnNatsServer {
  readonly port: number;
  readonly url: string;
  /** Starts (or starts again) the server on the same port and resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it (SIGKILL) and resolves once it exited. */
  stop(): Promise<void>;
}

/** Finds a free port and returns a server for it, not yet started. */
export async function ownNatsServer(): Promise<OwnNatsServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  return {
    port,
    url: `127.0.0.1:${port}`,
    async start() {
      child = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
      const deadline = Date.now() + 10_000;
      while (!(await answers(port))) {
        if (Date.now() > deadline) throw new Error(`nats-server did not start on port ${port}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async stop() {
      const running = child;
      if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once("exit", resolve));
      running.kill("SIGKILL");
      await exited;
    },
  };
}
