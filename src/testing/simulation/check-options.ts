import { describeValue } from "../../errors/civitas-error.js";
import { InvalidArgumentError } from "../../errors/errors.js";
import { randomChooser, checkSeed } from "./random-chooser.js";
import { checkNodeNames } from "./node-names.js";
import { checkTargets } from "./targeted-faults.js";
import { checkTime } from "./time-choices.js";
import type { SimulationNodes } from "./simulation-node.js";
import type { Chooser, SimulationFaultKind, SimulationFaultTarget, SimulationInvariant, SimulationOptions } from "./types.js";

/** Options of a simulation, checked, with their defaults. */
export interface CheckedOptions {
  readonly root: SimulationOptions["root"];
  /** The other nodes' trees, when the simulation has several runtimes. */
  readonly nodes: SimulationNodes | undefined;
  readonly seed: number;
  readonly chooser: Chooser;
  readonly invariants: readonly SimulationInvariant[];
  readonly runtime: NonNullable<SimulationOptions["runtime"]>;
  readonly maxSteps: number;
  readonly externalAwaits: "record" | "fail";
  readonly startMs: number;
  /** How long a delayed packet of the simulated bus is held back. */
  readonly networkDelayMs: number;
  /** How long a drawn partition keeps its link cut. */
  readonly partitionMs: number;
  /** How long a node a drawn kill hits stays down. */
  readonly killDownMs: number;
  /** Time as a choice: races per run, and latency per step. */
  readonly time: { readonly races: number; readonly stepLatencyMs: number };
  /** Whether `faultPoint()` calls are steps (points faults are configured, or a target names a point). */
  readonly points: boolean;
  /** How long a delayed fault point holds its agent. */
  readonly pointDelayMs: number;
  /** Faults placed at chosen steps. */
  readonly targets: readonly SimulationFaultTarget[];
  /** Whether any fault may apply (else the chooser is never asked about faults). */
  readonly faulty: boolean;
  /** The probability of `kind` per eligible step (every fault may apply in a replay: the trace decides). */
  probability(kind: SimulationFaultKind): number;
}

/**
 * Checks a simulation's options before anything runs: `INVALID_ARGUMENT`
 * naming the option and what it must be.
 */
export function checkSimulationOptions(options: unknown, replaying: boolean): CheckedOptions {
  if (typeof options !== "object" || options === null) {
    throw new InvalidArgumentError("options", `simulate(options) needs an options object with a root factory, e.g. { root: () => new Supervisor(...), seed: 1 }; got ${describeValue(options)}`);
  }
  const o = options as SimulationOptions;
  if (typeof o.root !== "function") {
    throw new InvalidArgumentError("root", `simulate({ root }): root must be a function building the tree (it is called again after each kill), got ${describeValue(o.root)}`);
  }
  const seed = o.seed === undefined ? 0 : checkSeed(o.seed, "simulate({ seed })");
  if (o.chooser !== undefined && typeof (o.chooser as Partial<Chooser> | null)?.choose !== "function") {
    throw new InvalidArgumentError("chooser", `simulate({ chooser }): chooser must have a choose(ready, step) method (randomChooser, pctChooser, fastCheckChooser), got ${describeValue(o.chooser)}`);
  }
  const invariants = o.invariants ?? [];
  if (!Array.isArray(invariants) || invariants.some((i) => typeof i !== "function")) {
    throw new InvalidArgumentError("invariants", `simulate({ invariants }): invariants must be an array of functions (view) => string | void, got ${describeValue(invariants)}`);
  }
  const maxSteps = o.maxSteps ?? 10_000;
  if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new InvalidArgumentError("maxSteps", `simulate({ maxSteps }): maxSteps must be a positive integer, got ${describeValue(maxSteps)}`);
  const externalAwaits = o.externalAwaits ?? "record";
  if (externalAwaits !== "record" && externalAwaits !== "fail") {
    throw new InvalidArgumentError("externalAwaits", `simulate({ externalAwaits }): externalAwaits must be "record" or "fail", got ${describeValue(externalAwaits)}`);
  }
  const startMs = o.startMs ?? 1_700_000_000_000;
  if (!Number.isFinite(startMs) || startMs < 0) throw new InvalidArgumentError("startMs", `simulate({ startMs }): startMs must be a non-negative number of epoch ms, got ${describeValue(startMs)}`);
  const runtime = o.runtime ?? {};
  if (typeof runtime !== "object" || (runtime as unknown) === null) throw new InvalidArgumentError("runtime", `simulate({ runtime }): runtime must be an object of Runtime options, got ${describeValue(runtime)}`);
  const nodes = checkNodes(o.nodes);
  if (nodes !== undefined) checkNodeNames(o.root, nodes);
  const faults = checkFaults(o.faults);
  const targets = checkTargets(o.faults?.targets);
  return {
    root: o.root,
    nodes,
    seed,
    chooser: o.chooser ?? randomChooser(seed),
    invariants,
    runtime,
    maxSteps,
    externalAwaits,
    startMs,
    networkDelayMs: checkDelayMs(o.faults?.network?.delayMs, "faults.network.delayMs", 1_500),
    partitionMs: checkDelayMs(o.faults?.network?.partitionMs, "faults.network.partitionMs", 2_000),
    killDownMs: checkDelayMs(o.faults?.killDownMs, "faults.killDownMs", 0),
    points: o.faults?.points !== undefined || targets.some((t) => t.point !== undefined || t.fault.startsWith("point.")),
    pointDelayMs: checkDelayMs(o.faults?.points?.delayMs, "faults.points.delayMs", 1_000),
    targets,
    time: checkTime(o.time),
    faulty: replaying || targets.length > 0 || Object.values(faults).some((p) => p > 0),
    probability: replaying ? () => 1 : (kind) => faults[kind],
  };
}

