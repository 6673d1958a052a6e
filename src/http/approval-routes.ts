import type { ApprovalStatus, ApprovalView } from "../approvals/approval-types.js";
import type { Runtime } from "../runtime/runtime.js";
import { refuseUnknownFields, requiredText } from "./body-fields.js";
import { InvalidRequestError } from "./http-errors.js";
import { limitParam, pageOf } from "./paging.js";
import { route, type Route } from "./route.js";
import type { ScopeResolver } from "./scope.js";

const STATUSES: ReadonlySet<string> = new Set<ApprovalStatus>(["pending", "approved", "denied", "expired", "cancelled"]);

/** An approval request as the API answers it: the runtime's view, and who may still vote in its current stage. */
export type ApprovalItem = ApprovalView & {
  /** The approvers of the current stage (with `escalateTo` once escalated in it) who have not voted there yet; empty once decided. */
  readonly mayStillVote: readonly string[];
};

/** The index of the stage that was current at `at`: how many stages had their `min` distinct approvals by then. */
function stageAt(view: ApprovalView, at: string): number {
  let stage = 0;
  for (const [index, rule] of view.rule.stages.entries()) {
    const approvals = view.votes.filter((vote) => vote.stage === index && vote.vote === "approve" && vote.at <= at);
    if (new Set(approvals.map((vote) => vote.approver)).size < rule.min) break;
    stage = index + 1;
  }
  return stage;
}

/** `view` with who may still vote in its current stage. @internal */
export function approvalItem(view: ApprovalView): ApprovalItem {
  const current = view.rule.stages[view.stage];
  if (view.status !== "pending" || current === undefined) return { ...view, mayStillVote: [] };
  const escalatedHere = view.escalated && view.escalateAt !== undefined && stageAt(view, view.escalateAt) === view.stage;
  const accepted = new Set([...current.approvers, ...(escalatedHere ? (view.rule.escalateTo ?? []) : [])]);
  for (const vote of view.votes) if (vote.stage === view.stage) accepted.delete(vote.approver);
  return { ...view, mayStillVote: [...accepted] };
}

function matches(view: ApprovalView, query: URLSearchParams): boolean {
  const text = query.get("q");
  return text === null || `${view.agent}\n${view.reason}\n${view.message.type}`.toLowerCase().includes(text.toLowerCase());
}

/** Pending first, then oldest first (approval ids are UUIDv7: they sort by time). */
const approvalKey = (view: ApprovalView): string => `${view.status === "pending" ? "0" : "1"}${view.approvalId}`;

/**
 * The approval routes (SPEC §12.6): list the requests of held actions, show
 * one, approve and deny as the authenticated identity. The rule and the
 * runtime's `authorizeApproval` decide whether that identity may vote.
 * @internal
 */
export function approvalRoutes(runtime: Runtime, scopes: ScopeResolver): Route[] {
  return [
    route("GET", "/api/v1/approvals", async ({ query }) => {
      const limit = limitParam(query, 100);
      const status = query.get("status");
      if (status !== null && !STATUSES.has(status)) throw new InvalidRequestError(`?status= is one of ${[...STATUSES].join(", ")}, got ${JSON.stringify(status)}`);
      const agent = query.get("agent");
      const scope = await scopes.resolve(query);
      const views = await runtime.approvals.list({ scope, ...(status === null ? {} : { status: status as ApprovalStatus }), ...(agent === null ? {} : { agent }) });
      const keyed = views.filter((view) => matches(view, query)).map((view) => ({ view, key: approvalKey(view) }));
      keyed.sort((a, b) => (a.key < b.key ? -1 : 1));
      const page = pageOf(keyed, (entry) => entry.key, query, limit);
      return { status: 200, body: { scope, ...page, items: page.items.map((entry) => approvalItem(entry.view)) } };
    }),
    route("GET", "/api/v1/approvals/:id", async ({ params }) => ({ status: 200, body: approvalItem(await runtime.approvals.get(params.id ?? "")) })),
    route("POST", "/api/v1/approvals/:id/approve", async ({ params, identity, body }) => {
      const call = `POST /api/v1/approvals/${params.id ?? ""}/approve`;
      refuseUnknownFields(body, ["reason"], call);
      const reason = body.reason === undefined ? undefined : requiredText(body, "reason", call);
      const view = await runtime.approvals.approve(params.id ?? "", identity, reason === undefined ? {} : { reason });
      return { status: 200, body: approvalItem(view) };
    }),
    route("POST", "/api/v1/approvals/:id/deny", async ({ params, identity, body }) => {
      const call = `POST /api/v1/approvals/${params.id ?? ""}/deny`;
      refuseUnknownFields(body, ["reason"], call);
      const reason = requiredText(body, "reason", call);
      return { status: 200, body: approvalItem(await runtime.approvals.deny(params.id ?? "", identity, { reason })) };
    }),
  ];
}
