import { ControlAttemptError, type ControlChannel } from "../../bus/control-protocol.js";
import type { Message } from "../../message/message.js";
import { fromWire } from "../../message/from-wire.js";
import { toWire } from "../../message/to-wire.js";
import type { Clock, TimerHandle } from "../../time/clock.js";
import type { Gate, GateBoard, GateOutcome } from "./gate.js";
import type { SimulationChoice, SimulationFaultKind } from "./types.js";

/** What answers requests on a subject: the owner's control server, the runtime incarnation it belongs to, and its node. */
interface Subscription {
  readonly answer: (request: Message) => Promise<Message>;
  readonly epoch: number;
  readonly node: string;
}

/** An agent some runtime announced: its node, and the capabilities `sendCapable` finds it by. */
interface Announced {
  readonly node: string;
  readonly capabilities: readonly string[];
}

/** What takes business messages (and replies) on an agent's subject: a runtime incarnation of a node. */
interface Inbox {
  readonly take: (message: Message) => void;
  readonly epoch: number;
  readonly node: string;
}

/** The epoch of a business packet: it belongs to no runtime incarnation, so no kill loses it (the recipient's subscription decides when it arrives). */
export const BUS_EPOCH = Number.MAX_SAFE_INTEGER;

/** An attempt of a request waiting for its answer. */
interface Waiting {
  readonly resolve: (answer: Message) => void;
  readonly reject: (error: Error) => void;
  readonly timer: TimerHandle;
}

/** One packet in flight: its bytes (JSON wire form), where it goes, and what delivering it does. */
interface Packet {
  readonly key: string;
  readonly subject: string;
  readonly text: string;
  readonly type: string;
  readonly agent: string;
  /** The runtime incarnation that sent it (an answer) or that it was sent to (a request): a kill loses it; {@link BUS_EPOCH} for a business packet. */
  readonly epoch: number;
  /** The node that sent it (`"peer"` for {@link SimulatedPeer}) and the node it goes to, when known: a cut link between them loses it. */
  readonly from: string;
  readonly to: string | undefined;
  readonly deliver: (message: Message) => GateOutcome;
}

const FAULTS: readonly SimulationFaultKind[] = ["net.drop", "net.delay", "net.duplicate"];
/** The faults of a packet between two different nodes: a partition of their link too. */
const BETWEEN_NODES: readonly SimulationFaultKind[] = [...FAULTS, "net.partition"];
const NONE: readonly SimulationFaultKind[] = [];

/**
 * The bus of a simulation, for control across processes: request/answer
 * exchanges on subjects (`civitas.ctl.<name>`), each packet in flight (a
 * request, an answer) a scheduling point the chooser picks, with the
 * network faults drawn at it: dropped, delayed by `delayMs` of virtual time
 * (it leaves the ready set meanwhile, so later packets on any subject
 * overtake it), or duplicated. Packets are carried as the JSON wire form and
 * read back with `fromWire`. A kill loses every packet in flight; requests
 * to a subject nobody of the current incarnation subscribes to are told
 * "no responders". It also keeps the directory of announced agents, as
 * the other runtimes on a real bus learn it.
 *
 * Business messages between the runtimes of several nodes travel on it too
 * (`civitas.agent.<name>`, and each incarnation's reply address), one step
 * per packet, with the same faults. They belong to no incarnation: a
 * packet whose recipient has no live subscription when it arrives (its node
 * was killed, or has not restarted) is lost, as a NATS publish nobody
 * subscribes to. A link between two nodes may be cut: a packet of either
 * direction that arrives while it is cut is dropped (`net.drop`), not held.
 * A cut is the test's (`cut`, until `heal`) or drawn at a packet between
 * two nodes (`net.partition`): then it heals by itself `partitionMs` later.
 * @internal
 */
export class SimulatedNetwork implements ControlChannel {
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly waiting = new Map<number, Waiting>();
  /** Agents announced by some runtime, and not withdrawn (a killed runtime withdraws nothing): their node and capabilities, in announcement order. */
  private readonly directory = new Map<string, Announced>();
  private readonly ordinals = new Map<string, number>();
  /** Business subscriptions: agents' subjects and reply addresses. */
  private readonly inboxes = new Map<string, Inbox>();
  /** Links the test cut, as `a|b` with `a < b`. */
  private readonly cuts = new Set<string>();
  /** Links cut by drawn partitions, with how many such partitions hold each (a drawn partition heals only its own cut). */
  private readonly drawnCuts = new Map<string, number>();
  private attempts = 0;

  constructor(
    private readonly board: GateBoard,
    private readonly epoch: () => number,
    /** The simulation's clock: a delayed packet waits on it (a kill clears it, losing the packet). */
    private readonly clock: Clock,
    /** The requester's clock: its attempt timeouts survive a kill of the owner. */
    private readonly requesterClock: Clock,
    private readonly delayMs: number,
    /** How long a drawn partition keeps its link cut. */
    private readonly partitionMs: number,
    /** Whether a runtime incarnation is the current one of its node (and not down). */
    private readonly live: (epoch: number) => boolean = (epoch) => epoch === this.epoch(),
  ) {}

