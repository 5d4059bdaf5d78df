// MCP servers: the list, adding one (secret lines write-only), its tools with risk, removing.

import { call } from "../api.js";
import { ago, clear, flash, h } from "../dom.js";

export function mount(root, [name]) {
  return name ? serverPage(root, name) : listPage(root);
}

// `NAME=value` lines → [{name, value}] (values travel only in this request).
function secretLines(text, sep) {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const i = l.indexOf(sep);
      return i < 0 ? { name: l, value: "" } : { name: l.slice(0, i).trim(), value: l.slice(i + 1).trim() };
    });
}

function listPage(root) {
  const msg = h("div");
  const body = h("tbody");
  const f = {
    name: h("input", { type: "text", placeholder: "name", required: true }),
    kind: h("select", null, ["stdio", "http", "sse"].map((k) => h("option", { value: k }, k))),
    target: h("input", { type: "text", placeholder: "command and arguments, or the address", size: 40 }),
    env: h("textarea", { rows: 2, cols: 40, placeholder: "secret lines, one a line: NAME=value (env) or Name: value (headers)" }),
  };
  root.append(
    h("div", { class: "page-head" }, h("h1", null, "MCP servers")),
    msg,
    h("table", { class: "list" }, h("thead", null, h("tr", null, ["Server", "Transport", "Where", "Sign-in", "Tools", "Listed", ""].map((c) => h("th", null, c)))), body),
    h("h2", null, "Add a server"),
    h("form", { class: "inline", onsubmit: add }, f.name, f.kind, f.target, f.env, h("button", { class: "primary", type: "submit" }, "Add")),
  );

  async function add(e) {
    e.preventDefault();
    const stdio = f.kind.value === "stdio";
    const words = f.target.value.trim().split(/\s+/).filter(Boolean);
    const lines = secretLines(f.env.value, stdio ? "=" : ":");
    try {
      await call("mcp_add", {
        name: f.name.value.trim(),
        kind: f.kind.value,
        command: stdio ? words[0] || null : null,
        args: stdio ? words.slice(1) : [],
        url: stdio ? null : words[0] || null,
        env: stdio ? lines : [],
        headers: stdio ? [] : lines,
      });
      f.env.value = "";
      flash(msg, `Added ${f.name.value}.`);
      load();
    } catch (err) {
      flash(msg, err.message, true);
    }
  }

  async function remove(s, button) {
    if (!confirm(`Remove the server ${s.name}? Agents that use it lose it.`)) return;
    button.disabled = true;
    try {
      await call("mcp_remove", { server: s.name });
      load();
    } catch (err) {
      flash(msg, err.message, true);
      button.disabled = false;
    }
  }

  async function load() {
    try {
      const r = await call("mcp_list");
      clear(body);
      for (const s of r.servers)
        body.append(
          h(
            "tr",
            null,
            h("td", null, h("a", { href: `#/mcp/${encodeURIComponent(s.name)}` }, s.name), s.builtin ? h("span", { class: "muted" }, " built-in") : null),
            h("td", null, s.kind),
            h("td", { class: "mono what" }, s.url || [s.command, ...(s.args || [])].filter(Boolean).join(" ")),
            h("td", null, s.sign_in ? s.sign_in.state : ""),
            h("td", null, s.tool_count == null ? "" : String(s.tool_count)),
            h("td", null, s.listed_at ? ago(s.listed_at) : "never", s.last_error ? h("div", { class: "flash error" }, s.last_error) : null),
            h("td", null, s.builtin ? null : h("button", { class: "small danger", onclick: (e) => remove(s, e.target) }, "Remove")),
          ),
        );
    } catch (err) {
      flash(msg, err.message, true);
    }
  }
  load();
}

function serverPage(root, name) {
  const msg = h("div");
  const tools = h("div");
  const listBtn = h("button", { class: "primary", onclick: () => list(false) }, "List tools now");
  root.append(h("div", { class: "page-head" }, h("h1", null, "Server ", name), listBtn), msg, tools);

  async function list(cached) {
    listBtn.disabled = true;
    flash(msg, cached ? "" : "Asking the server for its tools…");
    try {
      const r = await call("mcp_tools", { server: name, cached });
      clear(tools);
      flash(msg, `${r.tools.length} tools, listed ${ago(r.listed_at)}${r.truncated ? ` (${r.truncated})` : ""}`);
      for (const t of r.tools)
        tools.append(
          h(
            "div",
            { class: "card" },
            h("div", { class: "item-head" }, h("strong", { class: "mono" }, t.name), h("span", { class: `chip risk-${t.assessment.risk}` }, t.assessment.risk), h("span", { class: "muted" }, t.assessment.words.join(", "))),
            t.description ? h("div", null, t.description) : null,
            h("div", { class: "muted" }, t.assessment.sent.length ? `hints sent: ${t.assessment.sent.join(", ")}` : "no hints sent (the spec's defaults apply)"),
          ),
        );
    } catch (e) {
      flash(msg, e.message, true);
    }
    listBtn.disabled = false;
  }
  list(true);
}
