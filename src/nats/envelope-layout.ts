/** The longest run of bytes a {@link Layout} keeps. */
const LAYOUT_BYTES = 512;

/**
 * The bytes of one part of the last envelope read in full, with the places
 * in them that vary from one message to the next (ids, the timestamp). A run
 * of messages from one sender to one agent repeats all the rest — the keys,
 * the names, the nulls, attempt and priority — and the lengths of what
 * varies, so the next envelope's bytes are compared with these but for those
 * places, and only what is there is read: the same bytes read as the same
 * values (MessagePack values delimit themselves). Used by msgpack-reader.ts.
 * @internal
 */
export class Layout {
  readonly bytes = new Uint8Array(LAYOUT_BYTES);
  private readonly view = new DataView(this.bytes.buffer);
  /** How many bytes are kept; 0 while none are (nothing matches). */
  length = 0;
  /** The places that vary: where each starts (from the first byte kept) and its length, in pairs, in order. */
  readonly holes = new Int32Array(8);
  holeCount = 0;

  /** Keeps `source`'s bytes from `from` to `to` but for the places `holes` (absolute, in pairs) lists. */
  keep(source: Uint8Array, from: number, to: number, holes: Int32Array, holeCount: number): void {
    const length = to - from;
    if (length > LAYOUT_BYTES) return;
    for (let i = 0; i < length; i++) this.bytes[i] = source[from + i] as number;
    for (let h = 0; h < holeCount; h++) {
      this.holes[2 * h] = (holes[2 * h] as number) - from;
      this.holes[2 * h + 1] = holes[2 * h + 1] as number;
    }
    this.holeCount = holeCount;
    this.length = length;
  }

  /**
   * Whether `input`'s bytes from `base` on repeat the kept ones, but for the
   * places that vary (the caller checks there are enough of them).
   */
  matches(input: DataView, base: number): boolean {
    const holes = this.holes;
    const count = this.holeCount;
    let i = 0;
    for (let h = 0; h < count; h++) {
      const to = holes[2 * h] as number;
      if (!this.same(input, base, i, to)) return false;
      i = to + (holes[2 * h + 1] as number);
    }
    return this.same(input, base, i, this.length);
  }

  /** Whether the kept bytes from `from` to `to` are `input`'s at `base` + `from`: four at a time, then one at a time. */
  private same(input: DataView, base: number, from: number, to: number): boolean {
    const fixed = this.view;
    let i = from;
    for (; i + 4 <= to; i += 4) if (input.getInt32(base + i) !== fixed.getInt32(i)) return false;
    for (; i < to; i++) if (input.getUint8(base + i) !== fixed.getUint8(i)) return false;
    return true;
  }
}