  /** Subscribes `answer` to `subject` for the runtime incarnation `epoch` of `node`, and announces `name` with its `capabilities`. */
  subscribe(name: string, subject: string, epoch: number, answer: (request: Message) => Promise<Message>, node = "main", capabilities: readonly string[] = []): void {
    this.subscriptions.set(subject, { answer, epoch, node });
    this.directory.set(name, { node, capabilities });
  }

  /** The announced agents of nodes other than `node`, in announcement order: what `NatsTransport`'s directory of remote agents holds. */
  *announcedBesides(node: string): Iterable<{ readonly name: string } & Announced> {
    for (const [name, announced] of this.directory) if (announced.node !== node) yield { name, ...announced };
  }

  /** Subscribes `take` to the business subject `subject` (an agent's, or a reply address) for the incarnation `epoch` of `node`. */
  listen(subject: string, node: string, epoch: number, take: (message: Message) => void): void {
    this.inboxes.set(subject, { take, epoch, node });
  }

  /** Withdraws the business subscription of `subject` made by incarnation `epoch` (a stop or a despawn). */
  unlisten(subject: string, epoch: number): void {
    if (this.inboxes.get(subject)?.epoch === epoch) this.inboxes.delete(subject);
  }

  /** The node whose runtime last subscribed to `subject` (killed or not): where a publish goes. */
  nodeOf(subject: string): string | undefined {
    return this.inboxes.get(subject)?.node;
  }

  /** Publishes a business message (or a reply) from `from` to `subject`: a packet in flight, delivered to whoever subscribes when it arrives. */
  publish(from: string, subject: string, message: Message): void {
    const to = this.inboxes.get(subject)?.node;
    const reply = message.replyTo == null && message.correlationId != null;
    this.post(subject, message, message.recipient, BUS_EPOCH, (copy) => {
      const inbox = this.inboxes.get(subject);
      if (inbox === undefined || !this.live(inbox.epoch)) return { kind: "net", type: message.type, detail: `${reply ? "reply" : "message"} for '${message.recipient}': nobody subscribes, lost` };
      inbox.take(copy);
      return { kind: "net", type: message.type, detail: `${reply ? "reply" : "message"} taken by node ${inbox.node}` };
    }, from, to);
  }

  /** Cuts the link between nodes `a` and `b`: packets between them that arrive from now on are lost. */
  cut(a: string, b: string): void {
    this.cuts.add(link(a, b));
  }

  /** Heals the link between `a` and `b`, whoever cut it. */
  heal(a: string, b: string): void {
    this.cuts.delete(link(a, b));
    this.drawnCuts.delete(link(a, b));
  }

  /** Whether the link `name` (`a|b`) is cut now. */
  private isCut(name: string): boolean {
    return this.cuts.has(name) || this.drawnCuts.has(name);
  }

  /** A drawn partition: cuts the link `name` for `partitionMs` of virtual time (on the bus's own clock: no kill ends it sooner). */
  private partition(name: string): void {
    this.drawnCuts.set(name, (this.drawnCuts.get(name) ?? 0) + 1);
    this.requesterClock.setTimeout(() => {
      const holding = this.drawnCuts.get(name);
      if (holding === undefined) return; // the test healed it meanwhile
      if (holding > 1) this.drawnCuts.set(name, holding - 1);
      else this.drawnCuts.delete(name);
    }, this.partitionMs);
  }

  /** A control channel for the requests of `from`'s runtime, its attempt timers on `clock`. */
  channel(from: string, clock: Clock): ControlChannel {
    return { request: (subject, request, timeoutMs) => this.request(subject, request, timeoutMs, from, clock) };
  }

  /** Withdraws `name` (a stop or a despawn): its subject has no subscriber, and it is no longer announced. */
  unsubscribe(name: string, subject: string, epoch: number): void {
    if (this.subscriptions.get(subject)?.epoch === epoch) this.subscriptions.delete(subject);
    this.directory.delete(name);
  }

  /** Whether some runtime announced `name` and has not withdrawn it. */
  knows(name: string): boolean {
    return this.directory.has(name);
  }

