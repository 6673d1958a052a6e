import { queuedBusiness } from "../../mailbox/mailbox-internals.js";
import type { Message } from "../../message/message.js";
import type { ProcessRunner } from "../../process/process-runner.js";

/** An agent busy in a handler that waits for the answer to an ask it sent. */
export interface WaitEdge {
  readonly from: string;
  readonly to: string;
  readonly type: string;
}

/**
 * The asks sent by agents busy in a handler and not answered yet: each is
 * queued in, or being handled by, its recipient. (An ask from outside the
 * tree has no waiting agent and is left out.)
 */
export function waitEdges(runners: ReadonlyMap<string, ProcessRunner>): WaitEdge[] {
  const busy = new Set<string>();
  for (const [name, r] of runners) if (r.current !== undefined) busy.add(name);
  const edges: WaitEdge[] = [];
  if (busy.size === 0) return edges;
  const consider = (message: Message, recipient: string): void => {
    if (message.replyTo !== undefined && busy.has(message.sender)) edges.push({ from: message.sender, to: recipient, type: message.type });
  };
  for (const [name, r] of runners) {
    if (r.current !== undefined) consider(r.current, name);
    if (r.box !== undefined) for (const message of queuedBusiness(r.box)) consider(message, name);
  }
  return edges;
}

/** A cycle of asks (`a` asks `b`, … asks `a`), if there is one. */
export function findCycle(edges: readonly WaitEdge[]): WaitEdge[] | undefined {
  const out = new Map<string, WaitEdge>();
  for (const edge of edges) if (!out.has(edge.from)) out.set(edge.from, edge);
  for (const start of out.keys()) {
    const path: WaitEdge[] = [];
    const seen = new Map<string, number>();
    for (let node: string | undefined = start; node !== undefined; ) {
      const at = seen.get(node);
      if (at !== undefined) return path.slice(at);
      seen.set(node, path.length);
      const edge = out.get(node);
      if (edge === undefined) break;
      path.push(edge);
      node = edge.to;
    }
  }
  return undefined;
}

/** `coord-a asks ledger (balance) -> ledger asks coord-a (audit)`. */
export function formatChain(chain: readonly WaitEdge[]): string {
  return chain.map((e) => `${e.from} asks ${e.to} (${e.type})`).join(" -> ");
}
