import type { IncomingMessage } from "node:http";
import { BodyTooLargeError, InvalidRequestError } from "./http-errors.js";

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Whether `header` names JSON: `application/json`, optionally with parameters. */
function isJsonType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const [type] = header.split(";");
  return type?.trim().toLowerCase() === "application/json";
}

/**
 * Reads the request body as a JSON object of at most `maxBytes` bytes.
 * Refuses, reading no further, a declared or actual length over the limit
 * (`BODY_TOO_LARGE`), and a body that is not `application/json`, not UTF-8,
 * not JSON, or not an object (`INVALID_REQUEST`).
 * @internal
 */
export async function readJsonObject(req: IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > maxBytes) throw new BodyTooLargeError(maxBytes);
  if (!isJsonType(req.headers["content-type"])) {
    throw new InvalidRequestError(`this route takes a JSON object body with content-type application/json, got content-type ${JSON.stringify(req.headers["content-type"] ?? null)}`);
  }
  const body = await readAtMost(req, maxBytes);
  let text: string;
  try {
    text = decoder.decode(body);
  } catch {
    throw new InvalidRequestError("the request body is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InvalidRequestError(`the request body is not JSON; send a JSON object such as {"suspensionId":"…"}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidRequestError(`the request body must be a JSON object, got ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}`);
  }
  return value as Record<string, unknown>;
}

/**
 * The body's bytes, or a `BODY_TOO_LARGE` rejection as soon as more than
 * `maxBytes` arrived; the rest is not read (the refusal closes the connection).
 */
function readAtMost(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  if (req.readableEnded) {
    return Promise.reject(new InvalidRequestError("the request body was already read by another middleware; mount the inbox handler before any body parser (see docs/http.md)"));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        done();
        req.pause();
        reject(new BodyTooLargeError(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(Buffer.concat(chunks));
    };
    const onError = (error: Error): void => {
      done();
      reject(new InvalidRequestError(`the request body could not be read: ${error.message}`));
    };
    const done = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}