  /** Sends `request` to `subject` and resolves with the first answer; see {@link ControlChannel}. */
  request(subject: string, request: Message, timeoutMs: number, from = "peer", clock: Clock = this.requesterClock): Promise<Message> {
    const attempt = ++this.attempts;
    const subscribed = this.subscriptions.get(subject);
    const target = subscribed !== undefined && this.live(subscribed.epoch) ? subscribed : undefined;
    return new Promise<Message>((resolve, reject) => {
      const timer = clock.setTimeout(() => {
        if (this.waiting.delete(attempt)) reject(new ControlAttemptError("timeout"));
      }, timeoutMs);
      this.waiting.set(attempt, { resolve, reject, timer });
      const what = `${shortType(request.type)} of ${text(request.payload.requestId)} (attempt ${attempt})`;
      this.post(subject, request, request.recipient, target?.epoch ?? this.epoch(), (message) => {
        const subscription = this.subscriptions.get(subject);
        if (subscription === undefined || !this.live(subscription.epoch)) {
          const waiting = this.settle(attempt);
          waiting?.reject(new ControlAttemptError("no-responders"));
          return { kind: "net", type: message.type, detail: `${what}: no responders` };
        }
        subscription.answer(message).then(
          (answer) => this.post(subject, answer, request.recipient, subscription.epoch, (copy) => this.answered(attempt, copy), subscription.node, from),
          () => undefined, // a ControlServer answers refusals; it never rejects
        );
        return { kind: "net", type: message.type, detail: `${what} taken by the owner` };
      }, from, target?.node);
    });
  }

  private answered(attempt: number, answer: Message): GateOutcome {
    const waiting = this.settle(attempt);
    waiting?.resolve(answer);
    const result = answer.payload.ok === true ? "ok" : text(answer.payload.code);
    return { kind: "net", type: answer.type, detail: `answer ${result} to attempt ${attempt}${waiting === undefined ? ": nobody waits for it any more, dropped" : ""}` };
  }

  private settle(attempt: number): Waiting | undefined {
    const waiting = this.waiting.get(attempt);
    if (waiting === undefined) return undefined;
    this.waiting.delete(attempt);
    waiting.timer.cancel();
    return waiting;
  }

  /** Puts a packet in flight: a gate the chooser opens (with a fault, or not). */
  private post(subject: string, message: Message, agent: string, epoch: number, deliver: (message: Message) => GateOutcome, from: string, to: string | undefined): void {
    const direction = message.type === "civitas.ctl.result" || (message.replyTo == null && message.correlationId != null) ? "<" : ">";
    const counted = `${direction}${subject.replace(/^civitas\./, "")}:${shortType(message.type)}`;
    const ordinal = (this.ordinals.get(counted) ?? 0) + 1;
    this.ordinals.set(counted, ordinal);
    const packet: Packet = {
      key: `net${counted}#${ordinal}`,
      subject,
      text: JSON.stringify(toWire(message)),
      type: message.type,
      agent,
      epoch,
      deliver,
      from,
      to,
    };
    this.board.add(this.gate(packet, packet.key, to !== undefined && to !== from ? BETWEEN_NODES : FAULTS), epoch);
  }

  private gate(packet: Packet, key: string, faults: readonly SimulationFaultKind[]): Gate {
    const choice: SimulationChoice = { kind: "net", key, thread: `net:${packet.subject}`, agent: packet.agent, type: packet.type };
    return {
      faults,
      offer: () => choice,
      open: (fault): GateOutcome => {
        const between = packet.to === undefined ? undefined : link(packet.from, packet.to);
        if (between !== undefined && (this.cuts.size > 0 || this.drawnCuts.size > 0) && this.isCut(between)) {
          return { kind: "net.drop", type: packet.type, detail: `the link ${between} is cut: lost` };
        }
        if (fault === "net.partition" && between !== undefined) {
          this.partition(between);
          return { kind: "net.partition", type: packet.type, detail: `the link ${between} is cut here, for ${this.partitionMs} ms: lost` };
        }
        switch (fault) {
          case "net.drop":
            return { kind: "net.drop", type: packet.type, detail: "lost in transit" };
          case "net.delay":
            (packet.epoch === BUS_EPOCH ? this.requesterClock : this.clock).setTimeout(() => this.board.add(this.gate(packet, `${packet.key}+late`, NONE), packet.epoch), this.delayMs);
            return { kind: "net.delay", type: packet.type, detail: `held back ${this.delayMs} ms` };
          case "net.duplicate": {
            this.board.add(this.gate(packet, `${packet.key}+copy`, NONE), packet.epoch);
            const outcome = packet.deliver(fromWire(JSON.parse(packet.text)));
            return { kind: "net.duplicate", type: packet.type, detail: `delivered, and a copy is in flight${outcome.detail === undefined ? "" : `; ${outcome.detail}`}` };
          }
          default:
            return packet.deliver(fromWire(JSON.parse(packet.text)));
        }
      },
    };
  }
}

/** The name of the link between nodes `a` and `b`, whichever way. */
function link(a: string, b: string): string {
  return a < b ? `${a}|${b}` : `${b}|${a}`;
}

/** `_agency.resume` → `resume`, `civitas.ctl.result` → `result`. */
function shortType(type: string): string {
  return type.slice(type.lastIndexOf(".") + 1);
}

/** A string field of a payload, for the trace. */
function text(value: unknown): string {
  return typeof value === "string" ? value : "?";
}