/** `nodes`: an object of tree factories by node name; `main` (the root's node) and `peer` (the peer's) are taken. */
function checkNodes(nodes: unknown): SimulationNodes | undefined {
  if (nodes === undefined) return undefined;
  const example = `e.g. { nodes: { bank: () => new Bank("bank") } }`;
  if (typeof nodes !== "object" || nodes === null || Array.isArray(nodes)) throw new InvalidArgumentError("nodes", `simulate({ nodes }): nodes must be an object of tree factories by node name, ${example}; got ${describeValue(nodes)}`);
  for (const [name, root] of Object.entries(nodes)) {
    if (name === "main" || name === "peer" || !/^[A-Za-z0-9_-]+$/.test(name)) throw new InvalidArgumentError("nodes", `simulate({ nodes }): '${name}' cannot name a node (letters, digits, _ and -; "main" is the root's node, "peer" sim.peer's), ${example}`);
    if (typeof root !== "function") throw new InvalidArgumentError("nodes", `simulate({ nodes }): nodes.${name} must be a function building the node's tree, got ${describeValue(root)}`);
  }
  return nodes as SimulationNodes;
}

function checkFaults(faults: SimulationOptions["faults"]): Record<SimulationFaultKind, number> {
  if (faults !== undefined && (typeof faults !== "object" || (faults as unknown) === null)) {
    throw new InvalidArgumentError("faults", `simulate({ faults }): faults must be an object like { storeWrites: { fail: 0.05 }, crashes: 0.02, kills: 0.01 }, got ${describeValue(faults)}`);
  }
  const writes = faults?.storeWrites ?? {};
  const network = faults?.network ?? {};
  const points = faults?.points ?? {};
  const audit = faults?.auditAppends ?? {};
  const probability = (name: string, value: unknown): number => {
    if (value === undefined) return 0;
    if (typeof value !== "number" || !(value >= 0 && value <= 1)) {
      throw new InvalidArgumentError("faults", `simulate({ faults }): ${name} must be a probability between 0 and 1, got ${describeValue(value)}`);
    }
    return value;
  };
  return {
    kill: probability("faults.kills", faults?.kills),
    crash: probability("faults.crashes", faults?.crashes),
    "store.fail": probability("faults.storeWrites.fail", writes.fail),
    "store.hang": probability("faults.storeWrites.hang", writes.hang),
    "store.lose": probability("faults.storeWrites.lose", writes.lose),
    "store.fenced": probability("faults.storeWrites.fenced", writes.fenced),
    "net.drop": probability("faults.network.drop", network.drop),
    "net.delay": probability("faults.network.delay", network.delay),
    "net.duplicate": probability("faults.network.duplicate", network.duplicate),
    "net.partition": probability("faults.network.partition", network.partition),
    "point.crash": probability("faults.points.crash", points.crash),
    "point.throw": probability("faults.points.throw", points.throw),
    "point.delay": probability("faults.points.delay", points.delay),
    "audit.fail": probability("faults.auditAppends.fail", audit.fail),
    "audit.hang": probability("faults.auditAppends.hang", audit.hang),
    "audit.lose": probability("faults.auditAppends.lose", audit.lose),
  };
}

function checkDelayMs(value: unknown, name: string, byDefault: number): number {
  if (value === undefined) return byDefault;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgumentError("faults", `simulate({ faults }): ${name} must be a non-negative number of milliseconds, got ${describeValue(value)}`);
  }
  return value;
}
