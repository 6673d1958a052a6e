import { queuedBusiness } from "../../mailbox/mailbox-internals.js";
import type { Message } from "../../message/message.js";
import type { ProcessRunner } from "../../process/process-runner.js";

/** An agent that waits on another: for the answer to an ask it sent (`ask`), or for room in its full mailbox (`put`, see put-waits.ts). */
export interface WaitEdge {
  readonly from: string;
  readonly to: string;
  readonly type: string;
  readonly via: "ask" | "put";
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
    if (message.replyTo !== undefined && busy.has(message.sender)) edges.push({ from: message.sender, to: recipient, type: message.type, via: "ask" });
  };
  for (const [name, r] of runners) {
    if (r.current !== undefined) consider(r.current, name);
    if (r.box !== undefined) for (const message of queuedBusiness(r.box)) consider(message, name);
  }
  return edges;
}

/** A cycle of waits (`a` asks `b`, … waits for room in `a`'s mailbox), if there is one: a depth-first search over every edge. */
export function findCycle(edges: readonly WaitEdge[]): WaitEdge[] | undefined {
  const out = new Map<string, WaitEdge[]>();
  for (const edge of edges) {
    const from = out.get(edge.from);
    if (from === undefined) out.set(edge.from, [edge]);
    else from.push(edge);
  }
  const done = new Set<string>();
  const path: WaitEdge[] = [];
  const onPath = new Map<string, number>();
  const visit = (node: string): WaitEdge[] | undefined => {
    onPath.set(node, path.length);
    for (const edge of out.get(node) ?? []) {
      const at = onPath.get(edge.to);
      if (at !== undefined) return [...path.slice(at), edge];
      if (done.has(edge.to)) continue;
      path.push(edge);
      const cycle = visit(edge.to);
      if (cycle !== undefined) return cycle;
      path.pop();
    }
    onPath.delete(node);
    done.add(node);
    return undefined;
  };
  for (const start of out.keys()) {
    if (done.has(start)) continue;
    const cycle = visit(start);
    if (cycle !== undefined) return cycle;
  }
  return undefined;
}

/** `coord-a asks ledger (balance) -> ledger waits for room in coord-a's mailbox (audit)`. */
export function formatChain(chain: readonly WaitEdge[]): string {
  return chain.map((e) => (e.via === "ask" ? `${e.from} asks ${e.to} (${e.type})` : `${e.from} waits for room in ${e.to}'s mailbox (${e.type})`)).join(" -> ");
}
