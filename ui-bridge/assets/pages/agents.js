// Agents: the list; one agent's setup, its switches (servers and their tools with risk, web,
// browser, skills) applied with agent_set, and starting a run with agent_run.

import { call } from "../api.js";
import { ago, clear, duration, flash, h } from "../dom.js";

export function mount(root, [name]) {
  return name ? agentPage(root, name) : listPage(root);
}

function listPage(root) {
  const msg = h("div");
  const body = h("tbody");
  root.append(
    h("div", { class: "page-head" }, h("h1", null, "Agents"), h("span", { class: "muted" }, "Add agents with `bosun agent add`.")),
    msg,
    h("table", { class: "list" }, h("thead", null, h("tr", null, ["Agent", "Role", "CLI", "Folder", "Servers on", "Last run"].map((c) => h("th", null, c)))), body),
  );
  call("agent_list").then(
    (r) => {
      for (const a of r.agents)
        body.append(
          h(
            "tr",
            null,
            h("td", null, h("a", { href: `#/agents/${encodeURIComponent(a.name)}` }, a.name)),
            h("td", null, a.role),
            h("td", null, a.cli),
            h("td", { class: "mono" }, a.cwd),
            h("td", null, a.switches.mcp.filter((s) => s.on).map((s) => s.server).join(", ")),
            h("td", null, a.last_run && a.last_run.run ? h("a", { href: `#/run/${a.last_run.run}` }, ago(a.last_run.at)) : ""),
          ),
        );
      if (!r.agents.length) body.append(h("tr", null, h("td", { colspan: 6, class: "muted" }, "No agents yet.")));
    },
    (e) => flash(msg, e.message, true),
  );
}

function agentPage(root, name) {
  const msg = h("div");
  const box = h("div");
  root.append(msg, box);
  let agent = null;
  const changes = new Map();

  const toggle = (key, on) => h("input", { type: "checkbox", checked: on, "aria-label": key, onchange: (e) => changes.set(key, e.target.checked ? "on" : "off") });

  function draw() {
    clear(box);
    changes.clear();
    const a = agent;
    const setup = [
      ["Role", a.role],
      ["CLI", a.cli],
      ["Folder", a.cwd],
      ["Model", a.model],
      ["Permission mode", a.permission_mode],
      ["Allowed commands", a.allowed_commands.join(", ")],
      ["Time cap", a.time_cap_ms ? duration(a.time_cap_ms) : ""],
      ["Command", a.command.join(" ")],
      ["Environment", a.env.map(([k]) => k).join(", ")],
      ["Secret environment", a.secret_env.map((l) => `${l.name} (${l.saved ? "saved" : "missing"})`).join(", ")],
    ];
    const prompt = h("textarea", { rows: 3, cols: 80, placeholder: "What should the agent do?", id: "agent-prompt" });
    box.append(
      h(
        "div",
        null,
      h("div", { class: "page-head" }, h("h1", null, "Agent ", a.name), a.paused ? h("span", { class: "paused" }, "paused") : null),
      a.warnings.map((w) => h("div", { class: "flash error" }, w)),
      h("table", { class: "kv" }, setup.filter(([, v]) => v).map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))),
      a.instructions ? h("pre", { class: "preview" }, a.instructions) : null,
      h("h2", null, "Start a run"),
      h("div", { class: "inline" }, prompt, " ", h("button", { class: "primary", onclick: (e) => start(e.target, prompt.value) }, "Start")),
      h("h2", null, "Tools"),
      h("div", { class: "switch" }, toggle("web.search", a.switches.web_search), "Web search"),
      h("div", { class: "switch" }, h("span", { class: "muted" }, `Web fetch: ${JSON.stringify(a.switches.web_fetch)} (set with \`bosun agent set\`)`)),
      h("div", { class: "switch" }, toggle("browser", a.switches.browser), "Browser (chrome-devtools)"),
      h("div", { class: "switch" }, toggle("skills", a.switches.skills), "Skills"),
      a.switches.mcp.map((s) =>
        h(
          "div",
          { class: "card" },
          h("div", { class: "switch" }, toggle(`mcp.${s.server}`, s.on), h("strong", null, s.server), s.sign_in ? h("span", { class: "chip" }, s.sign_in) : null, s.last_run_state ? h("span", { class: "muted" }, `last run: ${s.last_run_state}`) : null, s.listed ? null : h("span", { class: "muted" }, "tools not listed yet")),
          s.tools.map((t) => h("div", { class: "switch tool" }, "\u00a0\u00a0\u00a0", toggle(`mcp.${s.server}.${t.name}`, t.on), t.name, h("span", { class: `chip risk-${t.risk}` }, t.risk), t.seen_in_last_run ? h("span", { class: "muted" }, "used in the last run") : null)),
        ),
      ),
      h("p", null, h("button", { class: "primary", onclick: (e) => apply(e.target) }, "Apply switches")),
      ),
    );
  }

  async function apply(button) {
    if (!changes.size) return flash(msg, "Nothing changed.");
    button.disabled = true;
    try {
      agent = await call("agent_set", { agent: agent.name, settings: [...changes].map(([k, v]) => `${k}=${v}`) });
      flash(msg, "Saved.");
      draw();
    } catch (e) {
      flash(msg, e.message, true);
      button.disabled = false;
    }
  }

  async function start(button, prompt) {
    button.disabled = true;
    try {
      const run = await call("agent_run", { agent: agent.name, prompt });
      location.hash = `#/run/${run.id}`;
    } catch (e) {
      flash(msg, e.message, true);
      button.disabled = false;
    }
  }

  call("agent_show", { agent: name }).then(
    (a) => {
      agent = a;
      draw();
    },
    (e) => flash(msg, e.message, true),
  );
}
