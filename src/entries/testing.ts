/**
 * `civitas-ts/testing`: helpers to test agents built on civitas-ts —
 * deterministic time, status waits, fast-check arbitraries, a reference
 * model of the suspension lifecycle and a driver that runs the same
 * scenarios against a real runtime. Needs the optional peer dependency
 * `fast-check` (^4): without it, importing this entry throws an error
 * (`code` `ERR_MODULE_NOT_FOUND`) that says `npm install --save-dev fast-check`.
 * It loads fast-check with a top-level `await`, so it is `import`-only.
 */
export { TestClock, settle } from "../testing/test-clock.js";
export { waitForStatus, WaitTimeoutError } from "../testing/wait-for-status.js";
export type { StatusSource, WaitForStatusOptions } from "../testing/wait-for-status.js";
export { recordTransitions, transitionProblems } from "../testing/transitions.js";
export type { RecordedTransition, TransitionRecorder } from "../testing/transitions.js";
export { agentNameArbitrary, jsonValueArbitrary, messageArbitrary, messageTypeArbitrary, payloadArbitrary } from "../testing/arbitraries.js";
export type { MessageArbitraryOptions, PayloadArbitraryOptions } from "../testing/arbitraries.js";
export { lifecycleCommandsArbitrary } from "../testing/lifecycle-arbitrary.js";
export type { LifecycleCommandsOptions } from "../testing/lifecycle-arbitrary.js";
export { APPROVER_KINDS, LIFECYCLE_COMMAND_KINDS, LIFECYCLE_DEADLINE_MS, formatCommand, isMessageCommand } from "../testing/lifecycle-command.js";
export type {
  ApproverKind,
  AskOutcome,
  LifecycleCommand,
  LifecycleCommandKind,
  LifecycleOutcome,
  LifecycleStep,
  MessageCommand,
  StepResult,
  TransitionText,
} from "../testing/lifecycle-command.js";
export { SuspensionModel } from "../testing/suspension-model.js";
export type { SuspensionModelOptions } from "../testing/suspension-model.js";
export { LifecycleDriver } from "../testing/lifecycle-driver.js";
export { runLifecycleCommands } from "../testing/run-lifecycle-commands.js";
export type { HandledRecord, LifecycleDriverOptions, LifecycleObservation, ObservedAuditEvent, ObservedTransition } from "../testing/lifecycle-observation.js";
export { CRASH_MESSAGE_TYPE, InjectedCrash, LIFECYCLE_ID_KEY, SELF_SUSPEND_MESSAGE_TYPE } from "../testing/instrument.js";
export { simulate, replay } from "../testing/simulation/simulate.js";
export { randomChooser } from "../testing/simulation/random-chooser.js";
export { SimulationFailure, SimulationBusyError, SimulationStateError, SimulatedCrash, SimulatedFault } from "../testing/simulation/simulation-failure.js";
export type { SimulationFailureCode } from "../testing/simulation/simulation-failure.js";
export type {
  Chooser,
  PeerAgentStatus,
  Simulation,
  SimulationChoice,
  SimulationFaultKind,
  SimulationFaults,
  SimulationFaultTarget,
  SimulationInvariant,
  SimulationOptions,
  SimulationPeer,
  SimulationStep,
  SimulationStepKind,
  SimulationView,
} from "../testing/simulation/types.js";
export type { SimulationNode, SimulationNodes } from "../testing/simulation/simulation-node.js";
export { pctChooser } from "../testing/simulation/pct-chooser.js";
export type { PctChooserOptions } from "../testing/simulation/pct-chooser.js";
export { fastCheckChooser } from "../testing/simulation/fast-check-chooser.js";
export type { FastCheckChooserOptions, FastCheckScheduler } from "../testing/simulation/fast-check-chooser.js";
export { simulationScenario, simulationScenarioArbitrary } from "../testing/simulation/scenario.js";
export type { SimulationCommand, SimulationScenario, SimulationScenarioOptions } from "../testing/simulation/scenario.js";
export { runSimulationScenario } from "../testing/simulation/run-scenario.js";
export type { CommandOutcome, ScenarioRun, ScenarioRunOptions } from "../testing/simulation/run-scenario.js";
export { exhaust } from "../testing/simulation/exhaust.js";
export { History } from "../testing/simulation/history.js";
export type { HistoryOperation } from "../testing/simulation/history.js";
export { checkLinearizable, mapModel, registerModel } from "../testing/simulation/linearizability.js";
export type { LinearizabilityOptions, LinearizabilityResult, SequentialModel } from "../testing/simulation/linearizability.js";
export { eventually } from "../testing/simulation/liveness.js";
export type { LivenessMonitor } from "../testing/simulation/liveness.js";
export type { ExhaustOptions, ExhaustResult } from "../testing/simulation/exhaust.js";
export { sequenceChooser } from "../testing/simulation/sequence-chooser.js";
export { scheduleArbitrary } from "../testing/simulation/schedule-arbitrary.js";
export type { ScheduleArbitraryOptions } from "../testing/simulation/schedule-arbitrary.js";
export type { SimulationTimeOptions } from "../testing/simulation/time-choices.js";
export { LifecycleSimulation } from "../testing/simulation/lifecycle-simulation.js";
export type { LifecycleSimulationOptions, LifecycleSimulationOutcome } from "../testing/simulation/lifecycle-simulation.js";
