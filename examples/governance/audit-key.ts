/** The HMAC key of the demo's audit log (a real deployment takes it from a secret store). */
export const AUDIT_KEY = "governance-demo-key";
