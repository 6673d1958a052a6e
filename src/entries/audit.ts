/**
 * `civitas-ts/audit`: a signed, hash-chained JSONL audit sink, and offline
 * verification and repair of its logs. Uses only `node:fs` and `node:crypto`.
 *
 * @example
 * ```ts
 * import { JsonlAuditSink, verifyAuditLog, verifySuspension } from "civitas-ts/audit";
 * const audit = new JsonlAuditSink("./audit.jsonl", { key: process.env.CIVITAS_AUDIT_KEY! });
 * const runtime = new Runtime({ root, auditSink: audit });
 * // ... later, anywhere, without a runtime:
 * await verifySuspension("./audit.jsonl", "payer", { key });
 * ```
 * @packageDocumentation
 */
export { JsonlAuditSink } from "../audit/jsonl-audit-sink.js";
export type { JsonlAuditSinkOptions } from "../audit/jsonl-audit-sink.js";
export type { AuditRow } from "../audit/audit-row.js";
export { verifyAuditLog } from "../audit/verify-audit-log.js";
export type { AuditLogVerification, VerifyOptions } from "../audit/verify-audit-log.js";
export { verifySuspension } from "../audit/verify-suspension.js";
export type { SuspensionDecision, SuspensionRecord, SuspensionStatus, SuspensionVerification, VerifySuspensionOptions } from "../audit/verify-suspension.js";
export type { AuditLogSource } from "../audit/audit-source.js";
export { verifyApproval } from "../audit/verify-approval.js";
export type { ApprovalVerification, ApprovalVerificationStatus } from "../audit/verify-approval.js";
export { AUDIT_ANCHOR_KEY } from "../audit/audit-anchor.js";
export type { AuditAnchor } from "../audit/audit-anchor.js";
export { repairAuditLog } from "../audit/repair-audit-log.js";
export type { RepairResult } from "../audit/repair-audit-log.js";
export { AuditCorruptError, AuditKeyMissingError, AuditSinkClosedError, AuditUnreadableError } from "../audit/audit-errors.js";
