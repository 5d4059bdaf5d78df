// One card of the board: its setup and activity; edit its title, description, acceptance,
// project, agent and column; put it on hold with a reason and release it; its budget, what its
// runs spent against it, set and taken off (`budget.js`); add a line to its activity; remove
// it. The daemon's refusal is said next to the form, in its words.

import { call } from "../api.js";
import { sharedBudget } from "../budget.js";
import { on } from "../bus.js";
import { clear, flash, h, when } from "../dom.js";
import { field, formMessage, select, text } from "../forms.js";

export function mount(root, [id]) {
  const msg = h("div", { id: "card-message" });
  const box = h("div");
  root.append(msg, box);
  let card = null;
  let typing = false; // a form being filled is not redrawn under the person's hands

  async function load() {
    let board, agents, projects;
    try {
      [card, board, agents, projects] = await Promise.all([
        call("card_show", { card: id }),
        call("board"),
        call("agent_list"),
        call("project_list").catch(() => ({ projects: [] })),
      ]);
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    draw(board.columns, agents.agents, projects.projects);
  }

  function draw(columns, agents, projects) {
    clear(box);
    typing = false;
    const c = card;
    const out = formMessage("card-form-message");
    const holdOut = formMessage("card-hold-message");
    const f = {
      title: text({ name: "title", value: c.title, size: 60 }),
      description: h("textarea", { name: "description", rows: 5, cols: 80, value: c.description }),
      acceptance: h("textarea", { name: "acceptance", rows: 3, cols: 80, value: c.acceptance }),
      project: select([["", "(none: its agent's folder)"], ...projects.map((p) => p.name)], c.project || "", { name: "project" }),
      agent: select([["", "(nobody)"], ...agents.map((a) => a.name)], c.assignee || "", { name: "assignee" }),
      column: select(columns.map((k) => k.name), c.column, { name: "column" }),
      comment: text({ name: "comment", size: 60, placeholder: "a line for its activity (optional)" }),
    };
    const reason = text({ name: "hold_reason", size: 50, placeholder: "why it waits" });
    const form = h(
      "form",
      { id: "card-form", class: "card form", onsubmit: save, oninput: () => (typing = true) },
      h("h2", null, "Edit"),
      field("Title", f.title),
      field("Description", f.description),
      field("Acceptance", f.acceptance),
      field("Project", f.project, c.worktree ? "its runs already work in a worktree of the project" : null),
      field("Agent", f.agent),
      field("Column", f.column),
      field("Activity", f.comment),
      h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, "Save")),
      out.el,
    );
    const hold = c.hold
      ? h("div", { class: "card", id: "card-hold" }, h("div", { class: "hold" }, `On hold: ${c.hold.reason}`), h("button", { id: "card-release", onclick: release }, "Release"), holdOut.el)
      : h("form", { class: "card inline", id: "card-hold", onsubmit: holdIt }, reason, h("button", { type: "submit", id: "card-hold-go" }, "Hold"), holdOut.el);
    const budget = sharedBudget({
      id: "card-budget",
      view: c.budget,
      per: "for all its runs together",
      spentWhen: "so far",
      save: async (edit) => {
        card = await call("card_edit", { card: c.id, budget_micro_usd: edit.micro_usd, budget_tokens: edit.tokens });
        await load();
      },
    });
    budget.addEventListener("input", () => (typing = true));
    box.append(
      h("div", { class: "page-head" }, h("h1", null, h("span", { class: "mono muted" }, c.short_id), " ", c.title), h("span", { class: "chip" }, c.column), c.hold ? h("span", { class: "chip warn" }, "on hold") : null, h("a", { href: "#/board" }, "the board"), h("button", { class: "danger", id: "card-remove", onclick: remove }, "Remove")),
      h(
        "table",
        { class: "kv" },
        [
          ["Agent", c.assignee || "nobody"],
          ["Project", c.project || "none"],
          c.worktree ? ["Worktree", `${c.worktree.path} (${c.worktree.branch})`] : null,
          ["Runs", String(c.runs), c.run ? [" · latest: ", h("a", { href: `#/run/${c.run}`, id: "card-run" }, c.run_state || "run")] : null],
          ["Created", when(c.created_at)],
          ["Changed", when(c.updated_at)],
        ]
          .filter(Boolean)
          .map(([k, ...v]) => h("tr", null, h("th", null, k), h("td", null, v))),
      ),
      hold,
      budget,
      form,
      h("h2", null, "Activity"),
      h("ul", { class: "activity", id: "card-activity" }, c.activity.map((a) => h("li", null, h("span", { class: "muted" }, when(a.at), " "), a.what))),
    );

    async function save(e) {
      e.preventDefault();
      const p = { card: c.id };
      if (f.title.value.trim() !== c.title) p.title = f.title.value.trim();
      if (f.description.value !== c.description) p.description = f.description.value;
      if (f.acceptance.value !== c.acceptance) p.acceptance = f.acceptance.value;
      if (f.project.value !== (c.project || "")) p.project = f.project.value;
      if (f.agent.value !== (c.assignee || "")) p.assignee = f.agent.value;
      if (f.column.value !== c.column) p.column = f.column.value;
      if (f.comment.value.trim()) p.comment = f.comment.value.trim();
      if (Object.keys(p).length === 1) return out.ok("Nothing changed.");
      try {
        card = await call("card_edit", p);
        await load();
        flash(document.getElementById("card-form-message"), "Saved.");
      } catch (err) {
        out.error(err.message);
      }
    }

    async function holdIt(e) {
      e.preventDefault();
      if (!reason.value.trim()) return holdOut.error("Say why it waits: the reason is shown on the card and to the lead.");
      try {
        await call("card_edit", { card: c.id, hold: reason.value.trim() });
        load();
      } catch (err) {
        holdOut.error(err.message);
      }
    }

    async function release() {
      try {
        await call("card_edit", { card: c.id, clear_hold: true });
        load();
      } catch (err) {
        holdOut.error(err.message);
      }
    }

    async function remove(e) {
      if (!confirm(`Remove the card ${c.short_id} ${c.title}? Its worktree goes too (its branch stays).`)) return;
      e.target.disabled = true;
      try {
        await call("card_remove", { card: c.id, force: false });
        location.hash = "#/board";
      } catch (err) {
        flash(msg, err.message, true);
        e.target.disabled = false;
      }
    }
  }

  load();
  const offs = [
    on("run", (r) => {
      if (!typing && r.agent && r.agent.card === (card && card.id)) load();
    }),
    on("hello", () => typing || load()),
  ];
  return () => offs.forEach((f) => f());
}
