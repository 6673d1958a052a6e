/**
 * What a step of a simulation did, as its trace records it:
 *
 * - `op`: a user operation (`sim.send`, `sim.ask`, `sim.suspend` …);
 * - `deliver`: an agent took its next message (the mailbox decided which);
 * - `reply`: an ask's reply settled the asker's request;
 * - `timer`: virtual time advanced to the earliest timer, which fired;
 * - `store.write`: a state store write (`set` or `delete`) completed;
 *   `store.fail`, `store.hang`, `store.lose`: it failed, never completes, or
 *   was acknowledged but is gone after the next kill; `store.fenced`: it was
 *   refused with `STATE_FENCED` because another process took its agent over;
 * - `audit`, `suspend`, `resume`, `decision`, `restart`: an audit append
 *   completed (`suspend` for `agent.suspend`, `resume` for `agent.resume`,
 *   `decision` for `agent.deny`, `restart` for `agent.restart`);
 * - `crash`: an agent was made to crash at this step (its handler, or
 *   `onResume`, threw; or its store write failed, before or after being applied);
 * - `kill`: the process was killed ("kill -9") and the runtime rebuilt from the store;
 * - `net`: a packet of the simulated bus arrived (a control request at its
 *   owner, or an answer at its requester; see {@link Simulation.peer});
 *   `net.drop`: it was lost; `net.delay`: it was held back (it arrives later,
 *   as `<key>+late`); `net.duplicate`: it arrived and a copy (`<key>+copy`) is in flight;
 *   `net.partition`: the link it travelled was cut there (a drawn partition),
 *   so it was lost, and the link heals after `faults.network.partitionMs`;
 * - `point`: an agent passed a `faultPoint(name)` of its code; `point.crash`,
 *   `point.throw`, `point.delay`: it crashed there, an error was thrown
 *   there, or it was held there in virtual time;
 * - `audit.fail`, `audit.hang`, `audit.lose`: an audit append failed, never
 *   completes, or was acknowledged and never kept;
 * - `time`: virtual time was advanced to the earliest timer although other steps
 *   were ready (`timeChoices`), and the timer fired;
 * - `external-await`: an agent's handler waits on a promise the runtime does not control;
 * - `invariant`: an invariant failed after the previous step;
 * - `check`: a scenario's final `check` failed, on the quiescent system (after the last step, not at it).
 */
export type SimulationStepKind =
  | "op"
  | "deliver"
  | "reply"
  | "timer"
  | "store.write"
  | "store.fail"
  | "store.hang"
  | "store.lose"
  | "store.fenced"
  | "audit"
  | "suspend"
  | "resume"
  | "decision"
  | "restart"
  | "crash"
  | "kill"
  | "net"
  | "net.drop"
  | "net.delay"
  | "net.duplicate"
  | "net.partition"
  | "point"
  | "point.crash"
  | "point.throw"
  | "point.delay"
  | "audit.fail"
  | "audit.hang"
  | "audit.lose"
  | "time"
  | "external-await"
  | "invariant"
  | "check";

/**
 * One step of a simulation's trace. `key` names the step in words that
 * survive unrelated code changes (agent names, message types and an ordinal
 * per sender and recipient, never a random id): {@link replay} follows a
 * trace by its keys.
 */
export interface SimulationStep {
  /** Position in the trace, from 0. */
  readonly step: number;
  readonly kind: SimulationStepKind;
  /** The stable key of what happened (`ledger<-coord-a:transfer#1`, `store.set:ledger#3`, `timer@+5000` …). */
  readonly key: string;
  /** The agent concerned. */
  readonly agent?: string;
  /** The sender of the message concerned. */
  readonly from?: string;
  /** The message type (or audit event) concerned. */
  readonly type?: string;
  /** The id of the message concerned (deterministic for a given seed). */
  readonly messageId?: string;
  /** Anything else worth reading (a fault's point, the virtual time, a failed invariant's text). */
  readonly detail?: string;
  /** With `nodes`: the node the step happened on (`"main"` for the root's runtime). */
  readonly node?: string;
}
