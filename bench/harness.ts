/**
 * Shared pieces of the benchmarks: the baseline async queue and yield
 * scheduler, timing helpers, and the table printer.
 *
 * Nothing here asserts on speed: benchmarks print figures, baselines measured
 * in the same process, ratios and targets.
 */
import type { CivitasModule } from "./civitas.js";

// ---- baseline building blocks ---------------------------------------------

/** A growable ring buffer (index based, no Array#shift). */
export class Ring<T> {
  private buffer: (T | undefined)[] = new Array<T | undefined>(16);
  private mask = 15;
  private head = 0;
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(item: T): void {
    if (this.count === this.buffer.length) this.grow();
    this.buffer[(this.head + this.count) & this.mask] = item;
    this.count++;
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.buffer[this.head];
    this.buffer[this.head] = undefined;
    this.head = (this.head + 1) & this.mask;
    this.count--;
    return item;
  }

  private grow(): void {
    const next = new Array<T | undefined>(this.buffer.length * 2);
    for (let i = 0; i < this.count; i++) next[i] = this.buffer[(this.head + i) & this.mask];
    this.buffer = next;
    this.mask = next.length - 1;
    this.head = 0;
  }
}

interface WaitingPut<T> {
  readonly item: T;
  readonly resolve: () => void;
}

/**
 * The baseline: a bounded async queue with the same shape as the Mailbox's
 * business lane — `put` waits while full, `get` waits while empty, a put hands
 * its item straight to a waiting getter, `poll` never waits. No TTL, no
 * priority lane, no abort signals, no close.
 */
export class AsyncQueue<T> {
  private readonly items = new Ring<T>();
  private readonly getters = new Ring<(item: T) => void>();
  private readonly putters = new Ring<WaitingPut<T>>();

  constructor(private readonly capacity = 1000) {}

  get size(): number {
    return this.items.length;
  }

  put(item: T): Promise<void> {
    const getter = this.getters.shift();
    if (getter !== undefined) {
      getter(item);
      return Promise.resolve();
    }
    if (this.items.length < this.capacity && this.putters.length === 0) {
      this.items.push(item);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.putters.push({ item, resolve }));
  }

  poll(): T | undefined {
    const item = this.items.shift();
    if (item === undefined) return undefined;
    const putter = this.putters.shift();
    if (putter !== undefined) {
      this.items.push(putter.item);
      putter.resolve();
    }
    return item;
  }

  get(): Promise<T> {
    const item = this.poll();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise<T>((resolve) => this.getters.push(resolve));
  }
}

/**
 * The baseline's yield cadence, identical to the runtime's `Scheduler`: every
 * `checkEvery` ticks (one tick per handled message, across every loop sharing
 * this instance) it looks at the time, and once `sliceMs` passed since the
 * last yield the next tick waits for a `setImmediate`.
 */
export class YieldScheduler {
  private ticks = 0;
  private pending: Promise<void> | undefined;
  private sliceStart = performance.now();

  /** The runtime's rule (src/contracts/scheduler.ts): every `checkEvery` ticks, yield once `sliceMs` passed since the last yield. */
  constructor(
    private readonly checkEvery = 128,
    private readonly sliceMs = 1,
  ) {}

  tick(): Promise<void> | undefined {
    if (this.pending !== undefined) return this.pending;
    if (++this.ticks < this.checkEvery) return undefined;
    this.ticks = 0;
    if (performance.now() - this.sliceStart < this.sliceMs) return undefined;
    this.pending = new Promise((resolve) =>
      setImmediate(() => {
        this.pending = undefined;
        this.sliceStart = performance.now();
        resolve();
      }),
    );
    return this.pending;
  }
}

/** A promise with its resolve function exposed. */
export interface Latch {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
}

