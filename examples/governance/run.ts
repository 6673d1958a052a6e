/**
 * `npm run demo:governance`: action-bound approvals end to end, across a
 * SIGKILL. A payments agent behind a Presidium-shaped policy table holds a
 * large payment for two finance approvers (escalating to a manager) while it
 * keeps serving balance queries; the process is killed; a new one restores
 * the held payment, takes the votes, pays exactly once, shows a denial the
 * sender sees; then the signed audit log is verified offline.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { verifyApproval, verifyAuditLog } from "civitas-ts/audit";
import { AUDIT_KEY } from "./audit-key.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "civitas-governance-"));
const db = path.join(dir, "state.db");
const log = path.join(dir, "audit.jsonl");

function node(mode: string, killWhen?: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(here, "node.ts"), mode, db, log], { stdio: ["ignore", "pipe", "inherit"] });
    const lines: string[] = [];
    let rest = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      rest += chunk;
      const complete = rest.split("\n");
      rest = complete.pop() ?? "";
      for (const line of complete) {
        lines.push(line);
        if (!line.startsWith("APPROVALS")) console.log(line);
        if (killWhen !== undefined && line.includes(killWhen)) {
          console.log(`[demo] SIGKILL to pid ${child.pid}`);
          child.kill("SIGKILL");
        }
      }
    });
    child.on("error", reject);
    child.on("close", (code, signal) => (code === 0 || signal === "SIGKILL" ? resolve(lines) : reject(new Error(`${mode} exited with ${code ?? signal}`))));
  });
}

try {
  await node("hold", "ready to be killed");
  const lines = await node("decide");
  const ids = JSON.parse(lines.find((l) => l.startsWith("APPROVALS"))!.slice("APPROVALS ".length)) as string[];
  const chain = await verifyAuditLog(log, { key: AUDIT_KEY });
  console.log(`[verify] audit chain: ${chain.ok ? "intact" : "BROKEN"}, ${chain.rows} rows`);
  for (const id of ids) {
    const v = await verifyApproval(log, id, { key: AUDIT_KEY });
    console.log(`[verify] approval ${id}: ${v.status}, ${v.decision ?? "undecided"} by ${v.decidedBy ?? "-"}, votes ${v.votes.map((x) => `${x.approver}:${x.vote}`).join(", ")}, handled ${v.handled}`);
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
