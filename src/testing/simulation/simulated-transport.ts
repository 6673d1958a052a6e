import { ControlServer, controlSubject } from "../../bus/control-protocol.js";
import { notFound } from "../../bus/message-bus.js";
import type { HostedAgent, Transport, TransportHost } from "../../bus/transport.js";
import type { JsonObject } from "../../message/json.js";
import type { Message } from "../../message/message.js";
import type { Clock } from "../../time/clock.js";
import type { SimulatedNetwork } from "./simulated-network.js";

/**
 * The transport of a simulation's runtime: the owner's side of control
 * across processes. For each agent it hosts, a real {@link ControlServer}
 * answers `civitas.ctl.<name>` on the simulated bus, deciding through the
 * runtime's `TransportHost` — `runtime.suspend`/`resume`/`deny`,
 * `authorizeResume`, the audit sink — as `NatsTransport` does. No other
 * runtime hosts agents on this bus, so a send to a name the runtime does not
 * host is `AGENT_NOT_FOUND`, as without a transport.
 * @internal
 */
export class SimulatedTransport implements Transport {
  private server: ControlServer | undefined;
  private readonly names = new Set<string>();

  constructor(
    private readonly network: SimulatedNetwork,
    private readonly epoch: number,
    private readonly clock: Clock,
  ) {}

  start(host: TransportHost): Promise<void> {
    this.server = new ControlServer(host, this.clock);
    for (const agent of host.agents()) this.added(agent);
    return Promise.resolve();
  }

  stop(): Promise<void> {
    for (const name of [...this.names]) this.removed(name);
    this.server = undefined;
    return Promise.resolve();
  }

  hosts(): boolean {
    return false;
  }

  send(message: Message): Promise<void> {
    return Promise.reject(notFound(message.recipient));
  }

  forwardReply(): boolean {
    return false;
  }

  control(name: string): Promise<JsonObject> {
    return Promise.reject(notFound(name));
  }

  capable(): string | undefined {
    return undefined;
  }

  match(): string[] {
    return [];
  }

  added(agent: HostedAgent): void {
    const server = this.server;
    if (server === undefined) return; // start() subscribes every agent the runtime has by then
    this.names.add(agent.name);
    this.network.subscribe(agent.name, controlSubject(agent.name), this.epoch, (request) => server.answer(request, agent.name));
  }

  removed(name: string): void {
    if (!this.names.delete(name)) return;
    this.network.unsubscribe(name, controlSubject(name), this.epoch);
  }
}
