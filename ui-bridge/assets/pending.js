// The lead's pending actions (what a chat's answer asked to do and waits for the person's OK):
// one drawn with its preview (a note or an agent's instructions changed, side by side) and its
// answers, and a chat's group of them with "Approve all". The Inbox and the chat's page both use
// these, with the same requests (`approve`, `discard`, `approve_all`).
//
// Everything here (the line, the preview, the result) goes into the page as text nodes only.

import { call } from "./api.js";
import { leadPreviewView } from "./approval.js";
import { on } from "./bus.js";
import { ago, h } from "./dom.js";

// The lead's actions decided since this module was first loaded (bosund lists only the waiting
// ones), newest first, for the Inbox's history; whichever page decided them, or the daemon.
export const leadHistory = [];
const historyListeners = new Set();

export function rememberAction(a) {
  if (a.state === "waiting") return;
  const i = leadHistory.findIndex((x) => x.id === a.id);
  if (i >= 0) leadHistory.splice(i, 1);
  leadHistory.unshift(a);
  leadHistory.length = Math.min(leadHistory.length, 100);
  for (const f of historyListeners) f();
}

// Calls `f` when the history changes, until the returned function is called.
export function onHistory(f) {
  historyListeners.add(f);
  return () => historyListeners.delete(f);
}

on("pending", rememberAction);

// Says what an answer did, for the page's message line.
export function saidActions(label, actions) {
  return `${label}: ${(actions || []).map((a) => `${a.short_id} ${a.state}${a.result ? ` (${a.result})` : ""}`).join(", ")}`;
}

// Sends one answer with `button` held down: `done(actions)` gets the actions as decided,
// `failed(err)` a refusal (already decided, the chat gone) to say in plain words.
async function answer(f, button, done, failed) {
  button.disabled = true;
  try {
    const r = await f();
    for (const a of r.actions || []) rememberAction(a);
    done(r.actions || []);
  } catch (e) {
    button.disabled = false;
    failed(e);
  }
}

// One waiting action with Approve and Discard. `done(label, actions)`, `failed(err)`.
export function pendingItem(a, { done, failed }) {
  return h(
    "div",
    { class: "card item", dataset: { action: a.id } },
    h("div", { class: "item-head" }, h("span", { class: "mono" }, a.short_id), h("strong", null, a.tool), h("span", { class: "muted" }, ` · ${ago(a.at)} · after ${a.cause}`)),
    h("div", { class: "line" }, a.line),
    a.would_fail ? h("div", { class: "flash error" }, `Would fail now: ${a.would_fail}`) : null,
    a.preview ? leadPreviewView(a.preview) : null,
    h(
      "div",
      { class: "actions" },
      h(
        "button",
        {
          class: "primary approve",
          title: "do it now; the lead is told with your next message",
          onclick: (e) => answer(() => call("approve", { action: a.id }), e.target, (r) => done("Approved", r), failed),
        },
        "Approve",
      ),
      h(
        "button",
        {
          class: "discard",
          title: "do not do it; the lead is told with your next message",
          onclick: (e) => answer(() => call("discard", { action: a.id }), e.target, (r) => done("Discarded", r), failed),
        },
        "Discard",
      ),
    ),
  );
}

// The "Approve all N in order" button of a chat with more than one action waiting.
export function approveAllButton(chat, count, { done, failed }) {
  if (count < 2) return null;
  return h(
    "button",
    {
      class: "approve-all",
      title: "approve every action waiting in this chat, in the order they were asked",
      onclick: (e) => answer(() => call("approve_all", { chat }), e.target, (r) => done("Approved all", r), failed),
    },
    `Approve all ${count} in order`,
  );
}
