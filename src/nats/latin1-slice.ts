/** The signature of Node's `Buffer.prototype.latin1Slice`. */
type Latin1Slice = (this: Buffer, from: number, to: number) => string;

/**
 * Node's own latin1 reader of a Buffer, which `buffer.toString("latin1", from, to)` reaches
 * through its encoding lookup and bounds adjustment: called directly for the ids, read
 * per message (the bounds are checked by the caller). Undocumented: when it is
 * missing, `toString` is used.
 * @internal
 */
export const latin1Slice: Latin1Slice = (Buffer.prototype as unknown as { latin1Slice?: Latin1Slice }).latin1Slice ?? function (this: Buffer, from: number, to: number): string {
  return this.toString("latin1", from, to);
};
