const char = String.fromCharCode;

/**
 * The string of the `length` (0 to 16) bytes of `b` at `p`, which the
 * caller checked are ASCII, made by one `String.fromCharCode` call: adding
 * the characters one by one made a string per character (a message's
 * short keys and values cost ~10 such additions), and up to 16 bytes (a
 * span id) the call costs less than Node's latin1 reader (measured: 38
 * against 61 ns for 16 bytes; even at 36).
 * @internal
 */
export function shortAscii(b: Uint8Array, p: number, length: number): string {
  switch (length) {
    case 0:
      return "";
    case 1:
      return char(b[p] as number);
    case 2:
      return char(b[p] as number, b[p + 1] as number);
    case 3:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number);
    case 4:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number);
    case 5:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number);
    case 6:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number, b[p + 5] as number);
    case 7:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number, b[p + 5] as number, b[p + 6] as number);
    case 8:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number, b[p + 5] as number, b[p + 6] as number, b[p + 7] as number);
    case 9:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number, b[p + 5] as number, b[p + 6] as number, b[p + 7] as number, b[p + 8] as number);
    case 10:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number, b[p + 5] as number, b[p + 6] as number, b[p + 7] as number, b[p + 8] as number, b[p + 9] as number);
    case 11:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number, b[p + 5] as number, b[p + 6] as number, b[p + 7] as number, b[p + 8] as number, b[p + 9] as number, b[p + 10] as number);
    case 12:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number, b[p + 5] as number, b[p + 6] as number, b[p + 7] as number, b[p + 8] as number, b[p + 9] as number, b[p + 10] as number, b[p + 11] as number);
    case 13:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number, b[p + 5] as number, b[p + 6] as number, b[p + 7] as number, b[p + 8] as number, b[p + 9] as number, b[p + 10] as number, b[p + 11] as number, b[p + 12] as number);
    case 14:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number, b[p + 5] as number, b[p + 6] as number, b[p + 7] as number, b[p + 8] as number, b[p + 9] as number, b[p + 10] as number, b[p + 11] as number, b[p + 12] as number, b[p + 13] as number);
    case 15:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number, b[p + 5] as number, b[p + 6] as number, b[p + 7] as number, b[p + 8] as number, b[p + 9] as number, b[p + 10] as number, b[p + 11] as number, b[p + 12] as number, b[p + 13] as number, b[p + 14] as number);
    case 16:
      return char(b[p] as number, b[p + 1] as number, b[p + 2] as number, b[p + 3] as number, b[p + 4] as number, b[p + 5] as number, b[p + 6] as number, b[p + 7] as number, b[p + 8] as number, b[p + 9] as number, b[p + 10] as number, b[p + 11] as number, b[p + 12] as number, b[p + 13] as number, b[p + 14] as number, b[p + 15] as number);
    default:
      throw new RangeError(`shortAscii takes 0 to 16 bytes, not ${length}`);
  }
}
