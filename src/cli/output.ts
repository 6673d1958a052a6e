/**
 * Exit codes, results, errors and plain-text tables shared by the `civitas`
 * commands. Commands never write to the terminal themselves: they return a
 * {@link CommandResult} (or throw a {@link CliError}) and `main.ts` prints it.
 * @module
 */

/** The documented exit codes of `civitas` (see docs/cli.md). */
export const ExitCode = {
  /** Everything checked out (a `pending` suspension included). */
  OK: 0,
  /** A verification ran and failed (broken chain, failed suspension). */
  FAILED: 1,
  /** The command line is wrong: unknown command or option, missing argument, unsupported store scheme, no key. */
  USAGE: 2,
  /** The input is corrupt or cannot be read (missing file, damaged record, repair refused). */
  CORRUPT: 3,
  /** What was asked for does not exist (`state show` of an unknown name). */
  NOT_FOUND: 4,
} as const;

/** One of the values of {@link ExitCode}. */
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** What a command produced: its exit code, its human text (stdout) and its `--json` object. */
export interface CommandResult {
  /** The process exit code. */
  exitCode: ExitCode;
  /** Human-readable output, printed on stdout without `--json`. */
  text: string;
  /** Machine-readable output, printed as one JSON object on stdout with `--json`. */
  json: Record<string, unknown>;
  /** Print `text` on stderr instead of stdout (errors). */
  toStderr?: boolean;
}

/** An error the CLI reports with a specific exit code (anything else exits with {@link ExitCode.CORRUPT}). */
export class CliError extends Error {
  /** The exit code to leave with. */
  readonly exitCode: ExitCode;
  /** A stable identifier for `--json` output (`USAGE`, `NOT_FOUND`, `UNREADABLE` …). */
  readonly code: string;
  constructor(exitCode: ExitCode, code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.exitCode = exitCode;
    this.code = code;
    this.name = "CliError";
  }
}

/** A {@link CliError} for a wrong command line (exit 2). */
export function usageError(message: string): CliError {
  return new CliError(ExitCode.USAGE, "USAGE", message);
}

/**
 * Turns any thrown value into the result to print: a {@link CliError} keeps
 * its exit code; anything else (an unreadable file, a `CivitasError` such as
 * `STATE_SCHEMA` or `AUDIT_CORRUPT`) exits with {@link ExitCode.CORRUPT}.
 */
export function errorResult(err: unknown): CommandResult {
  const exitCode = err instanceof CliError ? err.exitCode : ExitCode.CORRUPT;
  const message = err instanceof Error ? err.message : String(err);
  const raw = (err as { code?: unknown } | null)?.code;
  const code = typeof raw === "string" ? raw : "UNREADABLE";
  return { exitCode, toStderr: true, text: `civitas: ${message}`, json: { ok: false, exitCode, error: { code, message } } };
}

/** `value`, or `-` when it is missing or empty. */
export function cell(value: string | undefined | null): string {
  return value === undefined || value === null || value === "" ? "-" : value;
}

/** Formats rows as a left-aligned plain-text table with a header line. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}
