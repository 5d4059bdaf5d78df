// Inbox: what waits for the person's OK — the runs' tool calls (run approvals) and the lead's
// pending actions — with previews, time left, and the answers: approve, approve always, deny
// with a message, block, approve all of a card; for the lead, approve, approve all of a chat,
// discard. Live from the `approval` and `pending` events; decided items go to the history
// below (run approvals from the store, the lead's since the tab opened: bosund lists only the
// waiting ones).
//
// Run approvals are kept element by element, keyed by id: an item that starts waiting is added
// and a decided one removed, and nothing else is redrawn, so a message being typed for a denial
// survives every other item coming and going. `#/inbox/card/ID` (the board's link) brings that
// card's group into view, marked.

import { call } from "../api.js";
import { on } from "../bus.js";
import { title } from "./runs.js";
import { approvalItem, decidedLine, saidDone, tick } from "../approval.js";
import { clear, flash, h } from "../dom.js";
import { approveAllButton, leadHistory, onHistory, pendingItem, saidActions } from "../pending.js";

// How many decided run approvals the history shows.
const HISTORY = 50;

export function mount(root, [kind, focus] = []) {
  const focusKey = kind === "card" && focus ? `card:${focus}` : null;
  const msg = h("div", { id: "inbox-message" });
  const runsBox = h("div", { id: "approvals-list" });
  const leadBox = h("div", { id: "actions-list" });
  const empty = h("p", { class: "muted", id: "inbox-empty" }, "Nothing waits for you.");
  const list = h("div", { id: "inbox-list" }, empty, runsBox, leadBox);
  const past = h("div", { id: "inbox-history" });
  const notifyBtn =
    "Notification" in window && Notification.permission === "default"
      ? h("button", { class: "small", onclick: () => Notification.requestPermission().then(() => notifyBtn.remove()) }, "Notify me when something waits")
      : null;
  root.append(h("div", { class: "page-head" }, h("h1", null, "Inbox"), notifyBtn), msg, list, h("h2", null, "Decided"), past);

  // Waiting run approvals, by id; their groups (a card's, or a run's when it has no card).
  const approvals = new Map();
  const groups = new Map();
  const decided = new Map(); // decided run approvals, by id
  const cardNames = new Map();
  let actions = [];

  function showEmpty() {
    empty.hidden = approvals.size > 0 || actions.length > 0;
  }

  // --- Run approvals -------------------------------------------------------------------------

  const groupKey = (a) => (a.card ? `card:${a.card}` : `run:${a.run}`);

  function group(a) {
    const key = groupKey(a);
    let g = groups.get(key);
    if (g) return g;
    const head = h("div", { class: "group-head" });
    const items = h("div");
    g = { key, card: a.card, run: a.run, agent: a.agent, head, items, el: h("section", { class: "run-group", dataset: { group: key } }, head, items), ids: new Set() };
    groups.set(key, g);
    if (key === focusKey) {
      g.el.classList.add("focus");
      runsBox.prepend(g.el);
      g.el.scrollIntoView({ block: "start" });
    } else runsBox.append(g.el);
    return g;
  }

  function drawHead(g) {
    clear(g.head);
    if (g.card) {
      const name = cardNames.get(g.card);
      g.head.append(h("h2", null, "Card ", h("a", { href: "#/board", title: g.card }, name || g.card.slice(0, 8))));
      if (g.ids.size > 1)
        g.head.append(
          h(
            "button",
            { class: "approve-card", title: "approve every call waiting in this card's runs, in the order they were asked", onclick: (e) => approveCard(g.card, e.target) },
            `Approve all ${g.ids.size} in order`,
          ),
        );
    } else {
      // Under the run's task and agent: what the person knows the run by.
      if (g.task === undefined) {
        g.task = null;
        call("get_run", { run: g.run }).then(
          (r) => {
            g.task = title(r);
            drawHead(g);
          },
          () => {},
        );
      }
      g.head.append(
        h("h2", null, g.task || "Run", g.agent ? ` · ${g.agent}` : ""),
        h("a", { class: "mono muted", href: `#/run/${encodeURIComponent(g.run)}` }, `run ${g.run.slice(0, 8)}`),
      );
    }
  }

  function add(a) {
    approvals.set(a.id, a);
    const g = group(a);
    if (!g.ids.has(a.id)) {
      g.ids.add(a.id);
      const el = approvalItem(a, { done: decidedHere, failed: refused, cardName: a.card ? cardNames.get(a.card) : null, showRun: !!a.card });
      g.items.append(el);
    }
    drawHead(g);
  }

  function remove(id) {
    const a = approvals.get(id);
    if (!a) return;
    approvals.delete(id);
    const g = groups.get(groupKey(a));
    if (!g) return;
    g.ids.delete(id);
    const el = g.items.querySelector(`[data-approval="${CSS.escape(id)}"]`);
    if (el) el.remove();
    if (g.ids.size === 0) {
      g.el.remove();
      groups.delete(g.key);
    } else drawHead(g);
  }

  // Takes in an approval as it is now: waiting, or decided (then it goes to the history).
  function take(a) {
    // A decision is final: a listing read before it was made does not bring the item back.
    if (a.state === "waiting" && decided.has(a.id)) return;
    if (a.state === "waiting") add(a);
    else {
      remove(a.id);
      decided.set(a.id, a);
      drawHistory();
    }
    showEmpty();
  }

  function decidedHere(a) {
    take(a);
    flash(msg, a.state === "allowed" ? `Allowed: ${saidDone(a)}` : `Denied: ${saidDone(a)}${a.message ? ` — told the agent: ${a.message}` : ""}`);
  }

  function refused(e) {
    flash(msg, `Not done: ${e.message}`, true);
    // It may have been decided meanwhile (the deadline, the run's end): show it as it is.
    loadApprovals();
  }

  async function approveCard(card, button) {
    button.disabled = true;
    try {
      const r = await call("approve_card", { card });
      for (const a of r.approvals) take(a);
      flash(msg, `Approved all: ${r.approvals.map(saidDone).join(", ")}`);
    } catch (e) {
      button.disabled = false;
      refused(e);
    }
  }

  async function loadCardNames() {
    try {
      const b = await call("board");
      for (const c of b.cards) cardNames.set(c.id, c.title);
      for (const g of groups.values()) if (g.card) drawHead(g);
    } catch {
      // Card names are a nicety: the short ids stand in for them.
    }
  }

  async function loadApprovals() {
    let all;
    try {
      all = (await call("approvals", { all: true })).approvals;
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    const waiting = new Set();
    for (const a of all) {
      if (a.state === "waiting") waiting.add(a.id);
      take(a);
    }
    for (const id of [...approvals.keys()]) if (!waiting.has(id)) remove(id);
    if (all.some((a) => a.card && !cardNames.has(a.card))) loadCardNames();
    showEmpty();
  }

  // --- The lead's pending actions -------------------------------------------------------------

  const leadAnswered = {
    done: (label, decided) => {
      flash(msg, saidActions(label, decided));
      loadActions();
    },
    failed: (e) => {
      flash(msg, `Not done: ${e.message}`, true);
      loadActions();
    },
  };

  async function loadActions() {
    try {
      actions = (await call("inbox", {})).actions.filter((a) => a.state === "waiting");
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    clear(leadBox);
    const byChat = new Map();
    for (const a of actions) {
      if (!byChat.has(a.chat)) byChat.set(a.chat, []);
      byChat.get(a.chat).push(a);
    }
    for (const [chat, items] of byChat) {
      leadBox.append(
        h(
          "section",
          { class: "chat-group" },
          h(
            "div",
            { class: "group-head" },
            h("h2", null, "The lead, chat ", h("a", { href: `#/chat/${chat}` }, chat.slice(0, 8))),
            approveAllButton(chat, items.length, leadAnswered),
          ),
          items.map((a) => pendingItem(a, leadAnswered)),
        ),
      );
    }
    showEmpty();
  }

  // --- History ------------------------------------------------------------------------------

  function drawHistory() {
    clear(past);
    const runs = [...decided.values()].sort((x, y) => (y.decided_at || y.asked_at) - (x.decided_at || x.asked_at)).slice(0, HISTORY);
    if (!runs.length && !leadHistory.length) past.append(h("p", { class: "muted" }, "Nothing decided yet."));
    for (const a of runs) past.append(decidedLine(a));
    for (const a of leadHistory)
      past.append(h("div", { class: `item done st-${a.state}` }, h("span", { class: "mono" }, a.short_id), ` ${a.state} · ${a.line}`, a.result ? h("div", { class: "muted" }, a.result) : null));
  }

  const offs = [
    on("approval", take),
    on("pending", () => loadActions()),
    onHistory(drawHistory),
    on("hello", () => {
      loadApprovals();
      loadActions();
    }),
  ];
  const timer = setInterval(() => tick(runsBox), 1000);
  loadApprovals();
  loadActions();
  drawHistory();
  return () => {
    offs.forEach((f) => f());
    clearInterval(timer);
  };
}
