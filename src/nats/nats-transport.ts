import type { Subscription } from "@nats-io/transport-node";
import type { ControlOperation, HostedAgent, Transport, TransportHost } from "../bus/transport.js";
import { notFound } from "../bus/message-bus.js";
import { InvalidArgumentError, TransportUnavailableError } from "../errors/errors.js";
import { RESOLVED } from "../mailbox/mailbox-internals.js";
import { newSpanId, newTraceId, uuidv7 } from "../message/ids.js";
import type { JsonObject } from "../message/json.js";
import type { Message } from "../message/message.js";
import { decodeMessage, encodeForBus, encodeMessage, type WireSerializer } from "./codec.js";
import { admitInbound, readAnnouncement } from "./inbound.js";
import { BusLink } from "./bus-link.js";
import { openConnection } from "./nats-connection.js";
import { checkTransportOptions, type NatsTransportOptions } from "./nats-transport-options.js";
import { ControlServer, controlSubject, requestControl } from "../bus/control-protocol.js";
import { systemClock } from "../time/clock.js";
import { answerControl, natsControlChannel } from "./remote-control.js";
import { RemoteDirectory } from "./remote-directory.js";
import { ANNOUNCE_SUBJECT, assertSubjectName, DEREGISTER_SUBJECT, REGISTER_SUBJECT, REPLY_PREFIX, subjectOf } from "./subjects.js";

/** An agent's status, as its owner reports it to {@link NatsTransport.status}. */
export interface RemoteAgentStatus {
  /** The agent's name. */
  readonly name: string;
  /** Its `ProcessStatus` (`"RUNNING"`, `"SUSPENDED"` …). */
  readonly status: string;
  /** The pause's id while SUSPENDED (pass it to `resume`), else `null`. */
  readonly suspensionId: string | null;
  /** Why it was suspended, else `null`. */
  readonly reason: string | null;
  /** When the pause began (ISO-8601), else `null`. */
  readonly since: string | null;
}

/** Passed to `decode` for a message on an agent's subject. */
const AGENT_SUBJECT = true;

/** The type of discovery requests and answers (on their own subject, which Python Civitas does not use). */
const DISCOVERY_TYPE = "_agency.register";

/**
 * Connects a runtime to the runtimes of other processes — civitas-ts or
 * Python Civitas 0.3 — through a NATS server, on Python Civitas's subjects
 * and envelope: an agent's mailbox is `civitas.agent.<name>`, each runtime
 * announces its agents (`_agency.register` / `_agency.deregister`) and learns
 * the others', and `send`, `ask`, `broadcast` and `sendCapable` reach agents
 * wherever they run. One transport serves one runtime.
 *
 * @example
 * ```ts
 * import { NatsTransport } from "civitas-ts/nats";
 * const runtime = new Runtime({ root, transport: new NatsTransport({ servers: "127.0.0.1:4222" }) });
 * await runtime.start(); // connects, announces, learns the other runtimes' agents
 * await runtime.ask("pricing", { sku: "A-1" }); // "pricing" may live in another process
 * ```
 */
export class NatsTransport implements Transport {
  /** This runtime's reply address (`_reply.<uuid7>`): replies to its asks come to `civitas.agent.<replyAddress>`. */
  readonly replyAddress = `${REPLY_PREFIX}${uuidv7()}`;
  private readonly serializer: WireSerializer;
  private readonly options: NatsTransportOptions;
  private readonly directory = new RemoteDirectory();
  private readonly agentSubs = new Map<string, Subscription>();
  private readonly controlSubs = new Map<string, Subscription>();
  private controlServer: ControlServer | undefined;
  private link: BusLink | undefined;
  private host: TransportHost | undefined;
  private phase: "new" | "starting" | "running" | "stopped" = "new";
  private stopping: Promise<void> | undefined;
  private reannouncing = false;
  private droppedCount = 0;
  private invalidCount = 0;
  private lastName = "";
  private lastSubject = "";

  /**
   * @throws {@link InvalidArgumentError} for options that cannot work: neither
   *   `servers` nor `connection`, an unknown `serializer`, a negative `discoveryMs` or `sendTimeoutMs`.
   */
  constructor(options: NatsTransportOptions) {
    checkTransportOptions(options);
    this.options = options;
    this.serializer = options.serializer ?? "msgpack";
  }

