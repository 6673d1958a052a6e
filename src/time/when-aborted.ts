/** The watchers of each signal {@link whenAborted} was asked about, behind its one listener. */
const watchers = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `watcher` once `signal` aborts (at once when it already has), unless
 * the returned function was called first. All the watchers of one signal
 * share one listener: the runtime's stop signal is watched by every start in
 * flight, and an EventTarget listener added and removed per start cost more
 * than the start itself. A watcher that throws is reported as an uncaught
 * exception, as a throwing listener is, without keeping the others from running.
 * @internal
 */
export function whenAborted(signal: AbortSignal, watcher: () => void): () => void {
  if (signal.aborted) {
    watcher();
    return unwatched;
  }
  let watching = watchers.get(signal);
  if (watching === undefined) {
    const set = new Set<() => void>();
    watchers.set(signal, set);
    signal.addEventListener("abort", () => notify(signal, set), { once: true });
    watching = set;
  }
  const own = watching;
  own.add(watcher);
  return () => own.delete(watcher);
}

function notify(signal: AbortSignal, set: Set<() => void>): void {
  watchers.delete(signal);
  for (const watcher of [...set]) {
    try {
      watcher();
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  }
  set.clear();
}

function unwatched(): void {}
