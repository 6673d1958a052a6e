import { CivitasError } from "../errors/civitas-error.js";

/**
 * No HMAC key was given to a {@link JsonlAuditSink} (or a verifier): neither
 * the `key` option nor the `CIVITAS_AUDIT_KEY` environment variable is set.
 */
export class AuditKeyMissingError extends CivitasError {
  /** What needed the key: the log file, or the verification call. */
  readonly path: string;
  constructor(path: string, message?: string) {
    super(
      "AUDIT_KEY_MISSING",
      message ??
        `the audit log '${path}' needs an HMAC key, got none; pass { key } (a non-empty string or Uint8Array) or set the CIVITAS_AUDIT_KEY environment variable`,
    );
    this.path = path;
  }
}

/**
 * An audit log is damaged: a row that does not parse, does not chain, or does
 * not match its hash, or a final fragment that is not a torn row. Also thrown
 * when a sink is asked to append to a log that ends in a torn line (run
 * `repairAuditLog(path)` first).
 */
export class AuditCorruptError extends CivitasError {
  /** The log file. */
  readonly path: string;
  /** The 0-based index of the first damaged line, when known. */
  readonly index: number | undefined;
  /** `true` when the only damage is a torn final line that `repairAuditLog` can remove. */
  readonly tornTail: boolean;
  constructor(path: string, message: string, details: { index?: number; tornTail?: boolean } = {}, options?: ErrorOptions) {
    super("AUDIT_CORRUPT", message, options);
    this.path = path;
    this.index = details.index;
    this.tornTail = details.tornTail ?? false;
  }
}

/** `emit` was called on a {@link JsonlAuditSink} after `close()`. */
export class AuditSinkClosedError extends CivitasError {
  /** The log file of the closed sink. */
  readonly path: string;
  constructor(path: string) {
    super("AUDIT_SINK_CLOSED", `the audit sink for '${path}' is closed and takes no more events; create a new JsonlAuditSink to continue the log`);
    this.path = path;
  }
}

/**
 * An audit log's file cannot be opened or read: it does not exist (for a
 * verifier or a repair), the path is a directory, or the process may not
 * read or write it. The file-system error (`ENOENT`, `EISDIR`, `EACCES` …)
 * is the `cause`; its code is also in {@link AuditUnreadableError.reason}.
 */
export class AuditUnreadableError extends CivitasError {
  /** The path that could not be read. */
  readonly path: string;
  /** The file-system error's code (`ENOENT`, `EISDIR`, `EACCES` …), or `"unknown"`. */
  readonly reason: string;
  constructor(path: string, doing: string, cause: unknown) {
    const reason = fsCode(cause);
    super("AUDIT_UNREADABLE", `could not ${doing} the audit log '${path}': ${explain(reason, cause)}`, { cause });
    this.path = path;
    this.reason = reason;
  }
}

function fsCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "unknown";
}

/** The file-system error in words, with what to do about it. */
function explain(code: string, error: unknown): string {
  switch (code) {
    case "ENOENT":
      return "no such file; check the path";
    case "EISDIR":
      return "it is a directory; pass the path of the .jsonl file inside it";
    case "EACCES":
    case "EPERM":
      return `permission denied (${code}); run as a user that may read (and, for a sink or a repair, write) it`;
    default:
      return `${error instanceof Error ? error.message : String(error)}; check the path and the file`;
  }
}
