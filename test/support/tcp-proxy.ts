import net from "node:net";

/** A TCP proxy to a server, that can be cut: "the server went away" without stopping the shared server. */
export interface TcpProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  /** Closes the listening socket and destroys every proxied connection: new connections are refused. */
  cut(): Promise<void>;
  /**
   * Destroys every proxied connection, so a client loses what was in flight,
   * and refuses (closes at once) new ones for `refuseMs`; then it proxies again.
   */
  reset(refuseMs?: number): void;
}

/** Starts a proxy on a free port forwarding to `host:port`. */
export async function startTcpProxy(port: number, host = "127.0.0.1"): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let refuseUntil = 0;
  const server = net.createServer((client) => {
    if (Date.now() < refuseUntil) {
      client.destroy();
      return;
    }
    const upstream = net.connect(port, host);
    sockets.add(client).add(upstream);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as net.AddressInfo;
  return {
    port: address.port,
    reset: (refuseMs = 0) => {
      refuseUntil = Date.now() + refuseMs;
      for (const socket of sockets) socket.destroy();
    },
    cut: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
