#!/usr/bin/env node
/**
 * The `civitas` command line: `civitas <group> <command> [arguments] [options]`.
 * Parses the arguments with `node:util` `parseArgs`, runs one command, prints
 * its text (or, with `--json`, one JSON object) on stdout and exits with a
 * documented code (docs/cli.md). Command groups are loaded on demand, so
 * `civitas state …` works without the audit module and vice versa.
 * @module
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { AuditKeys } from "./audit-commands.js";
import { errorResult, ExitCode, usageError, type CommandResult } from "./output.js";

type Values = Record<string, string | boolean | string[] | undefined>;

interface Command {
  /** Arguments and options, after `civitas <group> <command>`. */
  usage: string;
  summary: string;
  positionals: readonly string[];
  options: Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }>;
  run(args: readonly string[], values: Values): Promise<CommandResult>;
}

const KEY_OPTION = { key: { type: "string", multiple: true }, "key-for": { type: "string", multiple: true } } as const;
const STORE_OPTIONS = { store: { type: "string" }, table: { type: "string" } } as const;
const KEY_HELP =
  "  --key K        the HMAC key of the log (default: the CIVITAS_AUDIT_KEY environment variable)\n  --key-for ID=K the key of the rows signed under keyId ID (repeat it for a log signed under rotated keys;\n                 --key, or CIVITAS_AUDIT_KEY, then covers any other keyId)";
const STORE_HELP =
  "  --store URI    the state store: sqlite:<path> (opened read-only) or postgres://user@host:port/db\n  --table NAME   the table (default: civitas_state; on PostgreSQL optionally schema.table)";

/** The verification keys: `--key` (or CIVITAS_AUDIT_KEY) for any keyId, `--key-for ID=K` for one. */
function auditKeys(values: Values): AuditKeys {
  const plain = Array.isArray(values.key) ? values.key : [];
  if (plain.length > 1) {
    throw usageError(`--key was given ${plain.length} times, but one key covers every keyId; for a log signed under rotated keys pass --key-for <keyId>=<key> for each`);
  }
  const keys: Record<string, string> = {};
  for (const entry of Array.isArray(values["key-for"]) ? values["key-for"] : []) {
    const at = entry.indexOf("=");
    const id = entry.slice(0, at);
    const key = entry.slice(at + 1);
    if (at <= 0 || key === "") throw usageError(`--key-for takes <keyId>=<key>, got '${at < 0 ? entry : `${id}=…`}'`);
    if (Object.hasOwn(keys, id)) throw usageError(`--key-for names keyId '${id}' twice`);
    keys[id] = key;
  }
  const fallback = plain[0] ?? process.env.CIVITAS_AUDIT_KEY;
  const named = Object.keys(keys).length > 0;
  if ((fallback === undefined || fallback === "") && !named) throw usageError("no audit key: pass --key K (or --key-for <keyId>=K) or set CIVITAS_AUDIT_KEY");
  return { ...(fallback === undefined || fallback === "" ? {} : { key: fallback }), ...(named ? { keys } : {}) };
}

function storeOptions(values: Values): { store: string | undefined; table: string | undefined } {
  return {
    store: typeof values.store === "string" ? values.store : undefined,
    table: typeof values.table === "string" ? values.table : undefined,
  };
}

const audit = () => import("./audit-commands.js");
const state = () => import("./state-commands.js");

