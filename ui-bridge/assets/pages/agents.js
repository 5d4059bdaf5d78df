// Agents: the list; the agent form, to create one (`#/agents/~new`) or edit one: its setup
// (CLI, folder, model, instructions, permission mode, allowed commands, time cap, output cap,
// Codex settings, plain and secret environment — secret values write-only), its switches
// (servers and their tools with risk and sign-in state, web search and fetch, browser, skills),
// its approvals (mode, wait, verdicts) and each run's budget (cost, tokens, tool calls), sent as
// the `key=value` settings of `bosun agent set`, which the daemon takes all or none (when it
// refuses them, the page offers to send only them again); starting a run; pausing and removing.

import { call, getJSON } from "../api.js";
import { onWaiting, waitingWords, waits } from "../waiting.js";
import { capText } from "../budget.js";
import { ago, clear, duration, flash, h } from "../dom.js";
import { field, forgetSecrets, formMessage, lineRows, linesOf, secret, select, text } from "../forms.js";

const NEW = "~new";

export function mount(root, [name]) {
  if (name === NEW) return agentPage(root, null);
  return name ? agentPage(root, name) : listPage(root);
}

function listPage(root) {
  const msg = h("div");
  const body = h("tbody");
  root.append(
    h("div", { class: "page-head" }, h("h1", null, "Agents"), h("a", { class: "button primary", id: "agent-new", href: `#/agents/${NEW}` }, "New agent")),
    msg,
    h("table", { class: "list" }, h("thead", null, h("tr", null, ["Agent", "Role", "CLI", "Folder", "Servers on", "Approvals", "Last run"].map((c) => h("th", null, c)))), body),
  );
  let agents = [];
  // Drawn again when what waits changes: an agent whose runs wait for the person says so.
  function draw() {
    clear(body);
    for (const a of agents)
      body.append(
        h(
          "tr",
          { dataset: { agent: a.name } },
          h(
            "td",
            null,
            h("a", { href: `#/agents/${encodeURIComponent(a.name)}` }, a.name),
            a.paused ? h("span", { class: "paused" }, " paused") : null,
            waits("agent", a.name) ? h("a", { class: "chip warn waiting", href: "#/inbox" }, waitingWords(waits("agent", a.name))) : null,
          ),
          h("td", null, a.role),
          h("td", null, a.cli),
          h("td", { class: "mono" }, a.cwd),
          h("td", null, a.switches.mcp.filter((s) => s.on).map((s) => s.server).join(", ")),
          h("td", null, a.approvals ? a.approvals.mode : ""),
          h("td", null, a.last_run && a.last_run.run ? h("a", { href: `#/run/${a.last_run.run}` }, ago(a.last_run.at)) : ""),
        ),
      );
    if (!agents.length) body.append(h("tr", null, h("td", { colspan: 7, class: "muted" }, "No agents yet.")));
  }
  call("agent_list").then(
    (r) => {
      agents = r.agents;
      draw();
    },
    (e) => flash(msg, e.message, true),
  );
  return onWaiting(draw);
}

// An agent's roots as the form shows them: comma-separated, or `none`.
function rootsText(w) {
  return w && w.roots && w.roots.length ? w.roots.join(",") : "none";
}

// A time cap or a size as the person typed it, read by the bridge with the parser the command
// line and bosund use (`GET /api/parse`): the pages keep no parser of their own. Throws the
// rule's words.
async function parsed(kind, textValue) {
  return getJSON(`/api/parse?${kind}=${encodeURIComponent(textValue)}`);
}

// Bytes as the form shows them: the largest unit that divides them.
export function sizeText(n) {
  if (!n) return "";
  for (const [u, f] of [["T", 2 ** 40], ["G", 2 ** 30], ["M", 2 ** 20], ["k", 2 ** 10]]) if (n % f === 0) return `${n / f}${u}`;
  return String(n);
}

