/**
 * `civitas serve <topology> --module <file>`: builds a runtime from a
 * topology file with the agent classes, `authenticate` and runtime options
 * an application module exports, starts it, and serves the approver inbox
 * (`civitas-ts/http`) until SIGINT or SIGTERM. The only long-running
 * command: it returns its result once the inbox listens, and stops the
 * inbox and the runtime on the signal.
 * @module
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Authenticate, InboxOptions } from "../http/inbox-options.js";
import { serveInbox, type ServeInboxOptions } from "../http/serve-inbox.js";
import { Runtime } from "../runtime/runtime.js";
import type { AgentClasses, FromTopologyOptions } from "../runtime/runtime-options.js";
import { CliError, ExitCode, usageError, type CommandResult } from "./output.js";

/**
 * What the `--module` of `civitas serve` exports (an ES module; `.js`/`.mjs`
 * under plain Node, `.ts` too when run under tsx).
 */
export interface ServeModule {
  /** Says who sent each request (required: the inbox has no anonymous mode). */
  readonly authenticate: Authenticate;
  /** The agent classes the topology names in `type`, by that name. */
  readonly agents?: AgentClasses;
  /** More runtime options: `store`, `auditSink`, `approvalPolicy`, `transport` … */
  readonly options?: Omit<FromTopologyOptions, "agents">;
  /** More inbox options: `audit`, `allowedOrigins`, `challenge`, `csrfSecret` … */
  readonly inbox?: Omit<InboxOptions, "runtime" | "authenticate">;
}

/** The command line of `civitas serve`, as parsed. */
export interface ServeArguments {
  readonly topology: string;
  readonly module: string | undefined;
  readonly port: string | undefined;
  readonly host: string | undefined;
  readonly tlsKey: string | undefined;
  readonly tlsCert: string | undefined;
}

function readText(file: string, what: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new CliError(ExitCode.CORRUPT, "UNREADABLE", `cannot read the ${what} ${file}: ${(error as Error).message}`, { cause: error });
  }
}

function portOf(text: string | undefined): number {
  if (text === undefined) return 8080;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65_535) throw usageError(`--port takes a port number from 0 to 65535 (0: any free one), got '${text}'`);
  return port;
}

async function loadModule(file: string): Promise<ServeModule> {
  let loaded: Partial<ServeModule>;
  try {
    loaded = (await import(pathToFileURL(path.resolve(file)).href)) as Partial<ServeModule>;
  } catch (error) {
    throw new CliError(ExitCode.CORRUPT, "UNREADABLE", `cannot load --module ${file}: ${(error as Error).message}`, { cause: error });
  }
  if (typeof loaded.authenticate !== "function") {
    throw usageError(`--module ${file} must export authenticate(request) => identity | undefined, which says who sent each request (the inbox has no anonymous mode); it exports ${Object.keys(loaded).join(", ") || "nothing"}`);
  }
  for (const key of ["agents", "options", "inbox"] as const) {
    if (loaded[key] !== undefined && (typeof loaded[key] !== "object" || loaded[key] === null)) throw usageError(`--module ${file}: the export '${key}' must be an object`);
  }
  return loaded as ServeModule;
}

/**
 * Starts the runtime and the inbox; resolves with what to print once the
 * inbox listens, and stops both on SIGINT or SIGTERM (then exits 0).
 * @throws {@link CliError} USAGE (no `--module`, no `authenticate`, a bad port, half a TLS pair), UNREADABLE (a file or the module)
 */
export async function serve(args: ServeArguments): Promise<CommandResult> {
  if (args.module === undefined) throw usageError("civitas serve needs --module <file>: an ES module that exports authenticate(request) (required) and the agent classes the topology names (agents)");
  if ((args.tlsKey === undefined) !== (args.tlsCert === undefined)) throw usageError("--tls-key and --tls-cert go together (a PEM private key and its certificate)");
  const port = portOf(args.port);
  const topology = readText(args.topology, "topology file");
  const tls = args.tlsKey === undefined || args.tlsCert === undefined ? undefined : { key: readText(args.tlsKey, "TLS key"), cert: readText(args.tlsCert, "TLS certificate") };
  const app = await loadModule(args.module);
  const runtime = Runtime.fromTopology(topology, { ...app.options, agents: app.agents ?? {} });
  await runtime.start();
  const options: ServeInboxOptions = { ...app.inbox, runtime, authenticate: app.authenticate, port, ...(args.host === undefined ? {} : { host: args.host }), ...(tls === undefined ? {} : { tls }) };
  let inbox: Awaited<ReturnType<typeof serveInbox>>;
  try {
    inbox = await serveInbox(options);
  } catch (error) {
    await runtime.stop();
    throw error;
  }
  const stop = (): void => {
    void inbox
      .close()
      .then(() => runtime.stop())
      .then(
        () => process.exit(0),
        () => process.exit(ExitCode.CORRUPT),
      );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return { exitCode: ExitCode.OK, text: `civitas serve: the inbox is at ${inbox.url} (Ctrl-C stops it)`, json: { url: inbox.url } };
}
