// A minimal runtime without envelopes: awaited async handlers and sends, bounded mailboxes, the scheduler's yield (see minimal.mjs).
import { minimal } from './minimal.mjs';

export const meta = { name: 'minimal-async', version: `hand-written, node ${process.versions.node}` };
export const { w1, w2, w3 } = minimal(false);