const COMMANDS: Record<string, Record<string, Command>> = {
  audit: {
    verify: {
      usage: "<file> [--key K] [--key-for ID=K ...] [--json]",
      summary: "check the hash chain and signatures of a JSONL audit log (exit 0 intact, 1 broken, 3 unreadable)",
      positionals: ["file"],
      options: KEY_OPTION,
      run: async ([file], v) => (await audit()).auditVerify(file!, auditKeys(v)),
    },
    "verify-suspension": {
      usage: "<file> <agent> [--key K] [--key-for ID=K ...] [--store URI [--table T]] [--json]",
      summary: "show each suspension of <agent> and whether exactly one decision (approval, denial, expiry or cancellation) settled it; with --store, also that the log is not cut before the anchor stored with the agent's state (exit 0 verified or pending, 1 failed, 4 no row of <agent>, with the closest agent name the log holds)",
      positionals: ["file", "agent"],
      options: { ...KEY_OPTION, ...STORE_OPTIONS },
      run: async ([file, agent], v) => (await audit()).auditVerifySuspension(file!, agent!, auditKeys(v), storeOptions(v)),
    },
    "verify-approval": {
      usage: "<file> <approvalId> [--key K] [--key-for ID=K ...] [--json]",
      summary: "show the votes of one approval request and whether its action ran once, only after every required vote (exit 0 verified or pending, 1 failed)",
      positionals: ["file", "approvalId"],
      options: KEY_OPTION,
      run: async ([file, approvalId], v) => (await audit()).auditVerifyApproval(file!, approvalId!, auditKeys(v)),
    },
    export: {
      usage: "--store postgres://… [--table T] [--out file] [--json]",
      summary: "write the chain of a PostgresAuditSink as a JSONL log that 'audit verify' reads (to --out, else stdout; exit 0, 3 unreadable)",
      positionals: [],
      options: { ...STORE_OPTIONS, out: { type: "string" } },
      run: async (_args, v) =>
        (await import("./audit-export.js")).auditExport({ ...storeOptions(v), out: typeof v.out === "string" ? v.out : undefined, json: v.json === true }),
    },
    repair: {
      usage: "<file> [--json]",
      summary: "remove a torn final line left by a crash, and nothing else (exit 0, or 3 when refused)",
      positionals: ["file"],
      options: {},
      run: async ([file]) => (await audit()).auditRepair(file!),
    },
  },
  state: {
    list: {
      usage: "--store sqlite:<path>|postgres://… [--table T] [--json]",
      summary: "list the names that have stored state",
      positionals: [],
      options: STORE_OPTIONS,
      run: async (_args, v) => (await state()).stateList(storeOptions(v)),
    },
    show: {
      usage: "<name> --store sqlite:<path>|postgres://… [--table T] [--json]",
      summary: "print the stored state of <name> as JSON (exit 4 when unknown)",
      positionals: ["name"],
      options: STORE_OPTIONS,
      run: async ([name], v) => (await state()).stateShow(name!, storeOptions(v)),
    },
    suspended: {
      usage: "--store sqlite:<path>|postgres://… [--table T] [--json]",
      summary: "list the agents whose stored state holds a suspension marker, with each pause's deadline (PostgreSQL: one query on the marker column)",
      positionals: [],
      options: STORE_OPTIONS,
      run: async (_args, v) => (await state()).stateSuspended(storeOptions(v)),
    },
    migrate: {
      usage: "--store postgres://…|sqlite:<path> [--table T] [--json]",
      summary: "create the store's table (PostgreSQL: with its marker index and fence sequence) if missing; a table of another shape is refused (exit 3)",
      positionals: [],
      options: STORE_OPTIONS,
      run: async (_args, v) => (await state()).stateMigrate(storeOptions(v)),
    },
  },
};

/** Commands without a group: `civitas serve …`. */
const TOP_LEVEL: Record<string, Command> = {
  serve: {
    usage: "<topology> --module <file> [--port N] [--host H] [--tls-key F --tls-cert F] [--json]",
    summary:
      "build a runtime from <topology> with the agent classes and authenticate() that <file> exports, start it, and serve the approver inbox (civitas-ts/http) until SIGINT or SIGTERM (exit 2 without --module or authenticate, 3 for an unreadable file or module)",
    positionals: ["topology"],
    options: { module: { type: "string" }, port: { type: "string" }, host: { type: "string" }, "tls-key": { type: "string" }, "tls-cert": { type: "string" } },
    run: async ([topology], v) => {
      const text = (key: string): string | undefined => (typeof v[key] === "string" ? v[key] : undefined);
      return (await import("./serve-command.js")).serve({ topology: topology!, module: text("module"), port: text("port"), host: text("host"), tlsKey: text("tls-key"), tlsCert: text("tls-cert") });
    },
  },
};

const SERVE_HELP = `  --module FILE  an ES module exporting authenticate(request) (required), agents (the classes the
                 topology names), and optionally options (runtime options: store, auditSink,
                 approvalPolicy, transport …) and inbox (inbox options: audit, allowedOrigins …)
  --port N       the port (default: 8080; 0 picks a free one)
  --host H       the address to listen on (default: 127.0.0.1)
  --tls-key F    serve HTTPS with this PEM private key (with --tls-cert)
  --tls-cert F   and this PEM certificate`;

const EXIT_HELP = `exit codes:
  0  ok (a pending suspension included)
  1  verification failed
  2  usage error
  3  corrupt or unreadable input (repair refused included)
  4  not found`;

function commandHelp(group: string, name: string, c: Command): string {
  const options = [
    group === "audit" && name !== "repair" && name !== "export" ? KEY_HELP : "",
    group === "state" || name === "verify-suspension" || name === "export" ? STORE_HELP : "",
    name === "export" ? "  --out FILE     write the log to FILE (default: stdout; the row count then goes to stderr)" : "",
    group === "serve" ? SERVE_HELP : "",
  ];
  return [
    `usage: civitas ${label(group, name)} ${c.usage}`,
    "",
    c.summary,
    "",
    "options:",
    ...options.filter((o) => o !== ""),
    "  --json         print one JSON object on stdout instead of text",
    "  -h, --help     show this help",
    "",
    EXIT_HELP,
  ].join("\n");
}

