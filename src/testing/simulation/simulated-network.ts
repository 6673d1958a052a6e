import { ControlAttemptError, type ControlChannel } from "../../bus/control-protocol.js";
import type { Message } from "../../message/message.js";
import { fromWire } from "../../message/from-wire.js";
import { toWire } from "../../message/to-wire.js";
import type { Clock, TimerHandle } from "../../time/clock.js";
import type { Gate, GateBoard, GateOutcome } from "./gate.js";
import type { SimulationChoice, SimulationFaultKind } from "./types.js";

/** What answers requests on a subject: the owner's control server, and the runtime incarnation it belongs to. */
interface Subscription {
  readonly answer: (request: Message) => Promise<Message>;
  readonly epoch: number;
}

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
  /** The runtime incarnation that sent it (an answer) or that it was sent to (a request): a kill loses it. */
  readonly epoch: number;
  readonly deliver: (message: Message) => GateOutcome;
}

const FAULTS: readonly SimulationFaultKind[] = ["net.drop", "net.delay", "net.duplicate"];
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
 * @internal
 */
export class SimulatedNetwork implements ControlChannel {
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly waiting = new Map<number, Waiting>();
  /** Names announced by some runtime, and not withdrawn (a killed runtime withdraws nothing). */
  private readonly directory = new Set<string>();
  private readonly ordinals = new Map<string, number>();
  private attempts = 0;

  constructor(
    private readonly board: GateBoard,
    private readonly epoch: () => number,
    /** The simulation's clock: a delayed packet waits on it (a kill clears it, losing the packet). */
    private readonly clock: Clock,
    /** The requester's clock: its attempt timeouts survive a kill of the owner. */
    private readonly requesterClock: Clock,
    private readonly delayMs: number,
  ) {}

  /** Subscribes `answer` to `subject` for the runtime incarnation `epoch`, and announces `name`. */
  subscribe(name: string, subject: string, epoch: number, answer: (request: Message) => Promise<Message>): void {
    this.subscriptions.set(subject, { answer, epoch });
    this.directory.add(name);
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
  request(subject: string, request: Message, timeoutMs: number): Promise<Message> {
    const attempt = ++this.attempts;
    return new Promise<Message>((resolve, reject) => {
      const timer = this.requesterClock.setTimeout(() => {
        if (this.waiting.delete(attempt)) reject(new ControlAttemptError("timeout"));
      }, timeoutMs);
      this.waiting.set(attempt, { resolve, reject, timer });
      const what = `${shortType(request.type)} of ${text(request.payload.requestId)} (attempt ${attempt})`;
      this.post(subject, request, request.recipient, this.epoch(), (message) => {
        const subscription = this.subscriptions.get(subject);
        if (subscription === undefined || subscription.epoch !== this.epoch()) {
          const waiting = this.settle(attempt);
          waiting?.reject(new ControlAttemptError("no-responders"));
          return { kind: "net", type: message.type, detail: `${what}: no responders` };
        }
        subscription.answer(message).then(
          (answer) => this.post(subject, answer, request.recipient, subscription.epoch, (copy) => this.answered(attempt, copy)),
          () => undefined, // a ControlServer answers refusals; it never rejects
        );
        return { kind: "net", type: message.type, detail: `${what} taken by the owner` };
      });
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
  private post(subject: string, message: Message, agent: string, epoch: number, deliver: (message: Message) => GateOutcome): void {
    const direction = message.type === "civitas.ctl.result" ? "<" : ">";
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
    };
    this.board.add(this.gate(packet, packet.key, FAULTS), epoch);
  }

  private gate(packet: Packet, key: string, faults: readonly SimulationFaultKind[]): Gate {
    const choice: SimulationChoice = { kind: "net", key, thread: `net:${packet.subject}`, agent: packet.agent, type: packet.type };
    return {
      faults,
      offer: () => choice,
      open: (fault): GateOutcome => {
        switch (fault) {
          case "net.drop":
            return { kind: "net.drop", type: packet.type, detail: "lost in transit" };
          case "net.delay":
            this.clock.setTimeout(() => this.board.add(this.gate(packet, `${packet.key}+late`, NONE), packet.epoch), this.delayMs);
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

/** `_agency.resume` → `resume`, `civitas.ctl.result` → `result`. */
function shortType(type: string): string {
  return type.slice(type.lastIndexOf(".") + 1);
}

/** A string field of a payload, for the trace. */
function text(value: unknown): string {
  return typeof value === "string" ? value : "?";
}
