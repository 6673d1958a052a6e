export { CivitasError } from "./errors/civitas-error.js";
export {
  AgentNotFoundError,
  AgentSuspendedError,
  AuditUnavailableError,
  AskTimeoutError,
  ClusterScopeUnsupportedError,
  DuplicateNameError,
  IdentityChangedError,
  IllegalTransitionError,
  InvalidApproverError,
  InvalidArgumentError,
  InvalidWireMessageError,
  MailboxClosedError,
  MailboxFullError,
  MaxChildrenError,
  NoDynamicSupervisorError,
  PayloadNotSerializableError,
  ReservedMessageTypeError,
  RestartIntensityError,
  ResumeRefusedError,
  RuntimeStateError,
  StaleApprovalError,
  StartFailedError,
  StateSchemaError,
  StateFencedError,
  TopologyError,
} from "./errors/errors.js";
export { HandlerFailedError } from "./errors/handler-failed-error.js";
export { BacklogWriteError, ReservedStateKeyError } from "./errors/backlog-errors.js";

export { createMessage, isReply } from "./message/message.js";
export type { Message, MessageInit } from "./message/message.js";
export type { JsonCompatible, JsonObject, JsonPayload, JsonValue } from "./message/json.js";
export { toWire } from "./message/to-wire.js";
export { fromWire } from "./message/from-wire.js";
export { MAX_WIRE_BYTES, WIRE_SCHEMA_VERSION } from "./message/wire.js";
export type { WireMessage } from "./message/wire.js";
export { SYSTEM_MESSAGE_TYPES } from "./message/system-types.js";
export type { SystemMessageType } from "./message/system-types.js";
export { uuidv7 } from "./message/ids.js";
export { faultPoint } from "./runtime/fault-point.js";

export { Mailbox } from "./mailbox/mailbox.js";
export type { MailboxOptions, MailboxWaitOptions } from "./mailbox/mailbox-options.js";

export { AgentProcess } from "./process/agent-process.js";
export type { AskOptions, SendOptions } from "./process/send-options.js";
export type { PauseOptions } from "./process/pause-deadline.js";
export type { Pause } from "./process/pause.js";
export type { CancelCause } from "./process/pause-settlement.js";
export type { AgentProcessOptions } from "./process/agent-options.js";
export { ProcessStatus, LEGAL_TRANSITIONS, isLegalTransition } from "./contracts/process-status.js";
export { ErrorAction } from "./process/error-action.js";
export { SUSPENSION_KEY } from "./state/suspension-marker.js";
export { BACKLOG_KEY } from "./process/durable-backlog.js";
export type { AgentIdentity, SuspensionMarker } from "./state/suspension-marker.js";

export { Supervisor } from "./supervision/supervisor.js";
export type { SupervisorOptions } from "./supervision/supervisor.js";
export { RESTART_STRATEGIES } from "./supervision/restart-strategy.js";
export type { RestartStrategy } from "./supervision/restart-strategy.js";
export { DynamicSupervisor } from "./supervision/dynamic-supervisor.js";
export type { DynamicSupervisorOptions } from "./supervision/dynamic-supervisor.js";
export type { AgentFactory, AnyAgentProcess, ChildTerminationReason, SpawnOptions } from "./process/dynamic-host.js";
export type { StopOptions, SupervisedChild } from "./contracts/child.js";
export type { RestartOptions } from "./supervision/supervision-options.js";
export { backoffDelay } from "./supervision/backoff.js";
export type { BackoffPolicy } from "./supervision/backoff.js";

export { Runtime } from "./runtime/runtime.js";
export type { ControlOptions, DenyOptions, ListSuspendedOptions, ResumeOptions, SuspendOptions } from "./runtime/runtime-control.js";
export type { SuspendedAgent } from "./runtime/suspended-agent.js";
export { RuntimeApprovals } from "./runtime/runtime-approvals.js";
export type { ApprovalCallOptions, ApproveOptions, DenyApprovalOptions } from "./runtime/runtime-approvals.js";
export type {
  ApprovalDecisionAsked,
  ApprovalListFilter,
  ApprovalPolicy,
  ApprovalRule,
  ApprovalStage,
  ApprovalStatus,
  ApprovalView,
  ApprovalVote,
  AuthorizeApproval,
  HeldMessageView,
  PolicyAction,
  PolicyDecision,
} from "./approvals/approval-types.js";
export { ApprovalDeniedError, ApprovalDigestMismatchError, ApprovalNotFoundError, ApproverNotAllowedError, PolicyFailedError, StaleVoteError } from "./approvals/approval-errors.js";
export { actionDigest, canonicalize } from "./approvals/canonical-json.js";
export { APPROVALS_KEY } from "./approvals/stored-approvals.js";
export type { FromTopologyOptions, RuntimeAskOptions, RuntimeOptions, RuntimeSendOptions } from "./runtime/runtime-options.js";
export type { AuthorizeResume, ResumeDecision } from "./contracts/runtime-services.js";
export type { RuntimeEvents } from "./contracts/runtime-events.js";
export type { AgentClasses } from "./runtime/runtime-options.js";

export { InMemoryStateStore } from "./state/in-memory-state-store.js";
export { StoreClosedError } from "./state/store-closed-error.js";
export { StoreUnavailableError } from "./state/store-unavailable-error.js";
export { StoreSchemaMissingError } from "./state/store-schema-missing-error.js";
export type { StateStore } from "./state/state-store.js";

export { MemoryAuditSink } from "./audit/memory-audit-sink.js";
export type { AuditEvent, AuditSink } from "./audit/audit-event.js";

export { systemClock } from "./time/clock.js";
export type { Clock, TimerHandle } from "./time/clock.js";
export { stderrLogger, silentLogger } from "./logging/logger.js";
export type { LogFields, Logger } from "./logging/logger.js";
