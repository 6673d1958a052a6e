import { createServer, type Server } from "node:http";
import { createServer as createTlsServer, type ServerOptions as TlsServerOptions } from "node:https";
import type { AddressInfo } from "node:net";
import { createInboxHandler } from "./inbox-handler.js";
import type { InboxOptions } from "./inbox-options.js";

/** Options of {@link serveInbox}: the handler's, and where to listen. */
export interface ServeInboxOptions extends InboxOptions {
  /** The port; 0 picks a free one. @defaultValue 0 */
  port?: number;
  /** The address to listen on. @defaultValue "127.0.0.1" (this machine only) */
  host?: string;
  /** Serve HTTPS with this certificate and key (`node:https` options) instead of plain HTTP. @defaultValue none: plain HTTP */
  tls?: TlsServerOptions;
}

/** A running inbox server. */
export interface InboxServer {
  /** Where it answers: `http://127.0.0.1:<port>/`. */
  readonly url: string;
  /** The `node:http` (or `node:https`) server. */
  readonly server: Server;
  /** Ends the event streams, stops listening, closes the connections. Idempotent. */
  close(): Promise<void>;
}

/**
 * Serves the inbox (see {@link createInboxHandler}) on a port of its own.
 * Resolves once it listens.
 * @throws (rejects) {@link InvalidArgumentError} for bad options; the listen error (`EADDRINUSE` …)
 * @example
 * ```ts
 * const inbox = await serveInbox({ runtime, authenticate, port: 8080 });
 * console.log(`approvers: open ${inbox.url}`);
 * ```
 */
export async function serveInbox(options: ServeInboxOptions): Promise<InboxServer> {
  const { port = 0, host = "127.0.0.1", tls, ...handlerOptions } = options;
  const handler = createInboxHandler(handlerOptions);
  const server: Server = tls === undefined ? createServer(handler) : createTlsServer(tls, handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `${tls === undefined ? "http" : "https"}://${shownHost}:${address.port}/`,
    server,
    close() {
      closing ??= new Promise<void>((resolve) => {
        handler.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
