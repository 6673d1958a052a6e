/**
 * `serveInbox({ tls })` over real HTTPS: a self-signed certificate made at
 * test time with openssl (for 127.0.0.1), a client that trusts exactly that
 * certificate, the page and a decision served encrypted, a client that does
 * not trust it refused by TLS, and a plain-HTTP request to the TLS port
 * answered by nothing of the inbox.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ProcessStatus } from "../../src/index.js";
import { runtimes, until } from "../support/runtimes.js";
import { scratch } from "../support/scratch.js";
import { headerIdentity, inboxes, pausedPayer, USER_HEADER } from "./support.js";

const { tempDir } = scratch("civitas-http-tls-");
const runtime = runtimes();
const serve = inboxes();

/** A fresh self-signed P-256 certificate for 127.0.0.1, valid one day. */
function selfSigned(): { key: string; cert: string } {
  const dir = tempDir();
  const keyFile = path.join(dir, "key.pem");
  const certFile = path.join(dir, "cert.pem");
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", keyFile, "-out", certFile, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
    { stdio: "ignore" },
  );
  return { key: fs.readFileSync(keyFile, "utf8"), cert: fs.readFileSync(certFile, "utf8") };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  authorized: boolean;
}

function httpsCall(url: URL, options: RequestOptions, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ...options, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8"), authorized: (res.socket as { authorized?: boolean }).authorized === true }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("serveInbox({ tls })", () => {
  it("serves the page and the API over HTTPS with the given certificate, and takes a decision sent over it", async () => {
    const { payer, rt } = await pausedPayer(runtime, "INV-TLS");
    const { key, cert } = selfSigned();
    const server = await serve({ runtime: rt, authenticate: headerIdentity, tls: { key, cert } });
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/$/);
    const base = new URL(server.url);
    const who = { [USER_HEADER]: "alice" };

    const page = await httpsCall(base, { ca: cert, headers: who });
    expect([page.status, page.authorized, page.headers["content-type"]]).toEqual([200, true, "text/html; charset=utf-8"]);

    const session = await httpsCall(new URL("api/v1/session", base), { ca: cert, headers: who });
    const { identity, csrfToken } = JSON.parse(session.text) as { identity: string; csrfToken: string };
    expect(identity).toBe("alice");

    const [pause] = rt.listSuspended();
    const body = JSON.stringify({ suspensionId: pause?.suspensionId });
    const post = (origin: string): Promise<Answer> =>
      httpsCall(
        new URL("api/v1/agents/payer/resume", base),
        { ca: cert, method: "POST", headers: { ...who, origin, "sec-fetch-site": "same-origin", "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), "x-civitas-csrf": csrfToken } },
        body,
      );
    const foreign = await post("https://evil.example");
    expect([foreign.status, (JSON.parse(foreign.text) as { error: { code: string } }).error.code]).toEqual([403, "CROSS_SITE_REQUEST"]);
    expect(payer.status).toBe(ProcessStatus.SUSPENDED);

    const resumed = await post(`https://${base.host}`);
    expect(resumed.status).toBe(200);
    await until(() => payer.status !== ProcessStatus.SUSPENDED);
    expect(payer.executions.get("INV-TLS")).toBe(1);
    expect(payer.state.paid).toMatchObject([{ invoice: "INV-TLS", approvedBy: "alice" }]);
  });

  it("is refused by a client that does not trust the certificate, and does not answer plain HTTP", async () => {
    const { rt } = await pausedPayer(runtime, "INV-TLS");
    const { key, cert } = selfSigned();
    const server = await serve({ runtime: rt, authenticate: headerIdentity, tls: { key, cert } });
    const base = new URL(server.url);
    const untrusted = await httpsCall(new URL("api/v1/session", base), { headers: { [USER_HEADER]: "alice" } }).then(
      () => undefined,
      (error: unknown) => error as { code?: string },
    );
    expect(untrusted?.code).toBe("DEPTH_ZERO_SELF_SIGNED_CERT");

    const plain = await new Promise<{ status?: number; error?: string }>((resolve) => {
      const req = httpRequest(new URL(`http://${base.host}/api/v1/session`), { headers: { [USER_HEADER]: "alice" }, agent: false }, (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0 });
      });
      req.on("error", (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
      req.end();
    });
    expect(plain).toEqual({ error: "ECONNRESET" }); // the TLS server drops a plain-HTTP request: nothing of the inbox is sent in clear
  });
});
