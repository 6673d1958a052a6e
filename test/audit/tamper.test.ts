import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { canonicalJson, hashRow, macOf, type AuditRow } from "../../src/audit/audit-row.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { KEY, lines, OTHER_KEY, sampleEvents, tempDir, writeLines, writeLog } from "../support/audit-log.js";

/** Re-computes hash and mac of rows (seq renumbered, prev re-chained) under `key`: what an attacker with a key can do. */
function resign(rows: AuditRow[], key: string, from = 0): string[] {
  let prev = from === 0 ? "0".repeat(64) : (rows[from - 1]?.hash ?? "");
  return rows.map((row, i) => {
    if (i < from) return canonicalJson(row as never);
    const unsigned = { ...row, seq: i, prev };
    const hash = hashRow(unsigned);
    prev = hash;
    return canonicalJson({ ...unsigned, hash, mac: macOf(hash, Buffer.from(key)) });
  });
}

describe("verifyAuditLog detects tampering at the right row", () => {
  let dir: string;
  let cleanup: () => void;
  let file: string;
  let original: string[];

  beforeEach(async () => {
    ({ dir, cleanup } = tempDir());
    file = path.join(dir, "audit.jsonl");
    await writeLog(file, sampleEvents());
    original = lines(file);
  });
  afterEach(() => cleanup());

  const rows = (): AuditRow[] => original.map((l) => JSON.parse(l) as AuditRow);

  it("accepts the untouched log", async () => {
    expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 5, tornTail: false });
  });

  // For each field of row 2: a changed value, and the reason it must produce.
  const edits: [field: keyof AuditRow, edit: (row: AuditRow) => unknown, reason: string][] = [
    ["seq", () => 7, "seq-mismatch"],
    ["ts", (r) => r.ts.replace("2030", "2031"), "hash-mismatch"],
    ["event", () => "agent.stop", "hash-mismatch"],
    ["agent", () => "payee", "hash-mismatch"],
    ["signerId", () => "mallory", "hash-mismatch"],
    ["keyId", () => "other", "hash-mismatch"],
    ["details", () => ({ reason: "forged" }), "hash-mismatch"],
    ["prev", (r) => flipHex(r.prev), "prev-mismatch"],
    ["hash", (r) => flipHex(r.hash), "hash-mismatch"],
    ["mac", (r) => flipHex(r.mac), "mac-mismatch"],
  ];
  for (const [field, edit, reason] of edits) {
    it(`an edited ${field} breaks the chain at that row with ${reason}`, async () => {
      const all = rows();
      const target = all[2] as unknown as Record<string, unknown>;
      target[field] = edit(all[2] as AuditRow);
      writeLines(file, all.map((r) => canonicalJson(r as never)));
      const result = await verifyAuditLog(file, { key: KEY });
      expect(result).toMatchObject({ ok: false, rows: 2, brokenAt: 2, tornTail: false });
      expect(result.reason).toMatch(new RegExp(`^${reason}:`));
    });
  }

  it("a flipped byte inside a field's raw text is caught at that row", async () => {
    for (const field of ["ts", "event", "agent", "signerId", "keyId", "details", "prev", "hash", "mac", "seq"]) {
      const line = original[3] ?? "";
      const at = line.indexOf(`"${field}":`) + field.length + 4;
      const bytes = Buffer.from(line);
      bytes[at] = (bytes[at] ?? 0) ^ 0x01;
      writeLines(file, [...original.slice(0, 3), bytes.toString("latin1"), ...original.slice(4)]);
      const result = await verifyAuditLog(file, { key: KEY });
      expect(result, field).toMatchObject({ ok: false, brokenAt: 3 });
    }
  });

  it("a deleted row is caught where it was (seq-mismatch)", async () => {
    writeLines(file, [...original.slice(0, 1), ...original.slice(2)]);
    const result = await verifyAuditLog(file, { key: KEY });
    expect(result).toMatchObject({ ok: false, brokenAt: 1, rows: 1 });
    expect(result.reason).toMatch(/^seq-mismatch:/);
  });

  it("a deleted first row is caught at row 0", async () => {
    writeLines(file, original.slice(1));
    expect(await verifyAuditLog(file, { key: KEY })).toMatchObject({ ok: false, brokenAt: 0 });
  });

  it("two swapped rows are caught at the first of them", async () => {
    writeLines(file, [original[0] ?? "", original[1] ?? "", original[3] ?? "", original[2] ?? "", original[4] ?? ""]);
    const result = await verifyAuditLog(file, { key: KEY });
    expect(result).toMatchObject({ ok: false, brokenAt: 2 });
    expect(result.reason).toMatch(/^seq-mismatch:/);
  });

  it("swapped rows with renumbered seq are caught by prev", async () => {
    const all = rows();
    const swapped = [all[0], all[1], { ...all[3], seq: 2 }, { ...all[2], seq: 3 }, all[4]];
    writeLines(file, swapped.map((r) => canonicalJson(r as never)));
    const result = await verifyAuditLog(file, { key: KEY });
    expect(result).toMatchObject({ ok: false, brokenAt: 2 });
    expect(result.reason).toMatch(/^prev-mismatch:/);
  });

  it("a row deleted and the rest re-chained with another key is caught at the first re-signed row", async () => {
    const all = rows();
    all.splice(1, 1);
    writeLines(file, resign(all, OTHER_KEY, 1));
    const result = await verifyAuditLog(file, { key: KEY });
    expect(result).toMatchObject({ ok: false, brokenAt: 1 });
    expect(result.reason).toMatch(/^mac-mismatch:/);
  });

  it("a whole log re-signed with another key is caught at row 0; with that key it verifies (the key is the trust root)", async () => {
    writeLines(file, resign(rows(), OTHER_KEY));
    const result = await verifyAuditLog(file, { key: KEY });
    expect(result).toMatchObject({ ok: false, brokenAt: 0, rows: 0 });
    expect(result.reason).toMatch(/^mac-mismatch:/);
    expect((await verifyAuditLog(file, { key: OTHER_KEY })).ok).toBe(true);
  });

  it("a log truncated mid-row reads as a torn tail: the complete rows verify", async () => {
    const text = fs.readFileSync(file);
    const cut = text.length - Math.floor((original[4]?.length ?? 0) / 2);
    fs.writeFileSync(file, text.subarray(0, cut));
    expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 4, tornTail: true });
  });

  it("a log truncated mid-row in the middle (later rows gone) is a torn tail at that row; its rows count shows the loss", async () => {
    const text = fs.readFileSync(file);
    const startOf2 = (original[0]?.length ?? 0) + (original[1]?.length ?? 0) + 2;
    fs.writeFileSync(file, text.subarray(0, startOf2 + 40));
    expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 2, tornTail: true });
  });

  it("garbage appended with a newline is malformed at the next index", async () => {
    fs.appendFileSync(file, "garbage\n");
    const result = await verifyAuditLog(file, { key: KEY });
    expect(result).toMatchObject({ ok: false, brokenAt: 5, rows: 5, tornTail: false });
    expect(result.reason).toMatch(/^malformed:/);
  });

  it("garbage appended without a newline is not mistaken for a torn row", async () => {
    fs.appendFileSync(file, "garbage");
    const result = await verifyAuditLog(file, { key: KEY });
    expect(result).toMatchObject({ ok: false, brokenAt: 5, tornTail: false });
    expect(result.reason).toMatch(/^garbage-tail:/);
  });

  it("a complete row with a byte after it in place of the final newline is garbage, not a torn tail", async () => {
    const text = fs.readFileSync(file);
    text[text.length - 1] = 0x20;
    fs.writeFileSync(file, text);
    const result = await verifyAuditLog(file, { key: KEY });
    expect(result).toMatchObject({ ok: false, brokenAt: 4 });
    expect(result.reason).toMatch(/^garbage-tail:/);
  });

  it("a row appended by someone without the key is caught (mac-mismatch)", async () => {
    const all = rows();
    const last = all[4] as AuditRow;
    const forged = { ...last, seq: 5, prev: last.hash, event: "agent.resume" };
    const hash = hashRow(forged);
    fs.appendFileSync(file, `${canonicalJson({ ...forged, hash, mac: macOf(hash, Buffer.from("guess")) })}\n`);
    const result = await verifyAuditLog(file, { key: KEY });
    expect(result).toMatchObject({ ok: false, brokenAt: 5 });
    expect(result.reason).toMatch(/^mac-mismatch:/);
  });

  it("a re-spelt but equivalent row (whitespace) is caught as noncanonical", async () => {
    const all = rows();
    const spaced = JSON.stringify(JSON.parse(canonicalJson(all[1] as never)), null, 0).replace('":', '": ');
    writeLines(file, [original[0] ?? "", spaced, ...original.slice(2)]);
    const result = await verifyAuditLog(file, { key: KEY });
    expect(result).toMatchObject({ ok: false, brokenAt: 1 });
    expect(result.reason).toMatch(/^noncanonical:/);
  });

  it("rejects only when the file cannot be read", async () => {
    await expect(verifyAuditLog(path.join(dir, "missing.jsonl"), { key: KEY })).rejects.toMatchObject({ name: "AuditUnreadableError", code: "AUDIT_UNREADABLE", cause: { code: "ENOENT" } });
    fs.writeFileSync(file, "");
    expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 0, tornTail: false });
  });
});

function flipHex(hex: string): string {
  const c = hex[10] === "a" ? "b" : "a";
  return `${hex.slice(0, 10)}${c}${hex.slice(11)}`;
}
