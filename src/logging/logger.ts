/** Structured fields attached to a log line. */
export type LogFields = Record<string, unknown>;

/** Where the runtime reports what nobody else can observe. Replace it with the `logger` option. */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
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
