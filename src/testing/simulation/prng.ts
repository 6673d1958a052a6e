/**
 * mulberry32: a small, fast, seeded 32-bit generator (no `Math.random`), so
 * that a seed gives the same draws on every run and every Node version.
 * @returns a function drawing uniformly from [0, 1)
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fills `buffer` with bytes drawn from `next`. */
export function fillFrom(next: () => number, buffer: Uint8Array): void {
  for (let i = 0; i < buffer.length; i++) buffer[i] = Math.floor(next() * 256);
}
