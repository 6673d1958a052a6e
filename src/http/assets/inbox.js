// The approver inbox page: plain DOM, no framework, no network beyond its own origin.
// Every value from the server is put in with textContent, never parsed as HTML.

const PAGE_SIZE = 100;
const FOLD_AT = 160; // characters of a string shown before it is folded
const FOLD_ITEMS = 20; // items of an array shown before the rest is folded

const $ = (id) => document.getElementById(id);
let session = { identity: "", csrfToken: "" };
let approvalsServed = true;
const shown = { approvals: PAGE_SIZE, pauses: PAGE_SIZE };

/** Calls the API; resolves the JSON body, rejects with the server's error message. */
async function api(path, body) {
  const init = body === undefined
    ? { headers: { accept: "application/json" } }
    : { method: "POST", headers: { "content-type": "application/json", "x-civitas-csrf": session.csrfToken }, body: JSON.stringify(body) };
  const response = await fetch(path, { credentials: "same-origin", ...init });
  const json = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(json.error?.message ?? `the server answered ${response.status}`);
    error.code = json.error?.code ?? "HTTP_" + response.status;
    throw error;
  }
  return json;
}

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child !== undefined && child !== null) node.append(child);
  return node;
}

function toast(text) {
  const box = $("toast");
  box.textContent = text;
  box.classList.add("show");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => box.classList.remove("show"), 4000);
}

// ---- time ----------------------------------------------------------------

