// Chat with the lead: the chats, one chat's messages, the answer being written streaming live
// (the lead's text and its tool calls, read from its run's log as the CLI writes it), send with
// files attached (picked in the browser, kept under the state directory by the bridge, or named
// by their path on this machine, as `bosun chat send --file` does), and the chat's pending
// actions inline, answered here with the same requests as the Inbox.
//
// Everything from the lead (its text, its calls' arguments and results) goes in as text nodes.

import { call, upload } from "../api.js";
import { on } from "../bus.js";
import { clear, flash, h, when } from "../dom.js";
import { approveAllButton, pendingItem, saidActions } from "../pending.js";

// How much of a tool call's arguments or result the live answer shows on its line.
const SHORT = 160;

function short(v) {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  const one = String(s ?? "").replace(/\s+/g, " ").trim();
  return one.length > SHORT ? `${one.slice(0, SHORT)}…` : one;
}

// The answer being written, from its run's log: Claude Code's stream-json lines on stdout.
// `assistant` lines carry the lead's text and its tool calls; `user` lines the calls' results.
class LiveAnswer {
  constructor(run, ended) {
    this.run = run;
    this.ended = ended;
    this.calls = new Map(); // tool_use id → its line
    this.partial = "";
    this.status = h("span", { class: "muted live-status" }, "writing…");
    this.body = h("div", { class: "live-body" });
    this.el = h(
      "div",
      { class: "msg lead live", id: "chat-live", dataset: { run } },
      h("div", { class: "muted" }, "The lead is answering ", this.status, " · ", h("a", { href: `#/run/${encodeURIComponent(run)}` }, "its run")),
      this.body,
    );
    this.next = 1;
    this.open();
  }

  open() {
    this.source = new EventSource(`/api/runs/${encodeURIComponent(this.run)}/log?from=${this.next}`);
    this.source.onmessage = (e) => this.chunk(JSON.parse(e.data));
    this.source.addEventListener("reconnecting", () => (this.status.textContent = "waiting for bosund…"));
    this.source.addEventListener("resumed", () => (this.status.textContent = "writing…"));
    this.source.addEventListener("end", () => {
      this.finish("done");
      this.ended();
    });
    this.source.addEventListener("failed", (e) => this.finish(`its log could not be read on: ${JSON.parse(e.data).message}`));
    this.source.onerror = () => {
      if (this.source.readyState === EventSource.CLOSED) this.finish("the stream was refused; reload the page");
    };
  }

  finish(why) {
    this.source.close();
    this.status.textContent = why;
    this.el.classList.add("ended");
  }

  close() {
    this.source.close();
  }

  chunk(c) {
    if (c.seq < this.next) return;
    this.next = c.seq + 1;
    if (c.stream === "note") {
      for (const l of c.text.split("\n").filter(Boolean)) this.body.append(h("div", { class: "live-note muted" }, `bosun: ${l}`));
      return;
    }
    if (c.stream !== "stdout") return;
    const parts = (this.partial + c.text).split("\n");
    this.partial = parts.pop();
    for (const line of parts) {
      let v;
      try {
        v = JSON.parse(line);
      } catch {
        continue;
      }
      this.line(v);
    }
  }

  line(v) {
    const content = v && v.message && Array.isArray(v.message.content) ? v.message.content : [];
    if (v.type === "assistant") {
      for (const b of content) {
        if (b.type === "text" && b.text) this.body.append(h("div", { class: "live-text" }, b.text));
        else if (b.type === "tool_use") {
          const el = h(
            "div",
            { class: "live-call", dataset: { tool: b.name || "" } },
            h("span", { class: "mono" }, `· ${b.name || "a tool"}`),
            " ",
            h("span", { class: "muted" }, short(b.input)),
            h("span", { class: "live-result muted" }),
          );
          if (b.id) this.calls.set(b.id, el);
          this.body.append(el);
        }
      }
    } else if (v.type === "user") {
      for (const b of content) {
        if (b.type !== "tool_result") continue;
        const el = this.calls.get(b.tool_use_id);
        if (!el) continue;
        const text = Array.isArray(b.content) ? b.content.map((x) => x.text || "").join(" ") : b.content;
        const res = el.querySelector(".live-result");
        res.textContent = ` → ${b.is_error ? "error: " : ""}${short(text)}`;
        el.classList.toggle("failed", !!b.is_error);
      }
    }
  }
}

export function mount(root, [id]) {
  const msg = h("div", { id: "chat-message" });
  const side = h("div", { class: "side" });
  const body = h("div", { class: "body" });
  root.append(h("div", { class: "page-head" }, h("h1", null, "Chat with the lead"), h("button", { onclick: newChat }, "New chat")), msg, h("div", { class: "split" }, side, body));
  let chat = null;
  let live = null;

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

  // The chat's messages and its waiting actions are drawn again on each change; the live answer
  // is kept while its run is the one answering; the form is drawn once, so what the person is
  // typing or has picked stays.
  const list = h("div", { class: "messages", id: "messages" });
  const liveBox = h("div");
  const pending = h("div", { id: "chat-pending" });
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
    if (!form.isConnected) body.append(list, liveBox, pending, form);
    clear(list).append(...chat.messages.map(message));
    if (chat.answering && (!live || live.run !== chat.answering)) {
      if (live) live.close();
      live = new LiveAnswer(chat.answering, answerEnded);
      clear(liveBox).append(live.el);
    } else if (!chat.answering && live) {
      // The answer is in the messages now.
      live.close();
      live = null;
      clear(liveBox);
    }
    list.scrollTop = list.scrollHeight;
    loadPending();
  }

  // The answer's end is recorded a moment after its run ends: read the chat again until it is.
  let endTimer = null;
  function answerEnded(tries = 0) {
    clearTimeout(endTimer);
    endTimer = setTimeout(async () => {
      await loadChat();
      if (chat && chat.answering && tries < 20) answerEnded(tries + 1);
    }, 250);
  }

  const answered = {
    done: (label, decided) => {
      flash(msg, `${saidActions(label, decided)}. The lead is told with your next message.`);
      loadPending();
    },
    failed: (e) => {
      flash(msg, `Not done: ${e.message}`, true);
      loadPending();
    },
  };

  let pendingSeq = 0;
  async function loadPending() {
    if (!chat) return;
    const mine = ++pendingSeq;
    let actions;
    try {
      actions = (await call("inbox", { chat: chat.id })).actions.filter((a) => a.state === "waiting");
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    if (mine !== pendingSeq) return;
    clear(pending);
    if (!actions.length) return;
    pending.append(
      h(
        "section",
        { class: "chat-group" },
        h(
          "div",
          { class: "group-head" },
          h("h2", null, `Waiting for your OK (${actions.length})`),
          approveAllButton(chat.id, actions.length, answered),
        ),
        actions.map((a) => pendingItem(a, answered)),
      ),
    );
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
    on("pending", (a) => {
      if (chat && a.chat === chat.id) loadPending();
    }),
    on("hello", () => (loadList(), loadChat())),
  ];
  loadList();
  loadChat();
  return () => {
    offs.forEach((f) => f());
    clearTimeout(endTimer);
    if (live) live.close();
  };
}
