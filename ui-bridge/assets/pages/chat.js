// Chat with the lead: the chats, one chat's messages live, send; its pending actions are in
// the Inbox, linked from here.

import { call } from "../api.js";
import { on } from "../bus.js";
import { clear, flash, h, when } from "../dom.js";

export function mount(root, [id]) {
  const msg = h("div");
  const side = h("div", { class: "side" });
  const body = h("div", { class: "body" });
  root.append(h("div", { class: "page-head" }, h("h1", null, "Chat with the lead"), h("button", { onclick: newChat }, "New chat")), msg, h("div", { class: "split" }, side, body));
  let chat = null;

  async function newChat() {
    try {
      const c = await call("chat_new", {});
      location.hash = `#/chat/${c.id}`;
    } catch (e) {
      flash(msg, e.message, true);
    }
  }

  async function loadList() {
    try {
      const r = await call("chat_list");
      clear(side);
      for (const c of r.chats)
        side.append(h("a", { href: `#/chat/${c.id}`, class: c.id === id ? "active" : null }, `${c.short_id} · ${c.agent}`, c.waiting ? h("span", { class: "badge" }, String(c.waiting)) : null));
      if (!r.chats.length) side.append(h("p", { class: "muted" }, "No chats yet."));
    } catch (e) {
      flash(msg, e.message, true);
    }
  }

  function message(m) {
    return h("div", { class: `msg ${m.kind}${m.failed ? " failed" : ""}` }, h("span", { class: "muted" }, `${when(m.at)} ${m.kind}: `), m.text);
  }

  async function loadChat() {
    if (!id) return;
    try {
      chat = await call("chat_show", { chat: id });
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    clear(body);
    const list = h("div", { class: "messages", id: "messages" }, chat.messages.map(message));
    const text = h("textarea", { rows: 3, cols: 80, placeholder: "Write to the lead" });
    body.append(
      h("div", { class: "chat-top" }, chat.waiting ? h("div", { class: "flash" }, `${chat.waiting} action(s) wait for your OK: `, h("a", { href: "#/inbox" }, "open the Inbox")) : null,
      chat.answering ? h("div", { class: "muted" }, "The lead is answering: ", h("a", { href: `#/run/${chat.answering}` }, "watch its run")) : null),
      list,
      h("form", { class: "inline", onsubmit: (e) => send(e, text) }, text, h("button", { class: "primary", type: "submit" }, "Send")),
    );
    list.scrollTop = list.scrollHeight;
  }

  async function send(e, text) {
    e.preventDefault();
    try {
      await call("chat_send", { chat: chat.id, message: text.value, files: [] });
      text.value = "";
      loadChat();
    } catch (err) {
      flash(msg, err.message, true);
    }
  }

  const offs = [
    on("chat", (d) => {
      if (chat && d.chat === chat.id) loadChat();
      loadList();
    }),
    on("hello", () => (loadList(), loadChat())),
  ];
  loadList();
  loadChat();
  return () => offs.forEach((f) => f());
}
