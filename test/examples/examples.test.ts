/**
 * Runs every program in examples/ the way a user would (`node --import tsx`,
 * from the repository root), so CI notices when an example stops working or
 * its story changes: each must exit 0 within 15 s and print its key lines.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runProgram } from "../support/child-process.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const examplesDir = path.join(repoRoot, "examples");
const TIMEOUT_MS = 15_000;

/** Lines each example must print, in this order. */
const expectedLines: Record<string, RegExp[]> = {
  "supervised-agents.ts": [
    /^civitas-ts demo: state goes to SQLite at .*state\.db$/,
    /counter replied count=3 \(checkpointed to SQLite\)/,
    /flaky crashed: cannot digest a poison job/,
    /flaky started \(incarnation 2\) with processed=2 \(state restored from SQLite after restart\)/,
    /root restarted flaky after \d+ ms of backoff/,
    /flaky started \(incarnation 3\) with processed=2/,
    /flaky processed job c after its restarts: processed=3/,
    /worker-1 started/,
    /manager was told that worker-1 is gone: despawned/,
    /manager replied doubled=42/,
    /stopped; audit trail: \d+ events \(2 crashes, 2 restarts\)/,
    /counter state restored from SQLite after restart: count=3/,
    /^done$/,
  ],
  "request-reply-pipeline.ts": [
    /api replied: \{"wordCount":5,"entities":\[\{"word":"Ada"/,
    /parser: ASK_TIMEOUT after 100 ms/,
    /api replied: \{"wordCount":2,"entities":\[\],"degraded":true\}/,
    /reply\.late: enricher answered after the ask gave up/,
    /runtime\.lateReplies = 1/,
    /caught ASK_TIMEOUT: ask\('enricher'\) got no reply within 50 ms/,
    /runtime\.lateReplies = 2/,
    /api replied: notified 2 caches/,
    /cache-us flushes = 1/,
    /audit-1 recorded \{"action":"login"/,
    /audit-2 recorded \{"action":"logout"/,
    /^stopped$/,
  ],
  "observability.ts": [
    /reply: \{"ok":true,"attempt":1\}/,
    /event agent\.status: back RUNNING -> CRASHED/,
    /event agent\.status: back INITIALIZING -> RUNNING/,
    /civitas\.agent\.retry civitas\.agent\.name="back" civitas\.message\.attempt=1/,
    /civitas\.supervisor\.restart civitas\.supervisor\.name="root" civitas\.supervisor\.strategy="ONE_FOR_ONE" civitas\.agent\.name="back"/,
    /trace context: back's handle span is in front's trace: true; its parent is front's handle span: true/,
    /agent\.crash back signer=example-runtime/,
    /agent\.restart back signer=example-runtime \{"supervisor":"root"/,
  ],
  "approval-workflow.ts": [
    /^civitas-ts demo: an approval workflow across a SIGKILL \(state in SQLite at .*payments\.db\)$/,
    /\[process 1\] pay INV-1 40\.00 to acme: paid \(within policy\)/,
    /\[process 1\] pay INV-2 12500\.00 to globex: awaiting-approval \(handle\(\) stored it as pending, called this\.suspend\(\), checkpointed and returned\)/,
    /\[process 1\] payments is SUSPENDED; nothing was paid for INV-2; ledger: INV-1 40\.00$/,
    /^process 1 reports payments SUSPENDED under suspension [0-9a-f-]{36}, durably$/,
    /^killing process 1 with SIGKILL while payments is suspended$/,
    /^process 1 was killed \(signal SIGKILL\)/,
    /\[process 2\] payments restarted SUSPENDED from the marker in SQLite/,
    /\[process 2\] listSuspended\(\): payments since \S+, reason "approve payment INV-2: 12500\.00 to globex", suspensionId [0-9a-f-]{36}$/,
    /\[process 2\] ledger after the restart: INV-1 40\.00; pending: INV-2$/,
    /\[process 2\] asked to pay INV-3 25\.00 to initech: the ask waits \(1 message queued\); ledger still: INV-1 40\.00$/,
    /\[process 2\] an ask with failIfSuspended fails fast: AGENT_SUSPENDED$/,
    /\[process 2\] a resume without a real approver is refused: INVALID_APPROVER$/,
    /^alice@finance reviews "approve payment INV-2: 12500\.00 to globex" and approves suspension [0-9a-f-]{36}$/,
    /\[process 2\] onResume\(alice@finance\): paid INV-2 12500\.00 to globex$/,
    /\[process 2\] runtime\.resume\("payments", "alice@finance", \{ suspensionId \}\) resolved: payments is RUNNING$/,
    /\[process 2\] the waiting ask for INV-3 is answered: paid$/,
    /\[process 2\] the same approval again: STALE_APPROVAL/,
    /\[process 2\] INV-2 sent again: duplicate$/,
    /\[process 2\] pay INV-4 9800\.00 to umbrella: awaiting-approval$/,
    /\[process 2\] onDeny\(bob@finance\): dropped INV-4 9800\.00 to umbrella \("umbrella is not an approved supplier"\); nothing paid$/,
    /\[process 2\] runtime\.deny\("payments", "bob@finance", \{ suspensionId, reason \}\) resolved: payments is RUNNING; ledger: INV-1 40\.00, INV-2 12500\.00, INV-3 25\.00$/,
    /\[process 2\] approving the denied pause afterwards: STALE_APPROVAL \(a pause is decided once\)$/,
    /^process 2 exited with code 0$/,
    /^ +INV-1 +40\.00 to acme +approved by policy$/,
    /^ +INV-2 +12500\.00 to globex +approved by alice@finance \(suspension [0-9a-f-]{36}\)$/,
    /^ +INV-3 +25\.00 to initech +approved by policy$/,
    /^each payment exactly once: yes; INV-2 approved by alice@finance; INV-4 denied, paid: no; pending: none$/,
    /#1 .*agent\.suspend payments +\{"durable":true,"reason":"approve payment INV-2: 12500\.00 to globex","since":"[^"]+","suspensionId":"[0-9a-f-]{36}"\}$/,
    /agent\.start +payments +\{"incarnation":1,"suspensionId":"[0-9a-f-]{36}"\}$/,
    /agent\.resume +payments +\{"approver":"alice@finance","reason":"[^"]+","suspensionId":"[0-9a-f-]{36}"\}$/,
    /agent\.deny +payments +\{"decider":"bob@finance","expired":false,"reason":"umbrella is not an approved supplier","suspensionId":"[0-9a-f-]{36}"\}$/,
    /^verifyAuditLog: intact, \d+ signed rows in one hash chain$/,
    /^verifySuspension: suspension [0-9a-f-]{36} \("approve payment INV-2: 12500\.00 to globex"\) verified: approved by alice@finance at /,
    /^verifySuspension: suspension [0-9a-f-]{36} \("approve payment INV-4: 9800\.00 to umbrella"\) verified: denied by bob@finance at /,
    /^verifySuspension\(payments\): verified$/,
    /^two pauses, each decided once: approved by alice@finance, denied by bob@finance: yes$/,
    /^done$/,
  ],
  "typed-messages.ts": [
    /^  tea-green x2: 9\.00$/,
    /^  mug x1: 12\.00$/,
    /^order A-17: total 18\.90 EUR \(discounted: true\)$/,
    /^a Date in a payload: refused by the compiler, and at run time with PAYLOAD_NOT_SERIALIZABLE$/,
    /^a class instance in a payload: refused at run time with PAYLOAD_NOT_SERIALIZABLE \(payload from '_runtime' to 'checkout' is not JSON-serializable at \$\.price\)$/,
    /^stopped$/,
  ],
  "postgres-store.ts": [
    /^\[A\] holds the lease on payments with fence \d+$/,
    /^\[A\] payer is SUSPENDED \(suspension [0-9a-f-]{36}\), awaiting approval of INV-7$/,
    /^\[A\] listSuspended from the marker column: payer "approve INV-7"$/,
    /^\[B\] acquire while A holds it: null$/,
    /^\[A\] still holds payments by the local rule: false$/,
    /^\[B\] took over payments with fence \d+ after the lease expired by the database's clock$/,
    /^\[B\] payer restored SUSPENDED under the same suspension: true$/,
    /^\[B\] bob@finance approved; stored state: \["INV-7 by bob@finance"\]$/,
    /^\[A\] payer STOPPED after its write was refused: agent\.fenced \(fence \d+ < \d+\)$/,
    /^\[B\] state untouched by A: \["INV-7 by bob@finance"\]$/,
    /^verifyAuditLog: intact, \d+ rows from both owners in one chain$/,
    /^verifySuspension\(payer, with the store's anchor\): verified$/,
    /^done$/,
  ],
  "topology.ts": [
    /root \(Supervisor, ONE_FOR_ALL\)/,
    /workers \(DynamicSupervisor, maxChildren 10\)/,
    /greeter-en replied: Hello, Ada!/,
    /greeter-fr replied: Bonjour, Grace!/,
    /spawned worker-1 under workers/,
    /a misspelt setting: TOPOLOGY_INVALID at topology\.supervisor\.stratgey/,
    /an unknown agent class: TOPOLOGY_INVALID at topology\.supervisor\.children\[0\]\.agent\.type/,
    /unknown agent class 'Gretter'; did you mean Greeter\?/,
    /a duplicate name: TOPOLOGY_INVALID at topology\.supervisor\.children\[0\]\.agent\.name/,
    /a bad option value: TOPOLOGY_INVALID at topology\.supervisor\.children\[0\]\.agent/,
  ],
};

/** Checks beyond "these lines, in this order". */
const extraChecks: Record<string, (stdout: string) => void> = {
  // One pause across the kill: the id process 1 was killed under is the one process 2
  // restored, the one approved, the one the payment and the audit record. The second
  // pause (INV-4, denied) has an id of its own, named by its suspend, deny and verification.
  "approval-workflow.ts": (stdout) => {
    const ids = stdout.match(/[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}/g) ?? [];
    expect(new Set(ids).size, `not exactly two suspension ids in:\n${stdout}`).toBe(2);
    const [killed, denied] = [...new Set(ids)];
    expect(ids.filter((id) => id === killed).length).toBeGreaterThanOrEqual(7);
    expect(ids.filter((id) => id === denied).length).toBeGreaterThanOrEqual(3);
    const deniedLines = stdout.split("\n").filter((line) => denied !== undefined && line.includes(denied));
    expect(deniedLines.every((line) => /agent\.(suspend|deny)|INV-4/.test(line)), `the denied pause's id elsewhere:\n${deniedLines.join("\n")}`).toBe(true);
  },
};

// Files whose name starts with "_" are scratch files, not examples.
const examples = readdirSync(examplesDir)
  .filter((file) => file.endsWith(".ts") && !file.startsWith("_"))
  .sort();

describe("examples", () => {
  it("finds the examples", () => {
    expect(examples).toEqual(expect.arrayContaining(Object.keys(expectedLines)));
  });

  it.each(examples)("%s runs to completion and prints its story", { timeout: TIMEOUT_MS + 5_000 }, async (file) => {
    const run = await runProgram(path.join("examples", file), { timeoutMs: TIMEOUT_MS });
    expect(run.signal, `killed after ${TIMEOUT_MS} ms; stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBeNull();
    expect(run.code, `exit code; stderr:\n${run.stderr}`).toBe(0);
    const lines = run.stdout.split("\n");
    let at = 0;
    for (const pattern of expectedLines[file] ?? []) {
      const found = lines.findIndex((line, i) => i >= at && pattern.test(line));
      expect(found, `expected a line matching ${String(pattern)} (in order) in:\n${run.stdout}`).toBeGreaterThanOrEqual(0);
      at = found + 1;
    }
    extraChecks[file]?.(run.stdout);
  });
});