// Codex settings, one `key=value` a line (a TOML value): [[key, value]], or an error that says
// which line is wrong.
function codexLines(textValue) {
  return linesOf(textValue).map((l) => {
    const i = l.indexOf("=");
    if (i <= 0) throw new Error(`The Codex setting \`${l}\` is not key=value: write it such as model_provider="ollama".`);
    return [l.slice(0, i).trim(), l.slice(i + 1).trim()];
  });
}
const codexText = (pairs) => pairs.map(([k, v]) => `${k}=${v}`).join("\n");

const fetchText = (wf) => (!wf || wf.mode === "off" ? "off" : wf.mode === "any" ? "any" : (wf.domains || []).join(","));
const onOff = (b) => (b ? "on" : "off");

// What a new agent's form starts from: every server (its last listing's tools), all off.
async function blankAgent() {
  const servers = (await call("mcp_list")).servers;
  const mcp = await Promise.all(
    servers.map(async (s) => {
      let tools = [];
      if (s.listed_at) {
        try {
          tools = (await call("mcp_tools", { server: s.name, cached: true })).tools.map((t) => ({ name: t.name, on: true, risk: t.assessment.risk, seen_in_last_run: false }));
        } catch {
          tools = [];
        }
      }
      return { server: s.name, on: false, tools, listed: !!s.listed_at, sign_in: s.sign_in ? s.sign_in.state : null, last_run_state: null };
    }),
  );
  return {
    name: "",
    role: "worker",
    cli: "claude",
    instructions: "",
    permission_mode: null,
    allowed_commands: [],
    time_cap_ms: null,
    max_output: null,
    codex_config: [],
    cwd: "",
    command: [],
    env: [],
    secret_env: [],
    model: null,
    switches: { mcp, web_search: false, web_fetch: { mode: "off" }, browser: false, browser_insecure_certs: false, skills: false },
    approvals: { mode: "ask", verdicts: [], wait_ms: 30000, wait_for_person: false },
    workspace: { roots: [], unrestricted: false },
    warnings: [],
    paused: false,
  };
}

