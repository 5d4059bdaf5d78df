// The board: columns (Auto marked) and cards; add a card; move one by dragging it or with its
// column menu (keyboard); a card's title opens its page (edit, hold and release, activity).
// Each card says its agent, its project and branch, and where its latest run stands — going,
// waiting for you (linked to its items in the inbox), failed, QA passed or failed, merged —
// live from the `run` and `approval` events.

import { call } from "../api.js";
import { on } from "../bus.js";
import { clear, flash, h } from "../dom.js";

export function mount(root) {
  const msg = h("div");
  const cols = h("div", { class: "columns" });
  const head = h("span", { class: "muted" });
  const title = h("input", { type: "text", placeholder: "a new card's title", size: 40 });
  const column = h("select", { "aria-label": "column" });
  const assignee = h("input", { type: "text", placeholder: "assignee (an agent)", size: 16 });
  root.append(
    h("div", { class: "page-head" }, h("h1", null, "Board"), head),
    msg,
    h("form", { class: "inline", onsubmit: add }, title, column, assignee, h("button", { class: "primary", type: "submit" }, "Add card")),
    cols,
  );

  async function add(e) {
    e.preventDefault();
    try {
      await call("card_add", { title: title.value, column: column.value || null, assignee: assignee.value.trim() || null });
      title.value = "";
      load();
    } catch (err) {
      flash(msg, err.message, true);
    }
  }

  async function move(card, to) {
    try {
      await call("card_edit", { card, column: to });
      flash(msg, "");
      load();
    } catch (err) {
      flash(msg, err.message, true);
      load();
    }
  }

  async function load() {
    let b;
    let waiting = [];
    try {
      [b, waiting] = await Promise.all([
        call("board"),
        // What waits for the person is a nicety here: the board shows without it.
        call("approvals", {}).then(
          (r) => r.approvals.filter((a) => a.state === "waiting"),
          () => [],
        ),
      ]);
    } catch (err) {
      flash(msg, err.message, true);
      return;
    }
    const asks = new Map();
    for (const a of waiting) if (a.card) asks.set(a.card, (asks.get(a.card) || 0) + 1);
    head.textContent = `${b.running} running of at most ${b.limit}`;
    const chosen = column.value;
    clear(column);
    clear(cols);
    for (const c of b.columns) {
      column.append(h("option", { value: c.name }, c.name));
      const cards = b.cards.filter((k) => k.column_id === c.id);
      const el = h(
        "div",
        { class: "column", dataset: { column: c.name } },
        h("h2", null, c.name, c.auto ? h("span", { class: "chip ok", title: "cards moved here start their agent" }, " Auto") : null, h("span", { class: "muted" }, ` ${cards.length}`)),
        cards.map((k) =>
          h(
            "div",
            { class: "kcard", draggable: "true", tabindex: "0", dataset: { card: k.id }, ondragstart: (e) => e.dataTransfer.setData("text/plain", k.id) },
            h("div", null, h("span", { class: "mono muted" }, k.short_id), " ", h("a", { href: `#/card/${k.id}`, class: "card-title" }, k.title)),
            k.assignee ? h("div", { class: "muted card-agent" }, `→ ${k.assignee}`) : null,
            k.project ? h("div", { class: "muted card-project" }, k.project, k.worktree ? h("span", { class: "mono" }, ` · ${k.worktree.branch}`) : null) : null,
            k.hold ? h("div", { class: "hold" }, `held: ${k.hold.reason}`) : null,
            standing(k, asks.get(k.id) || 0),
            h(
              "select",
              { "aria-label": "move to", onchange: (e) => move(k.id, e.target.value) },
              b.columns.map((o) => h("option", { value: o.name, selected: o.id === c.id ? "selected" : null }, o.id === c.id ? `in ${o.name}` : `move to ${o.name}`)),
            ),
          ),
        ),
      );
      el.addEventListener("dragover", (e) => {
        e.preventDefault();
        el.classList.add("drop");
      });
      el.addEventListener("dragleave", () => el.classList.remove("drop"));
      el.addEventListener("drop", (e) => {
        e.preventDefault();
        el.classList.remove("drop");
        const id = e.dataTransfer.getData("text/plain");
        if (id) move(id, c.name);
      });
      cols.append(el);
    }
    if (chosen) column.value = chosen;
  }

  load();
  const t = setInterval(load, 5000);
  const offs = [on("run", load), on("approval", load), on("hello", load)];
  return () => {
    clearInterval(t);
    offs.forEach((f) => f());
  };
}

// Runs still under way, by their state's name.
const GOING = new Set(["queued", "starting", "running", "stopping"]);

// Where a card's latest run stands, most pressing first: merged (its pull request, found
// merged), waiting for you (`asks` of its runs' calls wait in the inbox), going, QA's verdict,
// failed, done; nothing before its first run.
function standing(k, asks) {
  const run = k.run ? h("a", { href: `#/run/${k.run}`, class: "muted" }, " run") : null;
  const chip = (kind, text, ...rest) => h("div", { class: "card-state" }, h("span", { class: `chip ${kind}` }, text), ...rest);
  if (k.merged) return chip("ok", "merged", h("span", { class: "muted" }, ` pull request #${k.merged.number}`));
  if (asks > 0)
    return chip(
      "warn",
      "waiting for you",
      " ",
      h("a", { href: `#/inbox/card/${encodeURIComponent(k.id)}`, class: "card-asks" }, asks === 1 ? "1 call to answer" : `${asks} calls to answer`),
    );
  if (!k.run_state) return null;
  if (GOING.has(k.run_state)) return chip("", "going", run);
  if (k.qa && k.run === k.qa.run) return chip(k.qa.verdict === "qa_pass" ? "ok" : "bad", k.qa.verdict === "qa_pass" ? "QA passed" : "QA failed", run);
  if (k.run_state === "succeeded") return chip("ok", "done", run);
  return chip("bad", k.run_state === "timed_out" ? "failed: timed out" : k.run_state === "failed" ? "failed" : `failed: ${k.run_state}`, run);
}
