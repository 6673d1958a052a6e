import { ControlServer, controlSubject, requestControl } from "../../bus/control-protocol.js";
import { notFound } from "../../bus/message-bus.js";
import type { ControlOperation, HostedAgent, Transport, TransportHost } from "../../bus/transport.js";
import type { JsonObject } from "../../message/json.js";
import type { Message } from "../../message/message.js";
import { globToRegExp } from "../../bus/glob.js";
import { admitInbound } from "../../nats/inbound.js";
import type { Clock } from "../../time/clock.js";
import type { SimulatedNetwork } from "./simulated-network.js";

/** Where replies to a node's asks come back, as `NatsTransport`'s `_reply.<uuid7>`. */
const REPLY_PREFIX = "_reply.";

/** The business subject of `name`, as on NATS. @internal */
export function agentSubject(name: string): string {
  return `civitas.agent.${name}`;
}

/**
 * The transport of a simulation's runtime (the main one, or a node's), on
 * the simulated bus, with `NatsTransport`'s semantics:
 *
 * - control: for each agent it hosts, a real {@link ControlServer} answers
 *   `civitas.ctl.<name>`, deciding through the runtime's `TransportHost`
 *   (`authorizeResume`, the audit sink), and `control()` of an agent another
 *   node hosts goes through the real `requestControl`;
 * - business: each hosted agent's subject takes messages from the other
 *   nodes; `send()` publishes to an agent another node announced (a request
 *   is answered to this incarnation's reply address); replies and refusals
 *   (`_agency.error`) to another node's asks go back over the bus. An ask
 *   whose answer is lost times out by the asker's `timeoutMs`, as over NATS.
 *
 * - a message arriving for an agent goes through `NatsTransport`'s filter
 *   (`admitInbound`): an `_agency.*` control type other than a heartbeat is
 *   dropped and logged, never delivered;
 * - `capable()` and `match()` see the agents the other nodes announced (and
 *   did not withdraw: a killed node withdraws nothing), with a round-robin
 *   turn per capability, so `sendCapable` and `broadcast` reach across
 *   nodes as over NATS.
 *
 * With a single runtime no other node hosts anything: a send to a name the
 * runtime does not host is `AGENT_NOT_FOUND`, as without a transport, and
 * `capable()` and `match()` find nobody.
 * @internal
 */
export class SimulatedTransport implements Transport {
  private server: ControlServer | undefined;
  private host: TransportHost | undefined;
  private readonly names = new Set<string>();
  /** The round-robin turn per capability of `capable()`, as `NatsTransport`'s directory keeps one. */
  private readonly turns = new Map<string, number>();
  private droppedCount = 0;
  /** This incarnation's reply address: replies to its asks come to `civitas.agent.<replyAddress>`. */
  private readonly replyAddress: string;

  constructor(
    private readonly network: SimulatedNetwork,
    private readonly epoch: number,
    private readonly clock: Clock,
    private readonly node = "main",
    incarnation = epoch,
  ) {
    this.replyAddress = `${REPLY_PREFIX}${node}.${incarnation}`;
  }

  /** Messages from the bus that were dropped: control types (never taken from the bus), as `NatsTransport.dropped`. */
  get dropped(): number {
    return this.droppedCount;
  }

  start(host: TransportHost): Promise<void> {
    this.host = host;
    this.server = new ControlServer(host, this.clock);
    this.network.listen(agentSubject(this.replyAddress), this.node, this.epoch, (reply) => host.settleReply(reply));
    for (const agent of host.agents()) this.added(agent);
    return Promise.resolve();
  }

  stop(): Promise<void> {
    for (const name of [...this.names]) this.removed(name);
    this.server = undefined;
    return Promise.resolve();
  }

  hosts(name: string): boolean {
    const node = this.network.nodeOf(agentSubject(name));
    return node !== undefined && node !== this.node;
  }

  send(message: Message): Promise<void> {
    if (!this.hosts(message.recipient)) return Promise.reject(notFound(message.recipient));
    // A request from this runtime: its answer comes back to this incarnation's reply address.
    const outgoing = message.replyTo != null && !message.replyTo.startsWith(REPLY_PREFIX) ? { ...message, replyTo: this.replyAddress } : message;
    this.network.publish(this.node, agentSubject(message.recipient), outgoing);
    return Promise.resolve();
  }

  forwardReply(reply: Message): boolean {
    const to = reply.recipient;
    if (to === this.replyAddress || this.server === undefined) return false;
    if (!to.startsWith(REPLY_PREFIX) && !this.hosts(to)) return false;
    this.network.publish(this.node, agentSubject(to), reply);
    return true;
  }

  control(name: string, operation: ControlOperation, args: JsonObject, timeoutMs: number, signal?: AbortSignal): Promise<JsonObject> {
    if (!this.hosts(name) || !this.network.knows(name)) return Promise.reject(notFound(name));
    return requestControl({ channel: this.network.channel(this.node, this.clock), clock: this.clock, signal }, name, operation, args, timeoutMs);
  }

  capable(capability: string): string | undefined {
    const names: string[] = [];
    for (const agent of this.network.announcedBesides(this.node)) if (agent.capabilities.includes(capability)) names.push(agent.name);
    if (names.length === 0) return undefined;
    const turn = (this.turns.get(capability) ?? 0) % names.length;
    this.turns.set(capability, turn + 1);
    return names[turn];
  }

  match(pattern: string): string[] {
    const regexp = globToRegExp(pattern);
    const names: string[] = [];
    for (const agent of this.network.announcedBesides(this.node)) if (regexp.test(agent.name)) names.push(agent.name);
    return names;
  }

  added(agent: HostedAgent): void {
    const server = this.server;
    const host = this.host;
    if (server === undefined || host === undefined) return; // start() subscribes every agent the runtime has by then
    this.names.add(agent.name);
    this.network.subscribe(agent.name, controlSubject(agent.name), this.epoch, (request) => server.answer(request, agent.name), this.node, agent.capabilities);
    this.network.listen(agentSubject(agent.name), this.node, this.epoch, (arrived) => {
      // As NatsTransport: control types are never taken from the bus (only the owner's runtime acts on them).
      const message = admitInbound(arrived, agent.name);
      if (typeof message === "string") {
        this.droppedCount++;
        host.logger.warn(message, { messageId: arrived.id });
        return;
      }
      // In arrival order without waiting, as NatsTransport: the mailbox keeps waiting puts in FIFO order.
      host.deliver(message).catch((error: unknown) => host.logger.warn(`a message from the bus for '${agent.name}' could not be delivered`, { error, messageId: message.id }));
    });
  }

  removed(name: string): void {
    if (!this.names.delete(name)) return;
    this.network.unsubscribe(name, controlSubject(name), this.epoch);
    this.network.unlisten(agentSubject(name), this.epoch);
  }
}
