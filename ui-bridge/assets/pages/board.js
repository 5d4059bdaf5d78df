// The board: columns (Auto marked) and cards; add a card; move one by dragging it or with its
// column menu (keyboard); a card's title opens its page (edit, hold and release, activity).

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
    try {
      b = await call("board");
    } catch (err) {
      flash(msg, err.message, true);
      return;
    }
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
            k.assignee ? h("div", { class: "muted" }, `→ ${k.assignee}`) : null,
            k.hold ? h("div", { class: "hold" }, `held: ${k.hold.reason}`) : null,
            k.run ? h("div", null, h("a", { href: `#/run/${k.run}` }, `run ${k.run_state || ""}`)) : null,
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
  const offs = [on("run", load), on("hello", load)];
  return () => {
    clearInterval(t);
    offs.forEach((f) => f());
  };
}
