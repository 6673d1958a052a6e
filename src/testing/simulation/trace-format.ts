import type { SimulationStep } from "./types.js";

/**
 * A trace as readable text, one step a line
 * (`  #3 deliver     ledger<-coord-a:transfer#1  [018b…]  detail`); the
 * step `mark` is flagged with `>>`.
 */
export function formatTrace(trace: readonly SimulationStep[], mark?: number): string {
  const width = String(Math.max(0, trace.length - 1)).length;
  return trace
    .map((s) => {
      const flag = s.step === mark ? ">>" : "  ";
      const id = s.messageId === undefined ? "" : `  [${s.messageId}]`;
      const detail = s.detail === undefined ? "" : `  ${s.detail}`;
      const node = s.node === undefined ? "" : `[${s.node}] `;
      return `${flag} #${String(s.step).padStart(width)} ${s.kind.padEnd(14)} ${node}${s.key}${id}${detail}`;
    })
    .join("\n");
}