function agentPage(root, name) {
  let creating = name === null;
  const msg = h("div", { id: "agent-message" });
  const box = h("div");
  root.append(msg, box);
  let agent = null;

  async function load() {
    try {
      agent = creating ? await blankAgent() : await call("agent_show", { agent: name });
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    draw();
  }

  function draw() {
    clear(box);
    const a = agent;
    const prompt = h("textarea", { rows: 3, cols: 80, placeholder: "What should the agent do?", id: "agent-prompt" });
    box.append(
      h(
        "div",
        { class: "page-head" },
        h("h1", null, creating ? "New agent" : `Agent ${a.name}`),
        a.paused ? h("span", { class: "paused" }, "paused") : null,
        creating ? null : h("button", { id: "agent-pause", onclick: (e) => pause(e.target, !a.paused) }, a.paused ? "Make active" : "Pause"),
        creating ? null : h("button", { id: "agent-remove", class: "danger", onclick: (e) => remove(e.target) }, "Remove"),
      ),
      a.warnings.map((w) => h("div", { class: "flash error" }, w)),
      a.carried_over ? h("div", { class: "flash", id: "agent-carried-over" }, `Approvals ${a.carried_over}. Change them under Verdicts below.`) : null,
      creating ? null : h("div", { class: "card" }, h("h2", null, "Start a run"), h("div", { class: "inline" }, prompt, " ", h("button", { class: "primary", id: "agent-start", onclick: (e) => start(e.target, prompt.value) }, "Start"))),
      form(a),
    );
  }

  function form(a) {
    const out = formMessage("agent-form-message");
    const f = {
      name: text({ name: "name", value: a.name, required: true }),
      role: text({ name: "role", value: a.role, placeholder: "worker, lead, or a role of yours" }),
      cli: select(["claude", "codex", "gemini", "command"], a.cli, { name: "cli" }),
      cwd: text({ name: "cwd", value: a.cwd, size: 50, placeholder: "/absolute/folder" }),
      model: text({ name: "model", value: a.model || "", placeholder: "the CLI's default" }),
      instructions: h("textarea", { name: "instructions", rows: 6, cols: 80, value: a.instructions }),
      permission: text({ name: "permission_mode", value: a.permission_mode || "", placeholder: "the CLI's default" }),
      allowed: h("textarea", { name: "allowed_commands", rows: 2, cols: 50, value: a.allowed_commands.join("\n"), placeholder: "one a line, such as Bash(git *)" }),
      timeCap: text({ name: "time_cap", value: a.time_cap_ms ? duration(a.time_cap_ms) : "", placeholder: "none, or such as 30m, 2h" }),
      maxOutput: text({ name: "max_output", value: sizeText(a.max_output), placeholder: "no cap, or such as 1G, 500M" }),
      command: h("textarea", { name: "command", rows: 2, cols: 50, value: a.command.join("\n"), placeholder: "a command agent's program and arguments, one a line" }),
      codex: h("textarea", { name: "codex_config", rows: 2, cols: 50, value: codexText(a.codex_config || []), placeholder: 'one a line, such as model_provider="ollama"' }),
    };
    const env = lineRows({ cls: "env", namePlaceholder: "NAME", valuePlaceholder: "value", secretValues: false, addLabel: "Add a line" });
    for (const [k, v] of a.env) env.add(k, v);
    // The secret lines there are (by name: "set" or "missing"), a new value and a removal each.
    const secrets = a.secret_env.map((l) => {
      const v = secret({ class: "line-value", placeholder: l.saved ? "set — type to replace" : "missing — type it", "aria-label": `new value of ${l.name}` });
      const rm = h("input", { type: "checkbox", class: "line-remove", "aria-label": `remove ${l.name}` });
      return { name: l.name, v, rm, row: h("div", { class: "line-row", dataset: { line: l.name } }, h("span", { class: "mono line-name" }, l.name), h("span", { class: `chip ${l.saved ? "ok" : "bad"}` }, l.saved ? "set" : "missing"), v, h("label", null, rm, " remove")) };
    });
    const newSecrets = lineRows({ cls: "secret-env", namePlaceholder: "NAME", valuePlaceholder: "value (not shown again)", secretValues: true, addLabel: "Add a secret line" });

    // Switches and approvals.
    const sw = a.switches;
    const s = {
      webSearch: h("input", { type: "checkbox", name: "web.search", checked: sw.web_search }),
      webFetch: text({ name: "web.fetch", value: fetchText(sw.web_fetch), placeholder: "off, any, or domains: docs.rs,*.example.com" }),
      browser: h("input", { type: "checkbox", name: "browser", checked: sw.browser }),
      insecure: h("input", { type: "checkbox", name: "browser.insecure-certs", checked: sw.browser_insecure_certs }),
      skills: h("input", { type: "checkbox", name: "skills", checked: sw.skills }),
      mode: select(
        [
          ["ask", "ask: every action that is not read-only waits for the person"],
          ["read-only", "read-only: reads run without asking, the rest waits"],
          ["skip", "skip: the rest runs, but irreversible writes, shell commands and unknown tools wait"],
        ],
        a.approvals.mode,
        { name: "approval" },
      ),
      wait: text({ name: "approval.wait", value: duration(a.approvals.wait_ms), size: 8 }),
      waitForPerson: h("input", { type: "checkbox", name: "approval.wait-for-person", checked: a.approvals.wait_for_person }),
      roots: text({ name: "roots", value: rootsText(a.workspace), placeholder: "none, or absolute folders: /home/me/notes,/srv/data", size: 40 }),
      unrestricted: h("input", { type: "checkbox", name: "workspace.unrestricted", checked: !!(a.workspace && a.workspace.unrestricted) }),
      budgetUsd: text({ name: "budget.usd", value: capText((a.budget || {}).micro_usd, true), size: 16, placeholder: "none, or such as 2" }),
      budgetTokens: text({ name: "budget.tokens", value: capText((a.budget || {}).tokens, false), size: 22, placeholder: "none, or such as 500000" }),
      maxToolCalls: text({ name: "max-tool-calls", value: capText((a.budget || {}).tool_calls, false), size: 16, placeholder: "none, or such as 200" }),
    };
    const servers = sw.mcp.map((m) => {
      const on = h("input", { type: "checkbox", class: "server-switch", checked: m.on, "aria-label": `mcp.${m.server}` });
      const tools = m.tools.map((t) => ({ t, on: h("input", { type: "checkbox", class: "tool-switch", checked: t.on, "aria-label": `mcp.${m.server}.${t.name}` }) }));
      return {
        m,
        on,
        tools,
        el: h(
          "div",
          { class: "card server", dataset: { server: m.server } },
          h("label", { class: "switch" }, on, h("strong", null, m.server), m.sign_in ? h("span", { class: `chip ${m.sign_in === "signed in" ? "ok" : "warn"}` }, m.sign_in) : null, m.last_run_state ? h("span", { class: "muted" }, `last run: ${m.last_run_state}`) : null, m.listed ? null : h("span", { class: "muted" }, "tools not listed yet: ", h("a", { href: `#/mcp/${encodeURIComponent(m.server)}` }, "list them"))),
          tools.map(({ t, on: o }) => h("label", { class: "switch tool", dataset: { tool: t.name } }, o, h("span", { class: "mono" }, t.name), h("span", { class: `chip risk-${t.risk}` }, t.risk), t.seen_in_last_run ? h("span", { class: "muted" }, "used in the last run") : null)),
        ),
      };
    });
    const verdicts = a.approvals.verdicts.map(([key, v]) => {
      const sel = select(["allow", "ask", "block", ["reset", "forget"]], v, { class: "verdict", "aria-label": `verdict of ${key}` });
      return { key, v, sel, row: h("div", { class: "line-row", dataset: { verdict: key } }, h("span", { class: "mono line-name" }, key), sel) };
    });
    const newVerdicts = h("div", { class: "new-verdicts" });
    const newVerdictRows = [];
    function addVerdict() {
      const k = text({ class: "verdict-key", placeholder: "Bash(git *), mcp.github.create_issue, Edit…", size: 30 });
      const sel = select(["allow", "ask", "block"], "allow", { class: "verdict" });
      newVerdictRows.push({ k, sel });
      newVerdicts.append(h("div", { class: "line-row" }, k, sel));
      return k;
    }

    const el = h(
      "form",
      { id: "agent-form", onsubmit: submit },
      h(
        "section",
        { class: "card form" },
        h("h2", null, "Setup"),
        field("Name", f.name),
        field("Role", f.role),
        field("CLI", f.cli),
        field("Folder", f.cwd, "where its runs work; absolute"),
        field("Model", f.model),
        field("Instructions", f.instructions),
        field("Permission mode", f.permission, "claude: default, acceptEdits, plan…; codex: read-only, workspace-write…; gemini: default, auto_edit…"),
        field("Allowed commands", f.allowed),
        field("Time cap", f.timeCap),
        field("Output kept", f.maxOutput, "the most of each run's output bosun keeps; none for no cap"),
        field("Command", f.command, "command agents only"),
        field("Codex settings", f.codex, "codex agents only: the model and provider settings, key=value in TOML"),
        h("div", { class: "field" }, h("span", { class: "label" }, "Environment"), env.el),
        h("div", { class: "field" }, h("span", { class: "label" }, "Secret environment"), h("div", null, secrets.map((l) => l.row), newSecrets.el, h("div", { class: "muted" }, "Kept in the keychain; the page only ever shows that a line is set."))),
      ),
      h(
        "section",
        { class: "card form" },
        h("h2", null, "Tools"),
        h("label", { class: "switch" }, s.webSearch, "Web search"),
        field("Web fetch", s.webFetch),
        h("label", { class: "switch" }, s.browser, "Browser (chrome-devtools)"),
        h("label", { class: "switch" }, s.insecure, "Browser accepts self-signed certificates"),
        h("label", { class: "switch" }, s.skills, "Skills and slash commands (Claude Code only)"),
        h("h2", null, "Workspace"),
        field("Roots", s.roots, "where its runs may write besides their own folder (a card's worktree); everything its runs start is fenced in to these"),
        h("label", { class: "switch" }, s.unrestricted, "Unrestricted: file tools may write anywhere but git metadata, and runs are not fenced"),
        h("h2", null, "MCP servers"),
        servers.length ? servers.map((x) => x.el) : h("p", { class: "muted" }, "No MCP servers yet: ", h("a", { href: "#/mcp" }, "add one")),
      ),
      h(
        "section",
        { class: "card form" },
        h("h2", null, "Approvals"),
        field("Mode", s.mode),
        field("A call waits for the person", s.wait, "then it is denied; 1s to 24h"),
        h("label", { class: "switch" }, s.waitForPerson, "Runs the board or the lead started wait for the person too"),
        h("div", { class: "field" }, h("span", { class: "label" }, "Verdicts"), h("div", { id: "verdicts" }, verdicts.map((v) => v.row), newVerdicts, h("button", { type: "button", class: "small", id: "verdict-add", onclick: () => addVerdict().focus() }, "Add a verdict"))),
        h("h2", null, "Budget of each run"),
        field("Dollars", s.budgetUsd),
        field("Tokens", s.budgetTokens, "every kind together"),
        field("Tool calls", s.maxToolCalls),
        h("p", { class: "muted" }, "Empty or off for none. A run that reaches one waits for you in the Inbox at its next tool call: allow gives it as much again, deny stops it."),
      ),
      h("div", { class: "actions" }, h("button", { class: "primary", type: "submit", id: "agent-save" }, creating ? "Create" : "Save")),
      out.el,
    );

    // The settings of `bosun agent set` that differ from what `now` has.
    function settings(now) {
      const out = [];
      const nsw = now.switches;
      if (s.webSearch.checked !== nsw.web_search) out.push(`web.search=${onOff(s.webSearch.checked)}`);
      const wf = s.webFetch.value.trim() || "off";
      if (wf !== fetchText(nsw.web_fetch)) out.push(`web.fetch=${wf}`);
      if (s.browser.checked !== nsw.browser) out.push(`browser=${onOff(s.browser.checked)}`);
      if (s.insecure.checked !== nsw.browser_insecure_certs) out.push(`browser.insecure-certs=${onOff(s.insecure.checked)}`);
      if (s.skills.checked !== nsw.skills) out.push(`skills=${onOff(s.skills.checked)}`);
      for (const x of servers) {
        const cur = nsw.mcp.find((m) => m.server === x.m.server);
        if (!cur) continue;
        const toggled = x.on.checked !== cur.on;
        if (toggled) out.push(`mcp.${x.m.server}=${onOff(x.on.checked)}`);
        // A server switched on starts with its earlier choice of tools (or all of them): when
        // it is toggled, every tool's switch is said as the form shows it.
        for (const { t, on } of x.tools) {
          const ct = cur.tools.find((y) => y.name === t.name);
          if (ct && ((toggled && x.on.checked) || on.checked !== ct.on)) out.push(`mcp.${x.m.server}.${t.name}=${onOff(on.checked)}`);
        }
      }
      const roots = s.roots.value.trim() || "none";
      if (roots !== rootsText(now.workspace)) out.push(`roots=${roots}`);
      const unrestricted = !!(now.workspace && now.workspace.unrestricted);
      if (s.unrestricted.checked !== unrestricted) out.push(`workspace=${s.unrestricted.checked ? "unrestricted" : "roots"}`);
      const ap = now.approvals;
      if (s.mode.value !== ap.mode) out.push(`approval=${s.mode.value}`);
      const waitText = s.wait.value.trim();
      // bosund reads the text; the same wait written otherwise is the same wait to it.
      if (waitText !== duration(ap.wait_ms)) out.push(`approval.wait=${waitText}`);
      if (s.waitForPerson.checked !== ap.wait_for_person) out.push(`approval.wait-for-person=${onOff(s.waitForPerson.checked)}`);
      // bosund reads each cap; the field's text goes as it is, empty as off.
      const b = now.budget || {};
      for (const [key, el, was, dollars] of [
        ["budget.usd", s.budgetUsd, b.micro_usd, true],
        ["budget.tokens", s.budgetTokens, b.tokens, false],
        ["max-tool-calls", s.maxToolCalls, b.tool_calls, false],
      ]) {
        const t = el.value.trim() || "off";
        if (t !== (capText(was, dollars) || "off")) out.push(`${key}=${t}`);
      }
      for (const v of verdicts) if (v.sel.value !== v.v) out.push(`${v.key}=${v.sel.value}`);
      for (const v of newVerdictRows) if (v.k.value.trim()) out.push(`${v.k.value.trim()}=${v.sel.value}`);
      return out;
    }

    async function timeCap() {
      const t = f.timeCap.value.trim();
      if (!t || t === "none" || t === "off") return 0;
      try {
        return (await parsed("time_cap", t)).ms;
      } catch (err) {
        throw new Error(`The time cap: ${err.message}; write it such as 90s, 30m or 2h, or none.`);
      }
    }

    async function maxOutput() {
      const t = f.maxOutput.value.trim();
      if (!t || t === "none" || t === "off") return 0;
      try {
        return (await parsed("size", t)).bytes;
      } catch (err) {
        throw new Error(`The output cap: ${err.message}, or none.`);
      }
    }

    function newSecretLines() {
      return [...secrets.filter((l) => l.v.value && !l.rm.checked).map((l) => ({ name: l.name, value: l.v.value })), ...newSecrets.lines().filter((l) => l.value)];
    }

    // The setup's changes for `agent_edit` (what is absent stays).
    async function edit() {
      const a = agent;
      const p = { agent: a.name, set_env: [], remove_env: [], set_secret_env: newSecretLines(), remove_secret_env: secrets.filter((l) => l.rm.checked).map((l) => l.name) };
      const str = (k, el, was) => {
        if (el.value.trim() !== (was || "")) p[k] = el.value.trim();
      };
      str("name", f.name, a.name);
      str("role", f.role, a.role);
      if (f.cli.value !== a.cli) p.cli = f.cli.value;
      str("cwd", f.cwd, a.cwd);
      str("model", f.model, a.model);
      if (f.instructions.value !== a.instructions) p.instructions = f.instructions.value;
      str("permission_mode", f.permission, a.permission_mode);
      const allowed = linesOf(f.allowed.value);
      if (allowed.join("\n") !== a.allowed_commands.join("\n")) p.allowed_commands = allowed;
      const cap = await timeCap();
      if (cap !== (a.time_cap_ms || 0)) p.time_cap_ms = cap;
      const most = await maxOutput();
      if (most !== (a.max_output || 0)) p.max_output = most;
      const codex = codexLines(f.codex.value);
      if (codexText(codex) !== codexText(a.codex_config || [])) p.codex_config = codex;
      const command = linesOf(f.command.value);
      if (command.join("\n") !== a.command.join("\n")) p.command = command;
      const rows = env.lines().map((l) => [l.name, l.value]);
      const was = new Map(a.env);
      p.set_env = rows.filter(([k, v]) => was.get(k) !== v);
      p.remove_env = a.env.map(([k]) => k).filter((k) => !rows.some(([n]) => n === k));
      const changed = Object.keys(p).filter((k) => k !== "agent" && (!Array.isArray(p[k]) || p[k].length));
      return changed.length ? p : null;
    }

    async function add() {
      const cap = await timeCap();
      const most = await maxOutput();
      return {
        name: f.name.value.trim(),
        role: f.role.value.trim() || null,
        cli: f.cli.value,
        instructions: f.instructions.value || null,
        permission_mode: f.permission.value.trim() || null,
        allowed_commands: linesOf(f.allowed.value),
        time_cap_ms: cap || null,
        max_output: most || null,
        cwd: f.cwd.value.trim(),
        command: linesOf(f.command.value),
        env: env.lines().map((l) => [l.name, l.value]),
        secret_env: newSecrets.lines().filter((l) => l.value),
        model: f.model.value.trim() || null,
        codex_config: codexLines(f.codex.value),
      };
    }

    async function submit(e) {
      e.preventDefault();
      const button = el.querySelector("#agent-save");
      button.disabled = true;
      try {
        await save();
      } finally {
        button.disabled = false;
      }
    }

    // Says the switches were refused, with a button that sends them again (as the form shows
    // them by then) and nothing of the setup.
    function switchesRefused(textValue) {
      out.error(textValue);
      out.el.append(
        h(
          "div",
          { class: "actions" },
          h("span", { class: "muted" }, "Correct them above, then "),
          h("button", { type: "button", id: "agent-retry-switches", onclick: (ev) => retrySwitches(ev.target) }, "Send only the switches again"),
        ),
      );
    }

    async function retrySwitches(button) {
      button.disabled = true;
      const changes = settings(agent);
      if (!changes.length) return out.ok("The switches are as the form shows them.");
      try {
        agent = await call("agent_set", { agent: agent.name, settings: changes });
      } catch (err) {
        return switchesRefused(`The switches were refused again, none of them changed: ${err.message}`);
      }
      draw();
      flash(document.getElementById("agent-form-message"), "Saved.");
    }

    async function save() {
      let setup;
      try {
        setup = creating ? await add() : await edit();
      } catch (err) {
        return out.error(err.message);
      }
      let now = agent;
      if (setup) {
        try {
          now = await call(creating ? "agent_add" : "agent_edit", setup);
          forgetSecrets(el);
        } catch (err) {
          return out.error(creating ? `The agent was not created: ${err.message}` : `Nothing was saved: ${err.message}`);
        }
      }
      const changes = settings(now);
      if (changes.length) {
        try {
          now = await call("agent_set", { agent: now.name, settings: changes });
        } catch (err) {
          const done = creating ? `The agent ${now.name} was created` : setup ? "The setup was saved" : "Nothing was saved";
          // The form stays as typed, now editing what was saved: Save again sends the rest.
          agent = now;
          if (creating || now.name !== name) history.replaceState(null, "", `#/agents/${encodeURIComponent(now.name)}`);
          creating = false;
          name = now.name;
          el.querySelector("#agent-save").textContent = "Save";
          return switchesRefused(`${done}; the switches were refused, none of them changed: ${err.message}`);
        }
      }
      if (!setup && !changes.length) return out.ok("Nothing changed.");
      if (creating || now.name !== name) {
        location.hash = `#/agents/${encodeURIComponent(now.name)}`;
        return;
      }
      agent = now;
      draw();
      flash(document.getElementById("agent-form-message"), "Saved.");
    }

    return el;
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

  async function pause(button, paused) {
    button.disabled = true;
    try {
      agent = await call("agent_edit", { agent: agent.name, set_env: [], remove_env: [], set_secret_env: [], remove_secret_env: [], paused });
      flash(msg, paused ? "Paused: the board starts no run of it." : "Active again.");
      draw();
    } catch (e) {
      flash(msg, e.message, true);
      button.disabled = false;
    }
  }

  async function remove(button) {
    if (!confirm(`Remove the agent ${agent.name}? Its secrets go too.`)) return;
    button.disabled = true;
    try {
      await call("agent_remove", { agent: agent.name });
      location.hash = "#/agents";
    } catch (e) {
      flash(msg, e.message, true);
      button.disabled = false;
    }
  }

  load();
}