  /** Whether the NATS connection is up (false before `start`, while reconnecting and after `stop`). */
  get connected(): boolean {
    return this.phase !== "stopped" && this.link?.connected === true;
  }

  /** Messages from the bus that were dropped: control types (never taken from the bus). */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Messages from the bus that were not valid envelopes, and were dropped. */
  get invalid(): number {
    return this.invalidCount;
  }

  /** The names other runtimes on the bus announced, and have not withdrawn. */
  remoteAgents(): string[] {
    return this.directory.names();
  }

  /**
   * Connects (unless given a connection), subscribes to this runtime's
   * agents, announces them, and asks the other civitas-ts runtimes for theirs.
   * Called by `runtime.start()`.
   * @throws {@link TransportUnavailableError} when the server cannot be reached.
   * @throws {@link InvalidArgumentError} when the transport already serves a runtime, or an agent's name cannot be a subject.
   */
  async start(host: TransportHost): Promise<void> {
    if (this.phase !== "new") throw new InvalidArgumentError("transport", "this NatsTransport already serves a runtime; create one transport per runtime");
    this.phase = "starting";
    for (const agent of host.agents()) assertSubjectName(agent.name);
    this.host = host;
    const connection = this.options.connection;
    let nc = connection;
    if (nc === undefined) {
      try {
        nc = await openConnection(this.options);
      } catch (error) {
        this.phase = "stopped";
        throw error;
      }
    }
    this.controlServer = new ControlServer(host);
    this.link = new BusLink(nc, connection === undefined, this.options.sendTimeoutMs ?? 30_000, host.logger, () => this.onReconnect());
    const link = this.link;
    link.listen(REGISTER_SUBJECT, (bytes) => this.onAnnouncement(bytes, true));
    link.listen(DEREGISTER_SUBJECT, (bytes) => this.onAnnouncement(bytes, false));
    link.listen(subjectOf(this.replyAddress), (bytes) => this.onReply(bytes));
    link.listenRequests(ANNOUNCE_SUBJECT, (bytes) => this.onDiscovery(bytes));
    for (const agent of host.agents()) this.subscribeAgent(agent);
    for (const agent of host.agents()) this.announce(agent, true);
    await link.flush();
    await this.discover();
    this.phase = "running";
  }

  /** Withdraws this runtime's agents and lets go of the bus: drains and closes a connection it created, only unsubscribes from one it was given. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    const link = this.link;
    this.phase = "stopped";
    if (link === undefined) return;
    for (const name of [...this.agentSubs.keys()]) this.withdraw(name);
    await link.close();
  }

  hosts(name: string): boolean {
    return this.directory.has(name);
  }

  capable(capability: string): string | undefined {
    return this.directory.capable(capability);
  }

  match(pattern: string): string[] {
    return this.directory.match(pattern);
  }

  /** Publishes `message` to `civitas.agent.<recipient>`; a request's replies are addressed to this runtime's {@link NatsTransport.replyAddress}. */
  send(message: Message, signal?: AbortSignal): Promise<void> {
    try {
      if (!this.directory.has(message.recipient)) throw notFound(message.recipient);
      const link = this.requireLink(`send to '${message.recipient}'`);
      // A request from an agent of this runtime: the answer comes back to this runtime's reply address.
      const outgoing = message.replyTo !== undefined && !message.replyTo.startsWith(REPLY_PREFIX) ? { ...message, replyTo: this.replyAddress } : message;
      return link.publish(this.subjectOf(message.recipient), encodeForBus(outgoing, this.serializer), signal);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what checking and encoding threw, a CivitasError
      return Promise.reject(error);
    }
  }

  /** Sends a control request to `civitas.ctl.<name>`, where only the agent's owner listens (see {@link Transport.control}). */
  async control(name: string, operation: ControlOperation, args: JsonObject, timeoutMs: number, signal?: AbortSignal): Promise<JsonObject> {
    if (!this.directory.has(name)) throw notFound(name);
    const link = this.requireLink(`control '${name}'`);
    link.sendQueued(); // what was sent before the request goes out before it
    return requestControl({ channel: natsControlChannel(link.connection, this.serializer), clock: systemClock, signal }, name, operation, args, timeoutMs);
  }

