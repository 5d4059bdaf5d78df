// Chat with the lead: the chats, one chat's messages live, send with files attached (picked in
// the browser, kept under the state directory by the bridge, or named by their path on this
// machine, as `bosun chat send --file` does); its pending actions are in the Inbox, linked
// from here.

import { call, upload } from "../api.js";
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

  // The chat's head and messages are drawn again on each change; the form is drawn once, so
  // what the person is typing or has picked stays.
  const top = h("div", { class: "chat-top" });
  const list = h("div", { class: "messages", id: "messages" });
  const text = h("textarea", { rows: 3, cols: 80, placeholder: "Write to the lead", id: "chat-text" });
  const picker = h("input", { type: "file", multiple: true, id: "chat-files" });
  const paths = h("input", { type: "text", id: "chat-paths", size: 40, placeholder: "/absolute/path, another" });
  const form = h(
    "form",
    { class: "chat-send", id: "chat-form", onsubmit: (e) => send(e, text, picker, paths) },
    text,
    h("div", { class: "inline" }, h("label", null, "Attach files: ", picker), h("label", null, "or paths on this machine: ", paths), h("button", { class: "primary", type: "submit" }, "Send")),
  );

  async function loadChat() {
    if (!id) return;
    try {
      chat = await call("chat_show", { chat: id });
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    if (!form.isConnected) body.append(top, list, form);
    clear(top).append(
      chat.waiting ? h("div", { class: "flash" }, `${chat.waiting} action(s) wait for your OK: `, h("a", { href: "#/inbox" }, "open the Inbox")) : null,
      chat.answering ? h("div", { class: "muted" }, "The lead is answering: ", h("a", { href: `#/run/${chat.answering}` }, "watch its run")) : null,
    );
    clear(list).append(...chat.messages.map(message));
    list.scrollTop = list.scrollHeight;
  }

  async function send(e, text, picker, paths) {
    e.preventDefault();
    const button = e.target.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const files = paths.value
        .split(",")
        .map((p) => p.trim())
        .filter(Boolean);
      for (const f of picker.files) {
        flash(msg, `Sending ${f.name} to bosun…`);
        files.push((await upload(f)).path);
      }
      await call("chat_send", { chat: chat.id, message: text.value, files });
      flash(msg, files.length ? `Sent, with ${files.length} file${files.length === 1 ? "" : "s"} the lead may attach to cards.` : "");
      text.value = "";
      picker.value = "";
      paths.value = "";
      loadChat();
    } catch (err) {
      flash(msg, err.message, true);
    }
    button.disabled = false;
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
