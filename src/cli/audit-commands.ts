/**
 * `civitas audit verify | verify-suspension | repair`: thin wrappers over
 * the offline audit functions that turn their answers into exit codes,
 * readable text and `--json` objects.
 * @module
 */
import { CivitasError } from "../errors/civitas-error.js";
import { repairAuditLog } from "../audit/repair-audit-log.js";
import { verifyAuditLog } from "../audit/verify-audit-log.js";
import { verifySuspension, type SuspensionVerification } from "../audit/verify-suspension.js";
import { verifyApproval } from "../audit/verify-approval.js";
import { isParseFailure, parseRowLine } from "../audit/audit-row.js";
import { readAuditFile } from "../audit/read-audit-file.js";
import { closestName } from "../runtime/closest-name.js";
import { openStore, type StoreOptions } from "./state-commands.js";
import { cell, ExitCode, table, type CommandResult } from "./output.js";

/** The keys a verification uses: `key` for any keyId, `keys` by keyId. */
export interface AuditKeys {
  key?: string;
  keys?: Record<string, string>;
}

/**
 * `civitas audit verify <file>`: checks the hash chain and the HMAC of every
 * row. Exit 0 when intact (a torn final line is ignored and reported), 1 when
 * broken; an unreadable file rejects (exit 3).
 */
export async function auditVerify(file: string, keys: AuditKeys): Promise<CommandResult> {
  const v = await verifyAuditLog(file, keys);
  const torn = v.tornTail
    ? `\nnote: a torn final line (an interrupted append) was ignored; 'civitas audit repair ${file}' removes it`
    : "";
  const text = v.ok
    ? `OK: ${file}: ${v.rows} row${v.rows === 1 ? "" : "s"} verified, chain and signatures intact${torn}`
    : `FAILED: ${file}: the chain is broken at row ${String(v.brokenAt)} (0-based; line ${String((v.brokenAt ?? 0) + 1)}): ${v.reason ?? "no reason given"}\n${v.rows} row${v.rows === 1 ? "" : "s"} before it verified${torn}`;
  return { exitCode: v.ok ? ExitCode.OK : ExitCode.FAILED, text, json: { file, ...v } };
}

/**
 * `civitas audit verify-suspension <file> <agent> [--store URI]`: a table of the agent's
 * suspensions, whether each was settled by exactly one decision, and which
 * (approved, denied, expired, cancelled), by whom and when; with a store,
 * also whether the log reaches the audit anchor stored with the agent's
 * state (a cut log is `failed`, reason `truncated`). Exit 0 for
 * `verified` or `pending`, 1 for `failed`, 4 for `not-found` (no row of the
 * agent: then "did you mean" the closest agent name the log holds, if one is close).
 */
export async function auditVerifySuspension(file: string, agent: string, keys: AuditKeys, storeOptions?: StoreOptions): Promise<CommandResult> {
  const reader = storeOptions?.store === undefined ? undefined : await openStore(storeOptions);
  let v: SuspensionVerification;
  try {
    v = await verifySuspension(file, agent, reader === undefined ? keys : { ...keys, store: reader });
  } finally {
    await reader?.close();
  }
  const lines: string[] = [];
  if (v.suspensions.length === 0) {
    lines.push(`no suspensions of '${agent}' are recorded in ${file}`);
  } else {
    lines.push(
      table(
        ["SUSPENSION", "REASON", "SINCE", "STATUS", "DECISION", "BY", "SETTLED AT"],
        v.suspensions.map((s) => [s.suspensionId, s.reason, s.since, s.status, cell(s.decision), cell(s.decidedBy), cell(s.settledAt)]),
      ),
    );
  }
  if (v.failures.length > 0) lines.push("", "failures:", ...v.failures.map((f) => `  - ${f}`));
  const live = v.suspensions.filter((s) => s.status === "pending").length;
  const didYouMean = v.status === "not-found" ? closestName(agent, await agentsIn(file)) : undefined;
  lines.push(
    "",
    v.status === "verified"
      ? `VERIFIED: every suspension of '${agent}' was settled by exactly one decision`
      : v.status === "not-found"
        ? didYouMean === undefined
          ? `NOT FOUND: ${file} holds no row of '${agent}' (check the agent's name, and that this is its log)`
          : `NOT FOUND: ${file} holds no row of '${agent}'; did you mean '${didYouMean}'? (it has rows of that agent)`
        : v.status === "pending"
        ? `PENDING: ${live} suspension${live === 1 ? " of '" + agent + "' is" : "s of '" + agent + "' are"} still live (not decided yet); this is not a failure`
        : `FAILED: the audit trail of '${agent}' does not verify (${v.failures.length} failure${v.failures.length === 1 ? "" : "s"})`,
  );
  return {
    exitCode: v.status === "failed" ? ExitCode.FAILED : v.status === "not-found" ? ExitCode.NOT_FOUND : ExitCode.OK,
    text: lines.join("\n"),
    json: didYouMean === undefined ? { file, agent, ...v } : { file, agent, ...v, didYouMean },
  };
}

