import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import type { ApprovalRule, ApprovalStage } from "./approval-types.js";

/** Most stages, and most approvers per list, a rule may have: rules travel in every request, receipt and view. */
const MAX_STAGES = 16;
const MAX_APPROVERS = 256;
const RULE_KEYS = new Set(["stages", "escalateAfterMs", "escalateTo", "expiresInMs"]);
const STAGE_KEYS = new Set(["approvers", "min", "name"]);
/** Control characters, lone surrogates, bidi overrides: nothing an approver's name may hold. */
const UNPRINTABLE = /[\p{Cc}\p{Cs}\u202A-\u202E\u2066-\u2069]/u;

function fail(where: string, problem: string): never {
  throw new InvalidArgumentError("rule", `${where}: ${problem}`);
}

function isDuration(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

/** Checks one list of approver names (non-empty, distinct, printable, at most 1,024 characters each). */
function checkApprovers(where: string, field: string, value: unknown): readonly string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_APPROVERS) {
    fail(where, `${field} must be a list of 1 to ${MAX_APPROVERS} approver names, got ${describeValue(value)}`);
  }
  const seen = new Set<string>();
  for (const name of value as unknown[]) {
    if (typeof name !== "string" || name.trim().length === 0 || name.length > 1024 || UNPRINTABLE.test(name)) {
      fail(where, `${field} holds ${describeValue(name)}; an approver is a printable, non-blank name of at most 1,024 characters`);
    }
    if (seen.has(name)) fail(where, `${field} names '${name}' twice`);
    seen.add(name);
  }
  return Object.freeze([...(value as string[])]);
}

function checkStage(where: string, index: number, value: unknown): ApprovalStage {
  const at = `stages[${index}]`;
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail(where, `${at} must be { approvers, min, name? }, got ${describeValue(value)}`);
  const stage = value as Record<string, unknown>;
  for (const key of Object.keys(stage)) if (!STAGE_KEYS.has(key)) fail(where, `${at} has an unknown field '${key}' (a stage has approvers, min, name)`);
  const approvers = checkApprovers(where, `${at}.approvers`, stage.approvers);
  const min = stage.min;
  if (typeof min !== "number" || !Number.isInteger(min) || min < 1 || min > approvers.length) {
    fail(where, `${at}.min must be a whole number from 1 to its ${approvers.length} approvers, got ${describeValue(min)}`);
  }
  if (stage.name !== undefined && (typeof stage.name !== "string" || stage.name.length > 1024)) fail(where, `${at}.name must be a string, got ${describeValue(stage.name)}`);
  return Object.freeze(stage.name === undefined ? { approvers, min } : { approvers, min, name: stage.name });
}

/**
 * Checks `value` as an {@link ApprovalRule} and returns a frozen copy of it
 * (so that nothing the caller keeps can change the rule a request holds).
 * `where` names the caller in the error.
 * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`, argument `rule`) naming what is wrong
 */
export function checkApprovalRule(where: string, value: unknown): ApprovalRule {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail(where, `a rule must be { stages, escalateAfterMs?, escalateTo?, expiresInMs? }, got ${describeValue(value)}`);
  const rule = value as Record<string, unknown>;
  for (const key of Object.keys(rule)) if (!RULE_KEYS.has(key)) fail(where, `the rule has an unknown field '${key}' (a rule has stages, escalateAfterMs, escalateTo, expiresInMs)`);
  const stages = rule.stages;
  if (!Array.isArray(stages) || stages.length === 0 || stages.length > MAX_STAGES) fail(where, `stages must be a list of 1 to ${MAX_STAGES} stages, got ${describeValue(stages)}`);
  const checked: { -readonly [K in keyof ApprovalRule]: ApprovalRule[K] } = { stages: Object.freeze((stages as unknown[]).map((stage, i) => checkStage(where, i, stage))) };
  const { escalateAfterMs, escalateTo, expiresInMs } = rule;
  if (expiresInMs !== undefined) {
    if (!isDuration(expiresInMs)) fail(where, `expiresInMs must be a non-negative number of milliseconds, got ${describeValue(expiresInMs)}`);
    checked.expiresInMs = expiresInMs;
  }
  if ((escalateAfterMs === undefined) !== (escalateTo === undefined)) fail(where, "escalateAfterMs and escalateTo go together: give both (when, and whom to add) or neither");
  if (escalateAfterMs !== undefined) {
    if (!isDuration(escalateAfterMs)) fail(where, `escalateAfterMs must be a non-negative number of milliseconds, got ${describeValue(escalateAfterMs)}`);
    if (typeof expiresInMs === "number" && escalateAfterMs >= expiresInMs) fail(where, `escalateAfterMs (${escalateAfterMs}) must be less than expiresInMs (${expiresInMs}), or the escalation would never happen`);
    checked.escalateAfterMs = escalateAfterMs;
    checked.escalateTo = checkApprovers(where, "escalateTo", escalateTo);
  }
  return Object.freeze(checked);
}
