// Inbox: what waits for the person's OK — today the lead's pending actions — with previews;
// approve, approve all of a chat, discard. Live from the pending events; decided items go to
// the history below (for as long as the page is open).
//
// Each kind of item is drawn by its own function in KINDS, so other kinds (a run's waiting
// approvals) can join the list.

import { call } from "../api.js";
import { on } from "../bus.js";
import { ago, clear, flash, h } from "../dom.js";

const history = [];

export function mount(root) {
  const msg = h("div");
  const list = h("div", { id: "inbox-list" });
  const past = h("div", { id: "inbox-history" });
  const notifyBtn =
    "Notification" in window && Notification.permission === "default"
      ? h("button", { class: "small", onclick: () => Notification.requestPermission().then(() => notifyBtn.remove()) }, "Notify me when something waits")
      : null;
  root.append(
    h("div", { class: "page-head" }, h("h1", null, "Inbox"), notifyBtn),
    msg,
    list,
    h("h2", null, "Decided"),
    past,
  );

  async function act(label, f, button) {
    button.disabled = true;
    try {
      const r = await f();
      for (const a of r.actions || []) remember(a);
      flash(msg, `${label}: ${(r.actions || []).map((a) => `${a.short_id} ${a.state}${a.result ? ` (${a.result})` : ""}`).join(", ")}`);
      await load();
    } catch (e) {
      flash(msg, e.message, true);
      button.disabled = false;
    }
  }

  function remember(a) {
    if (a.state === "waiting") return;
    const i = history.findIndex((x) => x.id === a.id);
    if (i >= 0) history.splice(i, 1);
    history.unshift(a);
    history.length = Math.min(history.length, 100);
    drawHistory();
  }

  function pendingItem(a) {
    return h(
      "div",
      { class: "card item", dataset: { action: a.id } },
      h("div", { class: "item-head" }, h("span", { class: "mono" }, a.short_id), h("strong", null, a.tool), h("span", { class: "muted" }, ` · ${ago(a.at)} · after ${a.cause}`)),
      h("div", { class: "line" }, a.line),
      a.would_fail ? h("div", { class: "flash error" }, `Would fail now: ${a.would_fail}`) : null,
      a.preview ? h("pre", { class: "preview" }, a.preview) : null,
      h(
        "div",
        { class: "actions" },
        h("button", { class: "primary approve", onclick: (e) => act("Approved", () => call("approve", { action: a.id }), e.target) }, "Approve"),
        h("button", { class: "discard", onclick: (e) => act("Discarded", () => call("discard", { action: a.id }), e.target) }, "Discard"),
      ),
    );
  }

  const KINDS = { lead: pendingItem };

  async function load() {
    let actions;
    try {
      actions = (await call("inbox", {})).actions;
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    clear(list);
    const waiting = actions.filter((a) => a.state === "waiting");
    if (!waiting.length) list.append(h("p", { class: "muted" }, "Nothing waits for you."));
    const byChat = new Map();
    for (const a of waiting) {
      if (!byChat.has(a.chat)) byChat.set(a.chat, []);
      byChat.get(a.chat).push(a);
    }
    for (const [chat, items] of byChat) {
      list.append(
        h(
          "section",
          { class: "chat-group" },
          h(
            "div",
            { class: "group-head" },
            h("h2", null, "Chat ", h("a", { href: `#/chat/${chat}` }, chat.slice(0, 8))),
            items.length > 1 ? h("button", { class: "approve-all", onclick: (e) => act("Approved all", () => call("approve_all", { chat }), e.target) }, `Approve all ${items.length} in order`) : null,
          ),
          items.map((a) => KINDS.lead(a)),
        ),
      );
    }
  }

  function drawHistory() {
    clear(past);
    if (!history.length) past.append(h("p", { class: "muted" }, "Nothing decided since this page opened."));
    for (const a of history)
      past.append(h("div", { class: `item done st-${a.state}` }, h("span", { class: "mono" }, a.short_id), ` ${a.state} · ${a.line}`, a.result ? h("div", { class: "muted" }, a.result) : null));
  }

  const offs = [
    on("pending", (a) => {
      remember(a);
      load();
    }),
    on("hello", load),
  ];
  load();
  drawHistory();
  return () => offs.forEach((f) => f());
}
