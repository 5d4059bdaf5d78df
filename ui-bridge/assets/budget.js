// A budget several runs share — a card's, or a project's for each day (UTC) — on its page: its
// caps, what the runs it counts spent so far against them (a project's: today's), what the
// person allowed more when it was reached, and a form to set or take off each cap. What the
// person types is read by the parser the command line uses (`GET /api/parse`); both caps are
// read before anything is sent, and bosund takes the edit whole or refuses it: a refusal
// changes nothing.

import { getJSON } from "./api.js";
import { flash, h } from "./dom.js";
import { field, formMessage, text } from "./forms.js";
import { dollars } from "./pages/usage.js";

// A cap as its field shows it: dollars as a plain number (`5`, `2.5`), tokens whole; empty
// for none.
export function capText(n, isDollars) {
  if (n == null) return "";
  return isDollars ? String(n / 1e6) : String(n);
}

// The caps in words: "$5.00 and 2000000 tokens", or null for none.
function capsWords(caps) {
  const words = [caps.micro_usd != null ? dollars(caps.micro_usd) : null, caps.tokens != null ? `${caps.tokens} tokens` : null].filter(Boolean);
  return words.length ? words.join(" and ") : null;
}

// What was spent of one kind (`fmt` writes an amount, `unit` follows), and, when it has a cap,
// a meter up to what may be spent before the runs wait (the cap and what was allowed more).
function spentOf(spent, cap, more, fmt, unit) {
  if (cap == null) return spent == null ? null : `${fmt(spent)}${unit}`;
  const limit = cap + (more || 0);
  if (spent == null) return `no cost known yet, of ${fmt(cap)}${unit}`;
  return [`${fmt(spent)} of ${fmt(cap)}${unit}`, h("meter", { min: 0, max: limit, value: Math.min(spent, limit), title: `${fmt(spent)} of ${fmt(limit)}${unit} may be spent before the runs wait` })];
}

// The budget's block, `id` its element's id (its form is `${id}-form`, its message
// `${id}-message`). `view` is the budget as bosund shows it (absent when there is none),
// `per` says whose it is, `spentWhen` when its spending counts ("so far", "today").
// `save({micro_usd, tokens})` sends the caps that changed, each `"off"` or `{set: N}`, and
// resolves once the page is drawn again.
export function sharedBudget({ id, view, per, spentWhen, save }) {
  const caps = (view && view.caps) || {};
  const more = (view && view.more) || {};
  const out = formMessage(`${id}-message`);
  const usd = text({ name: "budget_usd", value: capText(caps.micro_usd, true), size: 16, placeholder: "none, or such as 5" });
  const tokens = text({ name: "budget_tokens", value: capText(caps.tokens, false), size: 22, placeholder: "none, or such as 2000000" });
  // Runs that used nothing cost nothing; a cost no CLI reported and no price gives is unknown.
  const spentUsd = view && (view.spent_micro_usd ?? (view.spent_tokens === 0 ? 0 : null));
  const rows = [
    ["Budget", capsWords(caps) ? `${capsWords(caps)} ${per}` : "none"],
    view ? [`Spent ${spentWhen}`, h("div", { class: "budget-spent" }, [spentOf(spentUsd, caps.micro_usd, more.micro_usd, dollars, ""), spentOf(view.spent_tokens, caps.tokens, more.tokens, String, " tokens")].filter(Boolean).map((s) => h("div", null, s)))] : null,
    capsWords(more) ? ["Allowed more", capsWords(more)] : null,
  ].filter(Boolean);
  return h(
    "div",
    { class: "card form budget", id },
    h("h2", null, "Budget"),
    h("table", { class: "kv" }, rows.map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))),
    h(
      "form",
      { id: `${id}-form`, onsubmit: submit },
      field("Dollars", usd, "empty or off for none"),
      field("Tokens", tokens, "every kind together; empty or off for none"),
      h("p", { class: "muted" }, "When the runs reach it, each one's next tool call waits for you in the Inbox. Setting it anew forgets what was allowed more."),
      h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, "Set"), view ? h("button", { type: "button", id: `${id}-off`, onclick: takeOff }, "Take it off") : null),
      out.el,
    ),
  );

  async function submit(e) {
    e.preventDefault();
    let edit;
    try {
      const [u, t] = await Promise.all([capOf(usd.value, "budget_usd"), capOf(tokens.value, "budget_tokens")]);
      edit = {};
      if (changed(u, caps.micro_usd)) edit.micro_usd = u;
      if (changed(t, caps.tokens)) edit.tokens = t;
    } catch (err) {
      return out.error(`Nothing was changed: ${err.message}`);
    }
    if (!Object.keys(edit).length) return out.ok("Nothing changed.");
    send(edit, "Set.");
  }

  function takeOff() {
    send({ micro_usd: caps.micro_usd != null ? "off" : undefined, tokens: caps.tokens != null ? "off" : undefined }, "Taken off.");
  }

  async function send(edit, said) {
    try {
      await save(edit);
    } catch (err) {
      return out.error(`Nothing was changed: ${err.message}`);
    }
    flash(document.getElementById(`${id}-message`), said);
  }
}

// What a field says, as the wire's edit of a cap: empty is none.
async function capOf(value, kind) {
  const t = value.trim();
  if (!t) return "off";
  return (await getJSON(`/api/parse?${kind}=${encodeURIComponent(t)}`)).cap;
}

function changed(cap, was) {
  return cap === "off" ? was != null : cap.set !== was;
}
