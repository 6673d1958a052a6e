/** The settlers of the promise {@link pendingPromise} made last. */
interface Settlers {
  /** Resolves it; typed loosely, as one slot serves promises of every type: pass what the promise is for. */
  resolve: (value?: unknown) => void;
  reject: (reason: unknown) => void;
}

/**
 * The settlers of the promise {@link pendingPromise} made last: read them at
 * once, before anything else can make another.
 * @internal
 */
export const settlers: Settlers = { resolve: noop, reject: noop };

function noop(): void {}

/** A promise's executor that hands out its settlers without a closure per promise. */
function capture(resolve: (value: never) => void, reject: (reason: unknown) => void): void {
  settlers.resolve = resolve as (value?: unknown) => void;
  settlers.reject = reject;
}

/**
 * A new pending promise whose settlers are in {@link settlers} right after
 * the call. On the paths that make one per message (a put that waits, an
 * ask), this saves the closure and context an inline executor allocates.
 * @internal
 */
export function pendingPromise<T>(): Promise<T> {
  return new Promise<T>(capture);
}
