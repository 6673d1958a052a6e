import type { Runtime } from "../runtime/runtime.js";
import type { SuspendedAgent } from "../runtime/suspended-agent.js";
import { refuseUnknownFields, requiredText } from "./body-fields.js";
import { limitParam, pageOf } from "./paging.js";
import { route, type Route } from "./route.js";
import type { ScopeResolver } from "./scope.js";

function matches(pause: SuspendedAgent, query: URLSearchParams): boolean {
  const agent = query.get("agent");
  if (agent !== null && pause.name !== agent) return false;
  const text = query.get("q");
  if (text !== null && !`${pause.name}\n${pause.reason}`.toLowerCase().includes(text.toLowerCase())) return false;
  return true;
}

const pauseKey = (pause: SuspendedAgent): string => `${pause.since}\u0000${pause.name}`;

/**
 * The whole-agent pause routes: list the suspended agents, resume one, deny
 * one. The approver is always the authenticated identity.
 * @internal
 */
export function pauseRoutes(runtime: Runtime, scopes: ScopeResolver, decisionTimeoutMs: number): Route[] {
  return [
    route("GET", "/api/v1/agents/suspended", async ({ query }) => {
      const limit = limitParam(query, 100);
      const scope = await scopes.resolve(query);
      const pauses = scope === "cluster" ? await runtime.listSuspended({ scope: "cluster" }) : runtime.listSuspended();
      const keyed = pauses.filter((pause) => matches(pause, query)).map((pause) => ({ pause, key: pauseKey(pause) }));
      keyed.sort((a, b) => (a.key < b.key ? -1 : 1));
      const page = pageOf(keyed, (entry) => entry.key, query, limit);
      return { status: 200, body: { scope, ...page, items: page.items.map((entry) => entry.pause) } };
    }),
    route("POST", "/api/v1/agents/:name/resume", async ({ params, identity, body }) => {
      const call = `POST /api/v1/agents/${params.name ?? ""}/resume`;
      refuseUnknownFields(body, ["suspensionId"], call);
      const suspensionId = requiredText(body, "suspensionId", call, 200);
      const agent = params.name ?? "";
      await runtime.resume(agent, identity, { suspensionId, timeoutMs: decisionTimeoutMs });
      return { status: 200, body: { agent, suspensionId, decision: "approved", decidedBy: identity } };
    }),
    route("POST", "/api/v1/agents/:name/deny", async ({ params, identity, body }) => {
      const call = `POST /api/v1/agents/${params.name ?? ""}/deny`;
      refuseUnknownFields(body, ["suspensionId", "reason"], call);
      const suspensionId = requiredText(body, "suspensionId", call, 200);
      const reason = requiredText(body, "reason", call);
      const agent = params.name ?? "";
      await runtime.deny(agent, identity, { suspensionId, reason, timeoutMs: decisionTimeoutMs });
      return { status: 200, body: { agent, suspensionId, decision: "denied", decidedBy: identity, reason } };
    }),
  ];
}
