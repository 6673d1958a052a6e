/** Structured fields attached to a log line. */
export type LogFields = Record<string, unknown>;

/** Where the runtime reports what nobody else can observe. Replace it with the `logger` option. */
export interface Logger {
  /** Detail for debugging; the default logger drops it. */
  debug(message: string, fields?: LogFields): void;
  /** Something worth knowing that needs no action; the default logger drops it. */
  info(message: string, fields?: LogFields): void;
  /** Something went wrong and was handled (a dropped late reply, a hook that overran). */
  warn(message: string, fields?: LogFields): void;
  /** Something failed that someone should look at (a crash, a sink that cannot record). */
  error(message: string, fields?: LogFields): void;
}

function write(level: string, message: string, fields?: LogFields): void {
  const extra = fields === undefined ? "" : ` ${safeJson(fields)}`;
  process.stderr.write(`[civitas] ${level} ${message}${extra}\n`);
}

function safeJson(fields: LogFields): string {
  try {
    return JSON.stringify(fields, (_key, value: unknown) =>
      value instanceof Error ? { name: value.name, message: value.message } : value,
    );
  } catch {
    return "{unserializable fields}";
  }
}

/** The default logger: warnings and errors to stderr, never stdout. */
export const stderrLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (message, fields) => write("warn", message, fields),
  error: (message, fields) => write("error", message, fields),
};

/** A logger that drops everything; handy in tests. */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
