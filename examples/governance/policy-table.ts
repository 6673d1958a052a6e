/**
 * A small policy table in the shape of Presidium's rules: each rule has a
 * name, a priority, a condition and a decision; the first match by priority
 * (highest first) wins, no match allows, and an evaluation error denies
 * (fail closed). `policyFromTable` turns it into the runtime's policy gate.
 */
import type { ApprovalPolicy, ApprovalRule, Message, PolicyDecision } from "civitas-ts";

export interface PolicyRule {
  readonly name: string;
  /** Higher is evaluated first. */
  readonly priority: number;
  /** Whether the rule applies to this message; a throw denies. */
  readonly when: (message: Message) => boolean;
  readonly decision: "ALLOW" | "DENY" | "REQUIRE_APPROVAL";
  readonly reason: string;
  /** Who must approve (REQUIRE_APPROVAL). */
  readonly approval?: ApprovalRule;
}

const ALLOW: PolicyDecision = Object.freeze({ decision: "allow" });

export function policyFromTable(rules: readonly PolicyRule[]): ApprovalPolicy {
  const ordered = [...rules].sort((a, b) => b.priority - a.priority);
  return ({ message }) => {
    for (const rule of ordered) {
      let matches: boolean;
      try {
        matches = rule.when(message);
      } catch (error) {
        return { decision: "deny", reason: `rule '${rule.name}' failed to evaluate (${(error as Error).message}): denied` };
      }
      if (!matches) continue;
      if (rule.decision === "ALLOW") return ALLOW;
      if (rule.decision === "DENY") return { decision: "deny", reason: `${rule.name}: ${rule.reason}` };
      return { decision: "require_approval", reason: `${rule.name}: ${rule.reason}`, rule: rule.approval! };
    }
    return ALLOW; // no match allows
  };
}

/** The payments policy of the demo. */
export const PAYMENT_RULES: readonly PolicyRule[] = [
  { name: "sanctioned-payee", priority: 100, when: (m) => m.type === "pay" && m.payload.to === "SANCTIONED LTD", decision: "DENY", reason: "payee is on the sanctions list" },
  {
    name: "large-payment",
    priority: 50,
    when: (m) => m.type === "pay" && Number(m.payload.amountCents) >= 1_000_000,
    decision: "REQUIRE_APPROVAL",
    reason: "payments of 10,000.00 or more need two finance approvers",
    approval: {
      stages: [{ name: "finance", approvers: ["ana@finance", "ben@finance", "cy@finance"], min: 2 }],
      escalateAfterMs: 5_000,
      escalateTo: ["maya@management"],
      expiresInMs: 60_000,
    },
  },
  { name: "reads", priority: 10, when: (m) => m.type === "balance", decision: "ALLOW", reason: "reads are free" },
];
