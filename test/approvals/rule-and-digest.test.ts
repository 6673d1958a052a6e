import { describe, expect, it } from "vitest";
import { actionDigest, canonicalize } from "../../src/index.js";
import { checkApprovalRule } from "../../src/approvals/approval-rule.js";
import { caught, expectCivitasError } from "../support/outcome.js";

describe("canonical JSON (RFC 8785) and the action digest", () => {
  it("sorts keys by UTF-16 code units and writes numbers as ECMAScript does (RFC 8785 §3.2.2 and its examples)", () => {
    expect(canonicalize({ b: 1, a: [true, null, "x"], "€": 2, "\r": 3, "ö": 4, "1": 5 })).toBe('{"\\r":3,"1":5,"a":[true,null,"x"],"b":1,"ö":4,"€":2}');
    expect(canonicalize({ n: [1e21, 1e-7, -0, 0.000001, 333333333.3333333, 4.5] })).toBe('{"n":[1e+21,1e-7,0,0.000001,333333333.3333333,4.5]}');
    expect(canonicalize("\u2028\u0007\"")).toBe('"\u2028\\u0007\\""');
  });

  it("refuses what is not I-JSON: lone surrogates and non-finite numbers", () => {
    expect(() => canonicalize("\uD800")).toThrow(TypeError);
    expect(() => canonicalize(Number.NaN)).toThrow(TypeError);
  });

  it("the digest is the SHA-256 of { agent, type, payload }: it changes with any of them and not with key order", () => {
    const d = actionDigest("payments", "pay", { to: "ACME", amountCents: 250_000 });
    expect(d).toMatch(/^[0-9a-f]{64}$/);
    expect(actionDigest("payments", "pay", { amountCents: 250_000, to: "ACME" })).toBe(d);
    expect(actionDigest("payments", "pay", { amountCents: 250_001, to: "ACME" })).not.toBe(d);
    expect(actionDigest("refunds", "pay", { amountCents: 250_000, to: "ACME" })).not.toBe(d);
    expect(actionDigest("payments", "refund", { amountCents: 250_000, to: "ACME" })).not.toBe(d);
    // Pinned: the canonical text is {"agent":"payments","payload":{"amountCents":250000,"to":"ACME"},"type":"pay"}.
    expect(d).toBe("a021ef32c643bfc63808ec9e0c47cf3da395ecedf1db32a616a6bbf643147864");
  });
});

describe("approval rules are checked before anything is held", () => {
  it.each([
    ["not an object", null],
    ["no stages", { stages: [] }],
    ["an unknown field (a typo)", { stages: [{ approvers: ["a"], min: 1 }], expireInMs: 5 }],
    ["min above the approvers", { stages: [{ approvers: ["a"], min: 2 }] }],
    ["min zero", { stages: [{ approvers: ["a"], min: 0 }] }],
    ["a blank approver", { stages: [{ approvers: [" "], min: 1 }] }],
    ["an approver twice", { stages: [{ approvers: ["a", "a"], min: 1 }] }],
    ["a bidi override in a name", { stages: [{ approvers: ["\u202Eana"], min: 1 }] }],
    ["escalateTo without escalateAfterMs", { stages: [{ approvers: ["a"], min: 1 }], escalateTo: ["m"] }],
    ["an escalation after the expiry", { stages: [{ approvers: ["a"], min: 1 }], escalateAfterMs: 10, escalateTo: ["m"], expiresInMs: 10 }],
    ["a negative expiry", { stages: [{ approvers: ["a"], min: 1 }], expiresInMs: -1 }],
  ])("refuses %s with INVALID_ARGUMENT", (_name, rule) => {
    expectCivitasError(caught(() => checkApprovalRule("test", rule)), "INVALID_ARGUMENT");
  });

  it("returns a frozen copy: changing the rule passed in afterwards changes nothing", () => {
    const approvers = ["ana", "ben"];
    const checked = checkApprovalRule("test", { stages: [{ approvers, min: 2 }] });
    approvers.push("mallory");
    expect(checked.stages[0]!.approvers).toEqual(["ana", "ben"]);
    expect(Object.isFrozen(checked.stages[0]!.approvers)).toBe(true);
  });
});
