/**
 * examples/inbox/run.ts as a user runs it: it serves the inbox with two
 * held payments and two paused agents, asks unauthenticated visitors for a
 * password, and stops on SIGTERM.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { call } from "../http/support.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

describe("examples/inbox", () => {
  it("serves two held payments and two paused agents to a signed-in approver, and asks others to sign in", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "examples/inbox/run.ts"], { cwd: root, env: { ...process.env, PORT: "0" }, stdio: ["ignore", "pipe", "pipe"] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString("utf8");
          const match = /inbox: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
          if (match?.[1] !== undefined) resolve(match[1]);
        });
        child.once("exit", (code) => reject(new Error(`the example exited (${String(code)}) before serving: ${out}`)));
      });
      const ana = { authorization: `Basic ${Buffer.from("ana:demo").toString("base64")}` };
      const approvals = await call(url, "GET", "/api/v1/approvals?status=pending", ana);
      expect(approvals.json.total).toBe(2);
      const pauses = await call(url, "GET", "/api/v1/agents/suspended", ana);
      expect((pauses.json.items as { name: string }[]).map((p) => p.name).sort()).toEqual(["payer-eu", "payer-us"]);
      const visitor = await call(url, "GET", "/");
      expect([visitor.status, visitor.headers["www-authenticate"]]).toEqual([401, 'Basic realm="civitas inbox demo"']);
      const wrong = await call(url, "GET", "/", { authorization: `Basic ${Buffer.from("ana:guess").toString("base64")}` });
      expect(wrong.status).toBe(401);
    } finally {
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    }
  }, 30_000);
});