function duration(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** A <time> that counts down to `iso` (refreshed every second by tick()). */
function countdown(iso, label) {
  return el("time", { datetime: iso, "data-until": iso, "data-label": label, title: new Date(iso).toLocaleString() });
}

/** Sets the text of `node` only when it changed: a page of a thousand items is not laid out again every second. */
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function tick() {
  const now = Date.now();
  for (const node of document.querySelectorAll("time[data-until]")) {
    const left = Date.parse(node.dataset.until) - now;
    setText(node, left > 0 ? `${duration(left)} left` : `${node.dataset.label} ${duration(left)} ago`);
    if (node.classList.contains("late") !== left <= 0) node.classList.toggle("late", left <= 0);
  }
  for (const node of document.querySelectorAll("time[data-since]")) setText(node, `${duration(now - Date.parse(node.dataset.since))} ago`);
}

function since(iso) {
  return el("time", { datetime: iso, "data-since": iso, title: new Date(iso).toLocaleString() });
}

// ---- payloads ---------------------------------------------------------------

/** Pretty-printed JSON as DOM nodes; long strings and long arrays are folded behind a <details>. */
function json(value, indent = "") {
  const out = document.createDocumentFragment();
  if (typeof value === "string") {
    const quoted = JSON.stringify(value);
    if (quoted.length <= FOLD_AT) out.append(quoted);
    else out.append(el("details", {}, el("summary", { text: `${quoted.slice(0, 60)}… (${value.length} characters, show all)` }), quoted));
    return out;
  }
  if (value === null || typeof value !== "object") {
    out.append(JSON.stringify(value));
    return out;
  }
  const inner = `${indent}  `;
  const entries = Array.isArray(value) ? value.map((v) => [undefined, v]) : Object.entries(value);
  const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  if (entries.length === 0) {
    out.append(open + close);
    return out;
  }
  out.append(`${open}\n`);
  const line = ([key, v], i) => {
    const frag = document.createDocumentFragment();
    frag.append(inner + (key === undefined ? "" : `${JSON.stringify(key)}: `), json(v, inner), i < entries.length - 1 ? ",\n" : "\n");
    return frag;
  };
  entries.slice(0, FOLD_ITEMS).forEach((entry, i) => out.append(line(entry, i)));
  if (entries.length > FOLD_ITEMS) {
    const rest = el("details", {}, el("summary", { text: `${inner}… ${entries.length - FOLD_ITEMS} more (show all)\n` }));
    entries.slice(FOLD_ITEMS).forEach((entry, i) => rest.append(line(entry, i + FOLD_ITEMS)));
    out.append(rest);
  }
  out.append(indent + close);
  return out;
}

// ---- deciding --------------------------------------------------------------

/** The reason box, the error line and the approve/deny buttons of one item. */
function decideForm(id, onApprove, onDeny) {
  const reasonId = `reason-${id}`;
  const errorLine = el("p", { class: "error", role: "alert" });
  const reason = el("textarea", { id: reasonId, name: "reason", maxlength: 1024, rows: 2 });
  const approve = el("button", { type: "button", class: "approve", text: "Approve" });
  const deny = el("button", { type: "button", class: "deny", text: "Deny" });
  const run = async (action) => {
    errorLine.textContent = "";
    approve.disabled = deny.disabled = true;
    try {
      await action(reason.value.trim());
      await refresh();
    } catch (error) {
      errorLine.textContent = `${error.code}: ${error.message}`;
    } finally {
      approve.disabled = deny.disabled = false;
    }
  };
  approve.addEventListener("click", () => run(onApprove));
  deny.addEventListener("click", () => {
    if (reason.value.trim() === "") {
      errorLine.textContent = "Write the reason for the denial first: it is sent to the agent and recorded.";
      reason.focus();
      return;
    }
    void run(onDeny);
  });
  return el("div", { class: "decide" }, el("label", { for: reasonId, text: "Reason (sent with your decision; required to deny)" }), reason, el("div", { class: "buttons" }, approve, deny), errorLine);
}

function facts(pairs) {
  const list = el("dl", { class: "facts" });
  for (const [term, value] of pairs) if (value !== undefined) list.append(el("dt", { text: term }), el("dd", {}, value));
  return list;
}

// ---- held actions ----------------------------------------------------------

function stagesOf(view) {
  const list = el("ol", { class: "stages" });
  view.rule.stages.forEach((stage, index) => {
    const votes = view.votes.filter((vote) => vote.stage === index);
    const voted = votes.map((vote) => `${vote.approver} (${vote.vote}${vote.reason ? `: ${vote.reason}` : ""})`);
    const label = `${stage.name ?? `Stage ${index + 1}`}: ${stage.min} of ${stage.approvers.join(", ")}`;
    const item = el("li", { class: index === view.stage ? "current" : "" }, label);
    if (voted.length > 0) item.append(el("br"), el("span", { class: "voted", text: `voted: ${voted.join("; ")}` }));
    if (index === view.stage && view.status === "pending") item.append(el("br"), el("span", { text: `may still vote: ${(view.mayStillVote ?? []).join(", ") || "no one"}` }));
    list.append(item);
  });
  return list;
}

function approvalItem(view) {
  const id = `approval-${view.approvalId}`;
  const heading = el("h4", { id: `${id}-h` }, view.agent, el("span", { class: "kind", text: `held ${view.message.type}` }));
  const escalation = view.escalated ? el("span", { text: `escalated${view.rule.escalateTo ? ` to ${view.rule.escalateTo.join(", ")}` : ""}` }) : view.escalateAt ? countdown(view.escalateAt, "escalated") : undefined;
  const item = el(
    "li",
    { class: "item approval", "aria-labelledby": `${id}-h`, "data-approval": view.approvalId },
    heading,
    facts([
      ["Reason", view.reason],
      ["Action", `${view.message.type} from ${view.message.sender}`],
      ["Requested", since(view.requestedAt)],
      ["Time left", view.expiresAt ? countdown(view.expiresAt, "expired") : "no deadline"],
      ["Escalation", escalation],
      ["Digest", el("code", { text: view.digest.slice(0, 16) + "…", title: view.digest })],
    ]),
    el("pre", { class: "payload", "aria-label": `payload of ${view.message.type}` }, json(view.message.payload)),
    el("p", { text: "Rule" }),
    stagesOf(view),
    decideForm(id, (reason) => api(`api/v1/approvals/${encodeURIComponent(view.approvalId)}/approve`, reason ? { reason } : {}), (reason) =>
      api(`api/v1/approvals/${encodeURIComponent(view.approvalId)}/deny`, { reason }),
    ),
  );
  return item;
}

// ---- pauses -----------------------------------------------------------------

function trailButton(pause) {
  const box = el("div", { class: "trail-box", hidden: true, "aria-live": "polite" });
  const button = el("button", { type: "button", class: "trail", "aria-expanded": "false", text: "Audit trail" });
  button.addEventListener("click", async () => {
    const open = button.getAttribute("aria-expanded") === "true";
    button.setAttribute("aria-expanded", String(!open));
    box.hidden = open;
    if (open) return;
    box.textContent = "Reading the audit log…";
    try {
      const trail = await api(`api/v1/agents/${encodeURIComponent(pause.name)}/suspensions/${encodeURIComponent(pause.suspensionId)}/audit`);
      box.replaceChildren(
        el("p", {}, "Offline verification: ", el("strong", { class: `status-${trail.log.status}`, text: trail.log.status }), trail.log.chain.ok ? " (chain intact)" : ` (chain broken at row ${trail.log.chain.brokenAt})`),
        el("ol", {}, ...trail.rows.map((row) => el("li", { text: `${row.ts} ${row.event} #${row.seq} ${JSON.stringify(row.details)}` }))),
      );
    } catch (error) {
      box.textContent = `${error.code}: ${error.message}`;
    }
  });
  return [button, box];
}

function pauseItem(pause) {
  const id = `pause-${pause.name}-${pause.suspensionId}`.replace(/[^A-Za-z0-9_-]/g, "_");
  const [trail, trailBox] = trailButton(pause);
  return el(
    "li",
    { class: "item pause", "aria-labelledby": `${id}-h`, "data-agent": pause.name },
    el("h4", { id: `${id}-h` }, pause.name, el("span", { class: "kind", text: "whole agent paused" })),
    facts([
      ["Reason", pause.reason || "(none given)"],
      ["Paused", since(pause.since)],
      ["Time left", pause.expiresAt ? countdown(pause.expiresAt, "expired") : "no deadline"],
      ["Who may decide", "any signed-in approver the runtime's authorizeResume accepts"],
      ["Suspension", el("code", { text: pause.suspensionId })],
    ]),
    decideForm(
      id,
      () => api(`api/v1/agents/${encodeURIComponent(pause.name)}/resume`, { suspensionId: pause.suspensionId }),
      (reason) => api(`api/v1/agents/${encodeURIComponent(pause.name)}/deny`, { suspensionId: pause.suspensionId, reason }),
    ),
    el("div", { class: "buttons" }, trail),
    trailBox,
  );
}

// ---- lists -------------------------------------------------------------------

function filterParams() {
  const params = new URLSearchParams();
  const text = $("filter-text").value.trim();
  if (text !== "") params.set("q", text);
  return params;
}

/** The first `want` items of a list route, page by page; with its total and whether more remain. */
async function firstItems(path, params, want) {
  const items = [];
  let cursor;
  let total = 0;
  do {
    const query = new URLSearchParams(params);
    query.set("limit", String(Math.min(want - items.length, 500)));
    if (cursor !== undefined) query.set("cursor", cursor);
    const page = await api(`${path}?${query}`);
    items.push(...page.items);
    total = page.total;
    cursor = page.nextCursor;
  } while (cursor !== undefined && items.length < want);
  return { items, total, more: cursor !== undefined };
}

/**
 * Replaces the items of `list` with `items` ([key, build] pairs). An item
 * whose key is already on screen is kept as it is (with the focus and what
 * was typed in it), so a refresh builds only what is new; when the focused
 * item went away, the focus moves to the main region.
 */
function replaceItems(list, items) {
  const focusedItem = document.activeElement?.closest?.("li.item");
  const hadFocus = focusedItem !== null && focusedItem !== undefined && list.contains(focusedItem);
  const existing = new Map([...list.children].map((li) => [li.dataset.key, li]));
  const next = items.map(([key, build]) => {
    const item = existing.get(key) ?? build();
    item.dataset.key = key;
    return item;
  });
  const unchanged = next.length === list.children.length && next.every((item, i) => list.children[i] === item);
  if (!unchanged) list.replaceChildren(...next);
  if (hadFocus && !next.includes(focusedItem)) $("main").focus();
}

async function loadPauses() {
  const page = await firstItems("api/v1/agents/suspended", filterParams(), shown.pauses);
  replaceItems($("pauses"), page.items.map((p) => [`${p.name}\u0000${p.suspensionId}\u0000${p.reason}\u0000${p.expiresAt ?? ""}`, () => pauseItem(p)]));
  $("pauses-count").textContent = `(${page.total})`;
  $("pauses-empty").hidden = page.total > 0;
  $("pauses-more").hidden = !page.more;
  return page.total;
}

async function loadApprovals() {
  if (!approvalsServed) return 0;
  let page;
  try {
    const params = filterParams();
    params.set("status", "pending");
    page = await firstItems("api/v1/approvals", params, shown.approvals);
  } catch (error) {
    if (error.code === "ROUTE_NOT_FOUND") {
      approvalsServed = false;
      return 0;
    }
    throw error;
  }
  $("approvals-section").hidden = false;
  replaceItems($("approvals"), page.items.map((v) => [`${v.approvalId}\u0000${v.stage}\u0000${v.votes.length}\u0000${v.escalated}`, () => approvalItem(v)]));
  $("approvals-count").textContent = `(${page.total})`;
  $("approvals-more").hidden = !page.more;
  return page.total;
}

async function loadHistory() {
  let page;
  try {
    page = await api("api/v1/history?limit=100");
  } catch (error) {
    $("history-chain").textContent = `${error.code}: ${error.message}`;
    return;
  }
  $("history-chain").textContent = page.chain.ok ? `Audit chain intact: ${page.chain.rows} rows verified.` : `Audit chain BROKEN at row ${page.chain.brokenAt}: ${page.chain.reason}`;
  $("history-rows").replaceChildren(
    ...page.items.map((entry) =>
      el(
        "tr",
        {},
        el("td", {}, el("time", { datetime: entry.settledAt, text: new Date(entry.settledAt).toLocaleString() })),
        el("td", { text: entry.kind === "pause" ? `${entry.agent} (paused agent)` : `${entry.agent}: ${entry.type ?? "held action"}` }),
        el("td", { text: entry.decision ?? "" }),
        el("td", { text: entry.decidedBy ?? "" }),
        el("td", { text: entry.decisionReason ?? entry.reason ?? "" }),
        el("td", { class: `status-${entry.status}`, text: entry.status }),
      ),
    ),
  );
  $("history-empty").hidden = page.items.length > 0;
}

let refreshing;
let again = false;
/** Reloads what is on screen; calls while one runs coalesce into one more. */
async function refresh() {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = (async () => {
    try {
      const [approvals, pauses] = await Promise.all([loadApprovals(), loadPauses()]);
      $("pending-count").textContent = `(${approvals + pauses})`;
      if (!$("history").hidden) await loadHistory();
    } catch (error) {
      toast(`Could not refresh: ${error.message}`);
    } finally {
      refreshing = undefined;
    }
    tick();
    if (again) {
      again = false;
      await refresh();
    }
  })();
  return refreshing;
}

let soon;
function refreshSoon() {
  clearTimeout(soon);
  soon = setTimeout(refresh, 100);
}

function listen() {
  const live = $("live");
  const events = new EventSource("api/v1/events");
  events.addEventListener("open", () => {
    live.textContent = "Live";
    live.classList.add("on");
    refreshSoon();
  });
  events.addEventListener("error", () => {
    live.textContent = "Reconnecting…";
    live.classList.remove("on");
  });
  events.addEventListener("agent.status", refreshSoon);
  events.addEventListener("approval.changed", refreshSoon);
}

function showView(name) {
  const pending = name === "pending";
  $("pending").hidden = !pending;
  $("history").hidden = pending;
  $("tab-pending").setAttribute("aria-pressed", String(pending));
  $("tab-history").setAttribute("aria-pressed", String(!pending));
  if (!pending) void loadHistory();
}

async function main() {
  session = await api("api/v1/session");
  $("identity").textContent = session.identity;
  $("tab-pending").addEventListener("click", () => showView("pending"));
  $("tab-history").addEventListener("click", () => showView("history"));
  $("filter").addEventListener("submit", (event) => event.preventDefault());
  $("filter-text").addEventListener("input", refreshSoon);
  $("pauses-more").addEventListener("click", () => { shown.pauses += PAGE_SIZE; void refresh(); });
  $("approvals-more").addEventListener("click", () => { shown.approvals += PAGE_SIZE; void refresh(); });
  await refresh();
  document.body.dataset.ready = "true";
  listen();
  setInterval(tick, 1000);
  setInterval(refresh, 30_000); // changes made in other processes of a cluster arrive with no event here
}

main().catch((error) => {
  $("live").textContent = `Failed: ${error.message}`;
  toast(error.message);
});