  /**
   * Asks the runtime that hosts `name` for its status: `{ status, suspensionId,
   * reason, since }` (the last three `null` unless SUSPENDED). A status query
   * across the cluster: combine it with {@link NatsTransport.remoteAgents}.
   * @throws {@link AgentUnreachableError} when no owner answers within `timeoutMs` (default 5000).
   */
  async status(name: string, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<RemoteAgentStatus> {
    const answer = await this.control(name, "status", {}, options.timeoutMs ?? 5000, options.signal);
    const text = (value: unknown): string | null => (typeof value === "string" ? value : null);
    return { name, status: text(answer.status) ?? "UNKNOWN", suspensionId: text(answer.suspensionId), reason: text(answer.reason), since: text(answer.since) };
  }

  forwardReply(reply: Message): boolean {
    const to = reply.recipient;
    if (to === this.replyAddress || this.link === undefined || this.phase === "stopped") return false;
    if (!to.startsWith(REPLY_PREFIX) && !this.directory.has(to)) return false;
    this.link.publish(subjectOf(to), encodeForBus(reply, this.serializer)).catch((error: unknown) => {
      this.host?.logger.warn(`a reply to '${to}' could not be published on the bus`, { error });
    });
    return true;
  }

  added(agent: HostedAgent): void {
    if (this.phase !== "running") return; // start() subscribes and announces every agent the runtime has by then
    try {
      assertSubjectName(agent.name);
    } catch (error) {
      this.host?.logger.error(`agent '${agent.name}' is not reachable over NATS`, { error });
      return;
    }
    this.subscribeAgent(agent);
    this.announce(agent, true);
  }

  removed(name: string): void {
    if (this.phase === "running") this.withdraw(name);
  }

  private withdraw(name: string): void {
    const sub = this.agentSubs.get(name);
    if (sub === undefined) return;
    this.agentSubs.delete(name);
    this.announce({ name, capabilities: [] }, false);
    this.link?.unsubscribe(sub);
    const control = this.controlSubs.get(name);
    this.controlSubs.delete(name);
    if (control !== undefined) this.link?.unsubscribe(control);
  }

  private subscribeAgent(agent: HostedAgent): void {
    const link = this.requireLink("subscribe");
    const name = agent.name;
    // In arrival order; a delivery into a full mailbox waits, and later ones queue behind it in order.
    this.agentSubs.set(name, link.listen(subjectOf(name), (bytes) => this.onAgentMessage(bytes, name)));
    const server = this.controlServer;
    if (server !== undefined) this.controlSubs.set(name, link.listenAsync(controlSubject(name), (bytes) => answerControl(server, bytes, name, this.serializer)));
  }

  private onAgentMessage(bytes: Uint8Array, name: string): void {
    const host = this.host;
    const decoded = this.decode(bytes, name, AGENT_SUBJECT);
    if (host === undefined || decoded === undefined) return;
    const admitted = admitInbound(decoded, name);
    if (typeof admitted === "string") {
      this.droppedCount++;
      host.logger.warn(admitted, { messageId: decoded.id });
      return;
    }
    // Called in arrival order without waiting: the mailbox keeps waiting puts in FIFO order (SPEC 3).
    const delivery = host.deliver(admitted);
    // A message that went straight into the mailbox costs no reaction (and no microtask) here.
    if (delivery === RESOLVED) return;
    delivery.catch((error: unknown) => {
      host.logger.warn(`a message from the bus for '${name}' could not be delivered`, { error, messageId: decoded.id });
    });
  }

  private onReply(bytes: Uint8Array): void {
    const reply = this.decode(bytes, subjectOf(this.replyAddress));
    if (reply !== undefined) this.host?.settleReply(reply);
  }

  private onAnnouncement(bytes: Uint8Array, joined: boolean): void {
    const message = this.decode(bytes, joined ? REGISTER_SUBJECT : DEREGISTER_SUBJECT);
    if (message === undefined) return;
    const agent = readAnnouncement(message.payload);
    if (agent === undefined || this.isLocal(agent.name)) return;
    if (!joined) {
      this.directory.remove(agent.name);
      return;
    }
    // A runtime that started after this one (Python's announce once) learns this runtime's agents from a re-announcement.
    if (this.directory.add(agent)) this.reannounceSoon();
  }

  /** Answers a starting runtime's discovery request with this runtime's agents. */
  private onDiscovery(bytes: Uint8Array): Uint8Array | undefined {
    const request = this.decode(bytes, ANNOUNCE_SUBJECT);
    if (request === undefined || request.sender === this.replyAddress || this.host === undefined) return undefined;
    const agents = [...this.agentSubs.keys()].map((name) => this.registration(name));
    return encodeMessage(this.envelope(DISCOVERY_TYPE, { agents }, this.replyAddress), this.serializer);
  }

  /** Asks the civitas-ts runtimes already on the bus for their agents, and waits for their answers (bounded). */
  private async discover(): Promise<void> {
    const link = this.requireLink("discover");
    const request = encodeMessage(this.envelope(DISCOVERY_TYPE, {}, this.replyAddress), this.serializer);
    for (const answer of await link.requestMany(ANNOUNCE_SUBJECT, request, this.options.discoveryMs ?? 2000)) {
      const message = this.decode(answer, ANNOUNCE_SUBJECT);
      const agents = message?.payload.agents;
      if (!Array.isArray(agents)) continue;
      for (const entry of agents) {
        const agent = typeof entry === "object" && entry !== null && !Array.isArray(entry) ? readAnnouncement(entry) : undefined;
        if (agent !== undefined && !this.isLocal(agent.name)) this.directory.add(agent);
      }
    }
  }

  private reannounceSoon(): void {
    if (this.reannouncing) return;
    this.reannouncing = true;
    setTimeout(() => {
      this.reannouncing = false;
      if (this.phase !== "running") return;
      for (const name of this.agentSubs.keys()) this.announce({ name, capabilities: this.capabilitiesOf(name) }, true);
    }, 10).unref();
  }

  private onReconnect(): void {
    // The server may have restarted, and runtimes may have come and gone meanwhile: announce again.
    if (this.phase !== "running") return;
    for (const name of this.agentSubs.keys()) this.announce({ name, capabilities: this.capabilitiesOf(name) }, true);
  }

  private announce(agent: HostedAgent, joined: boolean): void {
    const payload = joined ? this.registration(agent.name, agent.capabilities) : { name: agent.name, capabilities: [], capability_metadata: {} };
    const bytes = encodeMessage(this.envelope(joined ? "_agency.register" : "_agency.deregister", payload), this.serializer);
    this.link?.publish(joined ? REGISTER_SUBJECT : DEREGISTER_SUBJECT, bytes).catch((error: unknown) => {
      this.host?.logger.warn(`the ${joined ? "registration" : "deregistration"} of '${agent.name}' could not be published on the bus`, { error });
    });
  }

  private registration(name: string, capabilities: readonly string[] = this.capabilitiesOf(name)): JsonObject {
    return { name, capabilities: [...capabilities], capability_metadata: {} };
  }

  private capabilitiesOf(name: string): readonly string[] {
    return this.host?.agents().find((agent) => agent.name === name)?.capabilities ?? [];
  }

  /** An announcement envelope as Python writes one: empty sender and recipient (a discovery request names its runtime's reply address, so it can tell its own). */
  private envelope(type: string, payload: JsonObject, sender = ""): Message {
    const timestamp = Date.now();
    return { id: uuidv7(timestamp), type, sender, recipient: "", payload, timestamp, traceId: newTraceId(), spanId: newSpanId(), attempt: 0, priority: 1 };
  }

  private isLocal(name: string): boolean {
    return this.agentSubs.has(name) || this.host?.agents().some((agent) => agent.name === name) === true;
  }

  /** Decodes an envelope that came on `subject` (on `subjectOf(subject)` when `agent`: the name is made a subject only to report an error). */
  private decode(bytes: Uint8Array, subject: string, agent = false): Message | undefined {
    try {
      return decodeMessage(bytes);
    } catch (error) {
      this.invalidCount++;
      this.host?.logger.warn(`a message on '${agent ? subjectOf(subject) : subject}' is not a valid envelope and was dropped`, { error });
      return undefined;
    }
  }

  /** The subject of `name`'s mailbox; the last one is kept, so a run of sends to one agent builds (and checks) its subject once. */
  private subjectOf(name: string): string {
    if (name !== this.lastName) {
      this.lastName = name;
      this.lastSubject = subjectOf(name);
    }
    return this.lastSubject;
  }

  private requireLink(what: string): BusLink {
    if (this.link === undefined || this.phase === "stopped") {
      throw new TransportUnavailableError(`NatsTransport cannot ${what}: it is ${this.phase === "stopped" ? "stopped" : "not started"}; start the runtime it was given to`);
    }
    return this.link;
  }
}
