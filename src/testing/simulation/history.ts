/**
 * One operation of a {@link History}: who called what with which input, and
 * how it ended. `invokedAt` and `completedAt` are positions in the history's
 * own order of events (a simulation runs one step at a time, so the order in
 * which calls began and ended is exact).
 */
export interface HistoryOperation {
  /** Who called it (a client, an agent): one process calls one operation at a time. */
  readonly process: string;
  /** What was called: `read`, `write`, `cas`, `get`, `put` … (the model decides what each means). */
  readonly kind: string;
  /** Its input (JSON). */
  readonly input: unknown;
  /** When it began. */
  readonly invokedAt: number;
  /**
   * How it ended: `ok` with `output`; `fail`: it certainly did not take
   * effect (a refusal before any change); `info`: unknown (a timeout, a
   * crash, no answer yet) — it may have taken effect, at any point after it began.
   */
  status: "ok" | "fail" | "info";
  /** Its output, when `ok`. */
  output?: unknown;
  /** When it ended (`ok` or `fail`); absent for `info`. */
  completedAt?: number;
}

/**
 * A recorded history of operations (invocation, completion, value), as
 * Jepsen and Knossos record them, for {@link checkLinearizable}: wrap each
 * call a test makes with {@link History.record}.
 * @example
 * ```ts
 * const history = new History();
 * await history.record("client-1", "write", 3, () => sim.ask("register", "write", { value: 3 }));
 * const value = await history.record("client-2", "read", null, async () => (await sim.ask("register", "read", {})).payload.value);
 * expect(checkLinearizable(history, registerModel(0)).linearizable).toBe(true);
 * ```
 */
export class History {
  readonly #operations: HistoryOperation[] = [];
  #clock = 0;

  /** Every operation so far, in the order they began. */
  get operations(): readonly HistoryOperation[] {
    return this.#operations;
  }

  /**
   * Begins an operation; its handle ends it with `ok(output)` or `fail()`.
   * One never ended stays `info` (it may or may not have taken effect).
   */
  invoke(process: string, kind: string, input: unknown): { ok(output: unknown): void; fail(): void } {
    const operation: HistoryOperation = { process, kind, input, invokedAt: this.#clock++, status: "info" };
    this.#operations.push(operation);
    const end = (status: "ok" | "fail", output?: unknown): void => {
      if (operation.status !== "info") return;
      operation.status = status;
      operation.completedAt = this.#clock++;
      if (status === "ok") operation.output = output;
    };
    return { ok: (output) => end("ok", output), fail: () => end("fail") };
  }

  /**
   * Runs `call` as the operation `kind(input)` of `process`: `ok` with what
   * it resolves to; when it rejects, `fail` if `definite(error)` says it
   * certainly did not take effect, else `info`; the rejection is passed on.
   */
  async record<T>(process: string, kind: string, input: unknown, call: () => Promise<T>, definite: (error: unknown) => boolean = () => false): Promise<T> {
    const handle = this.invoke(process, kind, input);
    try {
      const output = await call();
      handle.ok(output);
      return output;
    } catch (error) {
      if (definite(error)) handle.fail();
      throw error;
    }
  }
}
