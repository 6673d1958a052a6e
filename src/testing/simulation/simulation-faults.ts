/** Faults a chooser may be asked to inject at a choice. */
export type SimulationFaultKind =
  | "kill"
  | "crash"
  | "store.fail"
  | "store.hang"
  | "store.lose"
  | "store.fenced"
  | "net.drop"
  | "net.delay"
  | "net.duplicate"
  | "net.partition"
  | "point.crash"
  | "point.throw"
  | "point.delay"
  | "audit.fail"
  | "audit.hang"
  | "audit.lose";

/**
 * A fault placed where it is wanted rather than drawn: `fault` applies at
 * every step that matches the other fields (all that are given), or only at
 * the `occurrence`-th such step. Matching needs the fault to be possible
 * there (a `crash` at a business delivery or a store write, a `point.*` at a
 * fault point, a `store.*` at a store write, an `audit.*` at an audit
 * append; a `kill` anywhere). Targeted faults are decided, not drawn: every
 * chooser, `exhaust` included, sees them at the same steps.
 * @example
 * ```ts
 * faults: { targets: [{ fault: "crash", agent: "bob", type: "credit", occurrence: 1 }, { fault: "point.crash", point: "between-sends" }] }
 * ```
 */
export interface SimulationFaultTarget {
  /** The fault to inject. */
  readonly fault: SimulationFaultKind;
  /** Only at steps of this agent (the recipient of a delivery, the writer of a store write, the agent of an audit event or fault point). */
  readonly agent?: string;
  /** Only for this message type (a delivery), store operation (`set`, `delete`) or audit event (`agent.resume` …). */
  readonly type?: string;
  /** Only at the fault point of this name. */
  readonly point?: string;
  /** Only at the n-th matching step (from 1). @defaultValue every matching step */
  readonly occurrence?: number;
}

/** Probabilities (0–1) of each fault, per eligible step. All default to 0. */
export interface SimulationFaults {
  /**
   * For each store write (`set`/`delete`): it fails (`STORE_UNAVAILABLE`),
   * hangs (never completes), is lost (acknowledged, gone after the next
   * kill), or is fenced: refused with the `StateFencedError`
   * (`STATE_FENCED`) a shared store such as `PostgresStateStore` raises when
   * another process took the agent over. A fenced write changes nothing, and
   * the takeover lasts: every later write of that agent in the same runtime
   * is refused the same way (a `store.fenced` step), until a kill, whose
   * rebuilt runtime owns it again. The store is fenced as
   * `PostgresStateStore.fenced` is: each incarnation writes with its own
   * fence (1, then 3, 5 … after each kill), stamped on its receipts; the
   * takeover puts the successor's `agent.claimed` (the next fence) on the
   * log, so a receipt the fenced-out incarnation appends after it decides
   * nothing. The error's `fence` is the runtime's, its `currentFence` the successor's.
   */
  readonly storeWrites?: { readonly fail?: number; readonly hang?: number; readonly lose?: number; readonly fenced?: number };
  /**
   * For each business delivery, `_agency.resume` delivery and store write: the
   * agent crashes there (its handler throws, its `onResume` throws, its write
   * fails before or after being applied).
   */
  readonly crashes?: number;
  /**
   * For each step: the process the step belongs to is killed instead, and
   * its runtime rebuilt from its store. Without `nodes` that is the
   * simulation's runtime; with `nodes`, the node of the step's agent (a
   * delivery's recipient, a store write's writer, a packet's recipient): the
   * main runtime, or one node alone while the others go on (a `kill` step
   * naming that node). A node that is down is not killed again.
   */
  readonly kills?: number;
  /**
   * How long a node (not the main runtime) a drawn kill hits stays down, in
   * virtual time, before it is rebuilt and started: packets for it are lost
   * meanwhile, asks to it time out. Bounded, so a run still ends. The main
   * runtime's drawn kill restarts it at once.
   * @defaultValue 0
   */
  readonly killDownMs?: number;
  /**
   * For each packet of the simulated bus (a control request of
   * {@link Simulation.peer} to the owner's `civitas.ctl.<name>`, an answer
   * back): it is dropped (lost in transit), delayed (held back `delayMs` of
   * virtual time, while other packets on any subject overtake it), or
   * duplicated (delivered, and a copy is in flight). `delayMs` defaults to
   * 1500, more than a request attempt's 1 s, so a delayed answer arrives after
   * its requester sent the request again. With `nodes`, `partition` is drawn
   * for each packet between two different nodes (or a node and
   * {@link Simulation.peer}): the link between them is cut there — that
   * packet is lost, and so is every packet between them that arrives in the
   * next `partitionMs` of virtual time (default 2000) — then it heals by
   * itself (a `net.partition` step, then an unnamed timer step).
   */
  readonly network?: { readonly drop?: number; readonly delay?: number; readonly duplicate?: number; readonly delayMs?: number; readonly partition?: number; readonly partitionMs?: number };
  /**
   * For each `faultPoint(name)` an agent passes: it crashes there (the point
   * rejects with `SIMULATED_CRASH`), an error is thrown there that the
   * handler may handle (`SIMULATED_FAULT`), or it is held `delayMs` of
   * virtual time (default 1000) while others run. With this option (or a
   * target naming a point) each point is a step; without, a point does nothing.
   */
  readonly points?: { readonly crash?: number; readonly throw?: number; readonly delay?: number; readonly delayMs?: number };
  /**
   * For each audit append: it fails (the sink rejects; a resume or deny is
   * refused with `AUDIT_UNAVAILABLE`), hangs (never completes), or is
   * acknowledged and never kept (it is not in `view.audit`, nor after a kill).
   */
  readonly auditAppends?: { readonly fail?: number; readonly hang?: number; readonly lose?: number };
  /** Faults at chosen steps, decided rather than drawn; see {@link SimulationFaultTarget}. */
  readonly targets?: readonly SimulationFaultTarget[];
}