export function latch(): Latch {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

// ---- measuring -------------------------------------------------------------

/** Full, repeated garbage collection (needs `node --expose-gc`). */
export function collect(): void {
  const gc = globalThis.gc;
  if (gc === undefined) return;
  for (let i = 0; i < 3; i++) gc();
}

export function hasGc(): boolean {
  return globalThis.gc !== undefined;
}

/** Lets pending immediates/timers from the previous run settle. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Runs `fn` once and returns its wall time in seconds. No forced GC first:
 * `gc()` is a memory-reducing full collection that also throws away
 * optimized code, which then costs the side with more code to re-optimize
 * (the runtime) far more than the baseline; rounds alternate instead, so
 * natural collections hit both sides alike.
 */
export async function timed(fn: () => Promise<void>): Promise<number> {
  await settle();
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Nearest-rank percentile of `values` (not modified). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] as number;
}

/**
 * Runs `warmup` rounds of every side, then `rounds` measured rounds, the
 * sides taking turns in each so drift hits all alike; returns the median of
 * each side's per-round figure.
 */
export async function alternate<K extends string>(rounds: number, warmup: number, sides: Record<K, () => Promise<number>>): Promise<Record<K, number>> {
  const names = Object.keys(sides) as K[];
  for (let i = 0; i < warmup; i++) for (const name of names) await sides[name]();
  const figures = new Map<K, number[]>(names.map((name) => [name, []]));
  for (let i = 0; i < rounds; i++) for (const name of names) figures.get(name)?.push(await sides[name]());
  return Object.fromEntries(names.map((name) => [name, median(figures.get(name) ?? [])])) as Record<K, number>;
}

// ---- reporting -------------------------------------------------------------

/** What a figure is compared against. */
export type Target =
  /** runtime / baseline must be at least `value` (throughput). */
  | { readonly kind: "ratio>="; readonly value: number }
  /** runtime / baseline must be at most `value` (latency). */
  | { readonly kind: "ratio<="; readonly value: number }
  /** the runtime figure itself must be at most `value` (in its unit). */
  | { readonly kind: "value<="; readonly value: number };

export interface Row {
  readonly bench: string;
  readonly metric: string;
  readonly unit: string;
  readonly runtime: number;
  readonly baseline: number;
  readonly target?: Target;
  readonly note?: string;
}

export interface Benchmark {
  readonly name: string;
  readonly title: string;
  run(civitas: CivitasModule): Promise<Row[]>;
}

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 1e6) return `${(value / 1e6).toFixed(2)}M`;
  if (abs >= 1e4) return `${(value / 1e3).toFixed(1)}k`;
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** `a / b` as a ratio, `0.42x`. */
export function ratioText(a: number, b: number): string {
  return `${(a / b).toFixed(2)}x`;
}

function targetText(target: Target | undefined, unit: string): string {
  if (target === undefined) return "-";
  switch (target.kind) {
    case "ratio>=":
      return `>= ${target.value.toFixed(2)}x`;
    case "ratio<=":
      return `<= ${target.value.toFixed(2)}x`;
    case "value<=":
      return `<= ${formatNumber(target.value)} ${unit}`;
  }
}

function verdict(row: Row): string {
  const { target } = row;
  if (target === undefined) return "";
  const ratio = row.runtime / row.baseline;
  switch (target.kind) {
    case "ratio>=":
      return ratio >= target.value ? "ok" : "MISS";
    case "ratio<=":
      return ratio <= target.value ? "ok" : "MISS";
    case "value<=":
      return row.runtime <= target.value ? "ok" : "MISS";
  }
}

export function printTable(rows: readonly Row[]): void {
  const header = ["benchmark", "metric", "civitas", "baseline", "ratio", "target", ""];
  const body = rows.map((row) => [
    row.bench,
    row.metric,
    `${formatNumber(row.runtime)} ${row.unit}`,
    `${formatNumber(row.baseline)} ${row.unit}`,
    ratioText(row.runtime, row.baseline),
    targetText(row.target, row.unit),
    verdict(row),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((cells) => (cells[i] as string).length)));
  const numeric = new Set([2, 3, 4]);
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (numeric.has(i) ? cell.padStart(widths[i] as number) : cell.padEnd(widths[i] as number)))
      .join("  ")
      .trimEnd();
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const cells of body) console.log(line(cells));
  const notes = rows.filter((row) => row.note !== undefined);
  if (notes.length > 0) {
    console.log("");
    for (const row of notes) console.log(`  ${row.bench} / ${row.metric.trim()}: ${row.note as string}`);
  }
}