/** The agents that rows of the log at `file` name, for a "did you mean" hint (signatures are not checked: it is only a hint). */
async function agentsIn(file: string): Promise<Set<string>> {
  const agents = new Set<string>();
  const bytes = await readAuditFile(file);
  let start = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(0x0a, start);
    const row = parseRowLine(bytes.subarray(start, end < 0 ? bytes.length : end));
    if (!isParseFailure(row)) agents.add(row.agent);
    start = end < 0 ? bytes.length : end + 1;
  }
  return agents;
}

/**
 * `civitas audit repair <file>`: truncates a torn final line, and nothing
 * else. Exit 0 when repaired or when there was nothing to repair; exit 3 when
 * refused because the damage is not only at the tail (`AUDIT_CORRUPT`).
 */
export async function auditRepair(file: string): Promise<CommandResult> {
  try {
    const r = await repairAuditLog(file);
    const text = r.repaired
      ? `repaired ${file}: removed a torn final line of ${r.removedBytes} byte${r.removedBytes === 1 ? "" : "s"}`
      : `nothing to repair: ${file} has no torn final line`;
    return { exitCode: ExitCode.OK, text, json: { file, ...r } };
  } catch (err) {
    if (!(err instanceof CivitasError) || err.code !== "AUDIT_CORRUPT") throw err;
    return {
      exitCode: ExitCode.CORRUPT,
      toStderr: true,
      text: `REFUSED: ${file} is damaged elsewhere than its final line, so it was left untouched: ${err.message}`,
      json: { file, repaired: false, removedBytes: 0, refused: true, error: { code: err.code, message: err.message } },
    };
  }
}

/**
 * `civitas audit verify-approval <file> <approvalId>`: whether the held
 * action of that request had every vote its rule required before it ran,
 * and ran at most once. Exit 0 for `verified` or `pending`, 1 for `failed`.
 */
export async function auditVerifyApproval(file: string, approvalId: string, keys: AuditKeys): Promise<CommandResult> {
  const v = await verifyApproval(file, approvalId, keys);
  const lines: string[] = [];
  if (v.votes.length > 0) lines.push(table(["APPROVER", "VOTE", "STAGE", "AT"], v.votes.map((x) => [x.approver, x.vote, String(x.stage), x.ts])), "");
  lines.push(`agent: ${cell(v.agent)}  digest: ${cell(v.digest)}  decision: ${cell(v.decision)} by ${cell(v.decidedBy)}  handled: ${v.handled ? "yes" : "no"}`);
  if (v.failures.length > 0) lines.push("", "failures:", ...v.failures.map((f) => `  - ${f}`));
  lines.push(
    "",
    v.status === "verified"
      ? `VERIFIED: approval ${approvalId} was decided once${v.handled ? ", its action ran once, after every required vote" : ""}`
      : v.status === "pending"
        ? `PENDING: approval ${approvalId} is not settled yet (not decided, or approved and not handled yet); this is not a failure`
        : `FAILED: approval ${approvalId} does not verify (${v.failures.length} failure${v.failures.length === 1 ? "" : "s"})`,
  );
  return { exitCode: v.status === "failed" ? ExitCode.FAILED : ExitCode.OK, text: lines.join("\n"), json: { file, ...v } };
}
