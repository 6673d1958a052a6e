import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { CrossSiteRequestError } from "./http-errors.js";

/** The header a state-changing request carries its CSRF token in. */
export const CSRF_HEADER = "x-civitas-csrf";

/**
 * Mints and checks the defences of state-changing requests: the request must
 * come from the page's own origin (when the browser says where it comes
 * from) and carry a token bound to the identity that sends it.
 * @internal
 */
export class CsrfGuard {
  private readonly secret: Uint8Array;

  constructor(
    secret: string | Uint8Array | undefined,
    private readonly allowedOrigins: readonly string[],
  ) {
    this.secret = secret === undefined ? randomBytes(32) : typeof secret === "string" ? Buffer.from(secret, "utf8") : secret;
  }

  /** The token `identity` sends with its state-changing requests. */
  tokenFor(identity: string): string {
    return createHmac("sha256", this.secret).update("civitas-inbox-csrf\0").update(identity, "utf8").digest("base64url");
  }

  /**
   * Refuses a request a browser says is cross-site (`Sec-Fetch-Site`), one
   * from another origin (`Origin`, compared with `Host` and the allowed
   * origins), and one without `identity`'s token.
   * @throws {@link CrossSiteRequestError}
   */
  check(req: IncomingMessage, identity: string): void {
    const site = req.headers["sec-fetch-site"];
    if (site !== undefined && site !== "same-origin") throw new CrossSiteRequestError(`the browser marked it Sec-Fetch-Site: ${site}`);
    const origin = req.headers.origin;
    if (origin !== undefined && !this.isOwnOrigin(origin, req.headers.host)) throw new CrossSiteRequestError(`it came from the origin ${JSON.stringify(origin)}, not this server's`);
    const token = req.headers[CSRF_HEADER];
    if (typeof token !== "string") throw new CrossSiteRequestError(`it carries no ${CSRF_HEADER} header`);
    const expected = Buffer.from(this.tokenFor(identity), "utf8");
    const given = Buffer.from(token, "utf8");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new CrossSiteRequestError(`its ${CSRF_HEADER} token is not the one issued to this identity`);
  }

  private isOwnOrigin(origin: string, host: string | undefined): boolean {
    if (this.allowedOrigins.includes(origin)) return true;
    if (host === undefined) return false;
    return origin === `http://${host}` || origin === `https://${host}`;
  }
}
