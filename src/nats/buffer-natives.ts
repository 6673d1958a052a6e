/*
 * Node's own latin1 reader and UTF-8 writer of a Buffer, which
 * `buffer.toString("latin1", from, to)` and `buffer.write(text, at, max, "utf8")`
 * reach through their encoding lookup and argument checks: called directly
 * for the ids, read and written per message (the callers check the bounds).
 * Undocumented: when one is missing, the documented call is used.
 */

/** The signature of Node's `Buffer.prototype.latin1Slice`. */
type Latin1Slice = (this: Buffer, from: number, to: number) => string;

/** The signature of Node's `Buffer.prototype.utf8Write`: the number of bytes written. */
type Utf8Write = (this: Buffer, text: string, at: number, max: number) => number;

/** `this.toString("latin1", from, to)`, without its encoding lookup. @internal */
export const latin1Slice: Latin1Slice = (Buffer.prototype as unknown as { latin1Slice?: Latin1Slice }).latin1Slice ?? function (this: Buffer, from: number, to: number): string {
  return this.toString("latin1", from, to);
};

/** `this.write(text, at, max, "utf8")`, without its argument checks and encoding lookup. @internal */
export const utf8Write: Utf8Write = (Buffer.prototype as unknown as { utf8Write?: Utf8Write }).utf8Write ?? function (this: Buffer, text: string, at: number, max: number): number {
  return this.write(text, at, max, "utf8");
};
