// Pieces the forms share: labelled fields, lines of names with secret values (password fields,
// emptied once sent: a secret is never shown again, only that it is set), and the box next to a
// form where the daemon's refusal is said in its own words.

import { clear, h } from "./dom.js";

// A labelled field: `<label><span>Text</span> input hint</label>`.
export function field(text, input, hint) {
  return h("label", { class: "field" }, h("span", { class: "label" }, text), input, hint ? h("span", { class: "muted hint" }, hint) : null);
}

export function text(props) {
  return h("input", { type: "text", autocomplete: "off", spellcheck: "false", ...props });
}

// A password field for a secret: never filled from what the daemon says, never remembered.
export function secret(props) {
  return h("input", { type: "password", autocomplete: "new-password", spellcheck: "false", ...props });
}

export function select(options, value, props) {
  return h(
    "select",
    props || null,
    options.map((o) => {
      const [v, label] = Array.isArray(o) ? o : [o, o];
      return h("option", { value: v, selected: v === value ? "selected" : null }, label);
    }),
  );
}

// Where a form says what went wrong (the daemon's refusal, in its words) or what was done.
export function formMessage(id) {
  const el = h("div", { class: "form-message", id, role: "status" });
  return {
    el,
    error(text) {
      clear(el);
      el.append(h("div", { class: "flash error" }, text));
    },
    ok(text) {
      clear(el);
      if (text) el.append(h("div", { class: "flash" }, text));
    },
    clear() {
      clear(el);
    },
  };
}

// Lines with a name and a value: `secret` values in password fields (environment lines,
// header lines), else plain text fields. `lines()` gives [{name, value}] of the rows with a
// name; `reset()` empties every field (secret values leave the page once sent).
export function lineRows({ cls, namePlaceholder, valuePlaceholder, secretValues, addLabel }) {
  const rows = h("div", { class: `line-rows ${cls || ""}` });
  const list = [];
  function add(name, value) {
    const n = text({ class: "line-name", placeholder: namePlaceholder, value: name || "" });
    const v = secretValues ? secret({ class: "line-value", placeholder: valuePlaceholder }) : text({ class: "line-value", placeholder: valuePlaceholder, value: value || "" });
    const row = h("div", { class: "line-row" }, n, v);
    const item = { n, v, row };
    row.append(
      h("button", {
        type: "button",
        class: "small",
        title: "remove this line",
        onclick: () => {
          row.remove();
          list.splice(list.indexOf(item), 1);
        },
      }, "×"),
    );
    list.push(item);
    rows.append(row);
    return item;
  }
  const box = h("div", null, rows, h("button", { type: "button", class: "small add-line", onclick: () => add().n.focus() }, addLabel || "Add a line"));
  return {
    el: box,
    add,
    lines: () => list.filter((i) => i.n.value.trim()).map((i) => ({ name: i.n.value.trim(), value: i.v.value })),
    reset() {
      for (const i of [...list]) i.row.remove();
      list.length = 0;
    },
  };
}

// Clears every password field under `root` (after a form was sent, refused or not).
export function forgetSecrets(root) {
  for (const i of root.querySelectorAll("input[type=password]")) i.value = "";
}

// Words of a text field: "a b  c" → ["a", "b", "c"].
export function words(s) {
  return s.trim().split(/\s+/).filter(Boolean);
}

// One a line: "a\n\nb" → ["a", "b"].
export function linesOf(s) {
  return s
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
}