/** How a command is called: `audit verify`, or `serve` for a command without a group. */
const label = (group: string, name: string): string => (name === "" ? group : `${group} ${name}`);

function overview(groups: readonly string[] = Object.keys(COMMANDS), top = true): string {
  const lines = ["usage: civitas <group> <command> [arguments] [options]", "", "commands:"];
  for (const group of groups) {
    for (const [name, c] of Object.entries(COMMANDS[group] ?? {})) {
      lines.push(`  civitas ${group} ${name} ${c.usage}`, `      ${c.summary}`);
    }
  }
  if (top) for (const [name, c] of Object.entries(TOP_LEVEL)) lines.push(`  civitas ${name} ${c.usage}`, `      ${c.summary}`);
  lines.push("", "Every command takes --json and --help; civitas --version (-V) prints the version. See docs/cli.md.", "", EXIT_HELP);
  return lines.join("\n");
}

const isHelp = (arg: string | undefined): boolean => arg === "--help" || arg === "-h" || arg === "help";
const isVersion = (arg: string | undefined): boolean => arg === "--version" || arg === "-V";

/** The version in the package's own package.json: two levels up from both src/cli/main.ts and dist/cli/main.js. */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: unknown };
  if (typeof pkg.version !== "string") throw new Error("civitas: package.json has no version");
  return pkg.version;
}

/** Runs one command line and returns what to print; never throws. */
async function run(argv: readonly string[]): Promise<CommandResult> {
  const [group, name, ...rest] = argv;
  const help = (text: string): CommandResult => ({ exitCode: ExitCode.OK, text, json: { help: text } });
  try {
    if (group === undefined) throw usageError(`a command is required\n\n${overview()}`);
    if (isHelp(group)) return help(overview());
    if (isVersion(group) && argv.slice(1).every((arg) => arg === "--json")) {
      const version = packageVersion();
      return { exitCode: ExitCode.OK, text: version, json: { version } };
    }
    const topLevel = TOP_LEVEL[group];
    if (topLevel !== undefined) return await runCommand(group, "", topLevel, argv.slice(1));
    const commands = COMMANDS[group];
    if (commands === undefined) throw usageError(`unknown command group '${group}'\n\n${overview()}`);
    if (name === undefined || name.startsWith("-")) {
      if (isHelp(name)) return help(overview([group], false));
      throw usageError(`'civitas ${group}' needs a command\n\n${overview([group], false)}`);
    }
    const command = commands[name];
    if (command === undefined) throw usageError(`unknown command 'civitas ${group} ${name}'\n\n${overview([group], false)}`);
    return await runCommand(group, name, command, rest);
  } catch (err) {
    return errorResult(err);
  }
}

/** Parses `args` against `command`'s options and runs it (or prints its help). */
async function runCommand(group: string, name: string, command: Command, args: readonly string[]): Promise<CommandResult> {
  const help = (text: string): CommandResult => ({ exitCode: ExitCode.OK, text, json: { help: text } });
  const called = label(group, name);
  try {
    let parsed: { values: Values; positionals: string[] };
    try {
      const result = parseArgs({
        args: [...args],
        allowPositionals: true,
        strict: true,
        options: { ...command.options, json: { type: "boolean" }, help: { type: "boolean", short: "h" } },
      });
      parsed = { values: result.values, positionals: result.positionals };
    } catch (err) {
      throw usageError(`${(err as Error).message}\nusage: civitas ${called} ${command.usage}`);
    }
    if (parsed.values.help === true) return help(commandHelp(group, name, command));
    if (parsed.positionals.length !== command.positionals.length) {
      const expected = command.positionals.map((p) => `<${p}>`).join(" ") || "no arguments";
      throw usageError(`'civitas ${called}' takes ${expected}, got ${parsed.positionals.length} argument${parsed.positionals.length === 1 ? "" : "s"}\nusage: civitas ${called} ${command.usage}`);
    }
    return await command.run(parsed.positionals, parsed.values);
  } catch (err) {
    return errorResult(err);
  }
}

const argv = process.argv.slice(2);
const result = await run(argv);
const json = argv.includes("--json");
if (json) {
  process.stdout.write(`${JSON.stringify({ ok: result.exitCode === ExitCode.OK, ...result.json, exitCode: result.exitCode })}\n`);
} else if (result.toStderr === true) {
  process.stderr.write(`${result.text}\n`);
} else {
  process.stdout.write(`${result.text}\n`);
}
process.exitCode = result.exitCode;
