// A minimal runtime with civitas-ts's SPEC §2 envelope on every message (see minimal.mjs).
import { minimal } from './minimal.mjs';

export const meta = { name: 'minimal-enveloped', version: `hand-written with civitas-ts's uuidv7, node ${process.versions.node}` };
export const { w1, w2, w3 } = minimal(true);
