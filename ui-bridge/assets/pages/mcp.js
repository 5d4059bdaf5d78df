// MCP servers: the list; adding one (stdio or by address, secret values in password fields that
// are emptied once sent — the page only ever shows that a line is set); importing from Claude
// Code, Codex and Gemini CLI with a preview (the requests `bosun mcp import` sends); one server's
// page: its setup, edit, rename, remove, sign-in and sign-out (OAuth, in a window of this
// browser), the connection test and its tools with risk and their parameters.

import { call } from "../api.js";
import { ago, clear, flash, h, when } from "../dom.js";
import { field, forgetSecrets, formMessage, lineRows, linesOf, secret, select, text } from "../forms.js";

export function mount(root, [name]) {
  return name ? serverPage(root, name) : listPage(root);
}

const signInBy = [
  ["bosun", "bosun (OAuth, when the server asks)"],
  ["claude-code", "Claude Code (its own sign-ins)"],
];

function target(s) {
  return s.url || [s.command, ...(s.args || [])].filter(Boolean).join(" ");
}

function signInState(s) {
  if (!s.sign_in) return "";
  return s.sign_in.state;
}

function listPage(root) {
  const msg = h("div", { id: "mcp-message" });
  const body = h("tbody", { id: "mcp-servers" });
  const addBox = h("section", { id: "mcp-add", class: "card form", hidden: true });
  const importBox = h("section", { id: "mcp-import", class: "card form", hidden: true });
  root.append(
    h(
      "div",
      { class: "page-head" },
      h("h1", null, "MCP servers"),
      h("button", { id: "mcp-add-open", class: "primary", onclick: () => ((addBox.hidden = !addBox.hidden), (importBox.hidden = true)) }, "Add a server"),
      h("button", { id: "mcp-import-open", onclick: () => ((importBox.hidden = !importBox.hidden), (addBox.hidden = true)) }, "Import from Claude Code, Codex, Gemini"),
    ),
    msg,
    addBox,
    importBox,
    h("table", { class: "list" }, h("thead", null, h("tr", null, ["Server", "Transport", "Where", "Sign-in", "Tools", "Listed", ""].map((c) => h("th", null, c)))), body),
  );
  addForm(addBox, (s) => {
    addBox.hidden = true;
    flash(msg, `Added ${s.name}.`);
    load();
  });
  importForm(importBox, (servers) => {
    flash(msg, servers.length ? `Imported ${servers.map((s) => s.name).join(", ")}.` : "Nothing was imported: every server found is in the list already.");
    load();
  });

  async function remove(s, button) {
    if (!confirm(`Remove the server ${s.name} and its secrets? Agents that use it lose it.`)) return;
    button.disabled = true;
    try {
      await call("mcp_remove", { server: s.name });
      flash(msg, `Removed ${s.name}.`);
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
            { dataset: { server: s.name } },
            h("td", null, h("a", { href: `#/mcp/${encodeURIComponent(s.name)}` }, s.name), s.builtin ? h("span", { class: "muted" }, " built-in") : null),
            h("td", null, s.kind),
            h("td", { class: "mono what", title: target(s) }, target(s)),
            h("td", { class: "sign-in" }, signInState(s)),
            h("td", null, s.tool_count == null ? "" : String(s.tool_count)),
            h("td", null, s.listed_at ? ago(s.listed_at) : "never", s.last_error ? h("div", { class: "flash error" }, s.last_error) : null),
            h("td", null, s.builtin ? null : h("button", { class: "small danger", onclick: (e) => remove(s, e.target) }, "Remove")),
          ),
        );
      if (!r.servers.length) body.append(h("tr", null, h("td", { colspan: 7, class: "muted" }, "No servers yet.")));
    } catch (err) {
      flash(msg, err.message, true);
    }
  }
  load();
}

// The add form: the same shapes as `bosun mcp add`.
function addForm(box, added) {
  const out = formMessage("mcp-add-message");
  const f = {
    name: text({ name: "name", placeholder: "github", required: true }),
    kind: select(["stdio", "http", "sse"], "stdio", { name: "kind" }),
    command: text({ name: "command", placeholder: "npx", size: 30 }),
    args: h("textarea", { name: "args", rows: 3, cols: 40, placeholder: "one argument a line" }),
    url: text({ name: "url", placeholder: "https://example.com/mcp", size: 40 }),
    allowHttp: h("input", { type: "checkbox", name: "allow_http" }),
    clientId: text({ name: "client_id", placeholder: "only for a server that takes no registration" }),
    clientSecret: secret({ name: "client_secret" }),
    callbackPort: h("input", { type: "number", name: "callback_port", min: 0, max: 65535 }),
    by: select(signInBy, "bosun", { name: "sign_in_by" }),
  };
  const env = lineRows({ cls: "env", namePlaceholder: "NAME", valuePlaceholder: "value (not shown again)", secretValues: true, addLabel: "Add an environment line" });
  const headers = lineRows({ cls: "headers", namePlaceholder: "Header-Name", valuePlaceholder: "value (not shown again)", secretValues: true, addLabel: "Add a header line" });
  const stdio = h("div", { class: "when-stdio" }, field("Command", f.command), field("Arguments", f.args), h("div", { class: "field" }, h("span", { class: "label" }, "Environment"), env.el));
  const remote = h(
    "div",
    { class: "when-remote", hidden: true },
    field("Address", f.url, "its query is kept as a secret and shown as ?…"),
    field("Plain http to another machine", f.allowHttp),
    h("div", { class: "field" }, h("span", { class: "label" }, "Headers"), headers.el),
    field("Who signs in", f.by),
    field("Client id", f.clientId),
    field("Client secret", f.clientSecret),
    field("Callback port", f.callbackPort, "0 or empty: any free port"),
  );
  f.kind.addEventListener("change", () => {
    stdio.hidden = f.kind.value !== "stdio";
    remote.hidden = f.kind.value === "stdio";
  });
  const form = h("form", { id: "mcp-add-form", onsubmit: submit }, h("h2", null, "Add a server"), field("Name", f.name), field("Transport", f.kind), stdio, remote, h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, "Add")), out.el);
  box.append(form);

  async function submit(e) {
    e.preventDefault();
    const isStdio = f.kind.value === "stdio";
    const port = f.callbackPort.value.trim();
    const params = {
      name: f.name.value.trim(),
      kind: f.kind.value,
      command: isStdio ? f.command.value.trim() || null : null,
      args: isStdio ? linesOf(f.args.value) : [],
      url: isStdio ? null : f.url.value.trim() || null,
      allow_http: !isStdio && f.allowHttp.checked,
      env: isStdio ? env.lines() : [],
      headers: isStdio ? [] : headers.lines(),
      client_id: isStdio ? null : f.clientId.value.trim() || null,
      client_secret: !isStdio && f.clientSecret.value ? f.clientSecret.value : null,
      callback_port: !isStdio && port ? Number(port) : null,
      sign_in_by: isStdio ? null : f.by.value,
    };
    try {
      const s = await call("mcp_add", params);
      out.clear();
      env.reset();
      headers.reset();
      forgetSecrets(form);
      form.reset();
      stdio.hidden = false;
      remote.hidden = true;
      added(s);
    } catch (err) {
      out.error(err.message);
    }
  }
}

// The import: what the coding CLIs' configs hold (names only), then the servers picked.
function importForm(box, imported) {
  const out = formMessage("mcp-import-message");
  const files = h("textarea", { name: "files", rows: 2, cols: 60, placeholder: "more files to read, one a line: another account's .claude.json, a project's .mcp.json, a Codex config.toml, a Gemini settings.json" });
  const found = h("div", { id: "mcp-import-found" });
  let candidates = [];
  box.append(
    h("h2", null, "Import servers"),
    h("p", { class: "muted" }, "Reads the configs of Claude Code, Codex and Gemini CLI in their usual places (nothing is written there). Values of environment and header lines are never shown: they go to bosun's keychain."),
    field("Also read", files),
    h("div", { class: "actions" }, h("button", { id: "mcp-import-scan", type: "button", onclick: scan }, "Find servers")),
    out.el,
    found,
  );
  const scanParams = () => ({ extra_files: linesOf(files.value), env: [] });

  async function scan() {
    out.ok("Reading the configs…");
    try {
      const r = await call("mcp_import_scan", scanParams());
      candidates = r.candidates;
      out.clear();
      for (const p of r.problems) out.el.append(h("div", { class: "flash error" }, p));
      draw();
    } catch (err) {
      out.error(err.message);
    }
  }

  function draw() {
    clear(found);
    if (!candidates.length) {
      found.append(h("p", { class: "muted" }, "No servers found."));
      return;
    }
    const rows = candidates.map((c) => {
      const pick = h("input", { type: "checkbox", class: "pick", checked: c.status === "new", "aria-label": `import ${c.name}` });
      const as = text({ class: "rename", placeholder: c.name, size: 14, "aria-label": `import ${c.name} as` });
      return {
        c,
        pick,
        as,
        row: h(
          "tr",
          { dataset: { candidate: c.name } },
          h("td", null, pick),
          h("td", null, c.name),
          h("td", null, c.source, h("div", { class: "muted" }, c.scope)),
          h("td", null, c.kind),
          h("td", { class: "mono what", title: target(c) }, target(c)),
          h("td", null, [...c.env_names.map((n) => `${n} (env)`), ...c.header_names.map((n) => `${n} (header)`)].join(", ")),
          h("td", { class: "status" }, c.status.replaceAll("_", " ")),
          h("td", null, as),
        ),
      };
    });
    found.append(
      h("table", { class: "list" }, h("thead", null, h("tr", null, ["", "Name", "From", "Transport", "Where", "Lines (values not shown)", "", "Import as"].map((t) => h("th", null, t)))), h("tbody", null, rows.map((r) => r.row))),
      h("div", { class: "actions" }, h("button", { id: "mcp-import-go", class: "primary", type: "button", onclick: () => go(rows) }, "Import the ones ticked")),
    );
  }

  async function go(rows) {
    const picks = rows.filter((r) => r.pick.checked).map((r) => ({ name: r.c.name, rename_to: r.as.value.trim() || null, account: r.c.account }));
    if (!picks.length) return out.error("Tick the servers to import first.");
    try {
      const r = await call("mcp_import", { scan: scanParams(), all: false, picks });
      out.clear();
      clear(found);
      imported(r.servers);
    } catch (err) {
      out.error(err.message);
    }
  }
}

function serverPage(root, name) {
  const msg = h("div", { id: "server-message" });
  const head = h("div", { class: "page-head" });
  const info = h("div", { id: "server-info" });
  const editBox = h("section", { id: "server-edit", class: "card form" });
  const inspectBox = h("div", { id: "server-inspect" });
  const tools = h("div", { id: "server-tools" });
  root.append(head, msg, info, inspectBox, h("h2", null, "Tools"), tools, editBox);
  let server = null;

  function drawHead() {
    clear(head);
    const s = server;
    const remote = s.kind !== "stdio";
    const bosunSigns = remote && s.sign_in_by === "bosun";
    head.append(
      h("h1", null, "Server ", s.name),
      h("span", { class: "chip" }, s.kind),
      h("button", { id: "list-tools", class: "primary", onclick: (e) => list(false, e.target) }, "List tools now"),
      h("button", { id: "inspect", onclick: (e) => inspect(e.target) }, "Test connection"),
      bosunSigns ? h("button", { id: "sign-in", onclick: (e) => signIn(e.target) }, s.sign_in && s.sign_in.state === "signed in" ? "Sign in again" : "Sign in") : null,
      // A client bosun registered, which a service may forget: sign in with a new one.
      bosunSigns && !s.client_id && !s.client_metadata_url
        ? h("label", { class: "muted", title: "When the service's sign-in page says bosun's client or app is unknown" },
            h("input", { type: "checkbox", id: "sign-in-new-client" }), " as a new client")
        : null,
      bosunSigns && s.sign_in && s.sign_in.state === "signed in" ? h("button", { id: "sign-out", onclick: (e) => signOut(e.target) }, "Sign out") : null,
      s.builtin ? null : h("button", { id: "remove", class: "danger", onclick: (e) => remove(e.target) }, "Remove"),
    );
  }

  function lineList(lines) {
    return lines.map((l) => h("span", { class: `chip ${l.saved ? "ok" : "bad"}`, dataset: { line: l.name } }, `${l.name}: ${l.saved ? "set" : "missing"}`));
  }

  function drawInfo() {
    clear(info);
    const s = server;
    const si = s.sign_in;
    const rows = [
      ["Transport", s.kind],
      s.command ? ["Command", s.command] : null,
      s.args.length ? ["Arguments", s.args.join(" ")] : null,
      s.url ? ["Address", s.url] : null,
      s.kind !== "stdio" ? ["Plain http to another machine", s.allow_http ? "allowed" : "no"] : null,
      s.env.length ? ["Environment", lineList(s.env)] : null,
      s.headers.length ? ["Headers", lineList(s.headers)] : null,
      s.kind !== "stdio" ? ["Who signs in", s.sign_in_by] : null,
      s.client_id ? ["Client id", s.client_id] : null,
      s.callback_port ? ["Callback port", String(s.callback_port)] : null,
      si ? ["Sign-in", h("span", { id: "sign-in-state" }, si.state), si.why ? h("div", { class: "muted" }, si.why) : null] : null,
      si && si.issuer ? ["Issuer", si.issuer] : null,
      si && si.scope ? ["Scope", si.scope] : null,
      si && si.signed_in_at ? ["Signed in", when(si.signed_in_at)] : null,
      si && si.expires_at ? ["Token expires", when(si.expires_at)] : null,
      ["Tools listed", s.listed_at ? `${ago(s.listed_at)} (${s.tool_count} tools)` : "never"],
      ...gatewayRows(s, approve),
      s.browser ? ["Browser", `chrome-devtools-mcp ${s.browser.version}; ${s.browser.program_found || "no browser found"}`, s.browser.missing.map((m) => h("div", { class: "flash error" }, m))] : null,
    ].filter(Boolean);
    info.append(
      h("table", { class: "kv" }, rows.map(([k, ...v]) => h("tr", null, h("th", null, k), h("td", null, v)))),
      s.last_error ? h("div", { class: "flash error", id: "server-last-error" }, s.last_error) : null,
    );
  }

  // Lets runs have what waits for the person: tools new or changed since they approved the
  // server's tools, capabilities it advertises beyond the approved ones.
  async function approve(params, button) {
    button.disabled = true;
    try {
      server = await call("mcp_approve", { server: name, ...params });
      drawInfo();
      if (server.listed_at) list(true);
    } catch (e) {
      flash(msg, e.message, true);
      button.disabled = false;
    }
  }

  async function load() {
    try {
      server = await call("mcp_show", { server: name });
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    drawHead();
    drawInfo();
    drawEdit(null);
    if (server.listed_at) list(true);
    else clear(tools).append(h("p", { class: "muted" }, "Not listed yet: List tools now starts (or calls) the server and asks it."));
  }

  // The edit form, drawn again from the server as saved (`note` said under it).
  function drawEdit(note) {
    editForm(editBox, server, note, (s) => {
      if (s.name !== name) {
        location.hash = `#/mcp/${encodeURIComponent(s.name)}`;
        return;
      }
      server = s;
      drawHead();
      drawInfo();
      drawEdit("Saved.");
    });
  }

  async function list(cached, button) {
    if (button) button.disabled = true;
    if (!cached) flash(msg, "Asking the server for its tools… (a first run of an npx server downloads its package: up to 2 minutes)");
    try {
      const r = await call("mcp_tools", { server: name, cached });
      clear(tools);
      if (!cached) flash(msg, `${r.tools.length} tools listed.`);
      tools.append(h("p", { class: "muted", id: "tools-summary" }, `${r.tools.length} tools, listed ${ago(r.listed_at)}${r.truncated ? ` (${r.truncated})` : ""}`));
      for (const t of r.tools) tools.append(toolCard(t));
      if (!cached) {
        server = await call("mcp_show", { server: name });
        drawInfo();
      }
    } catch (e) {
      if (cached || !offerSignIn(e, () => list(false))) flash(msg, e.message, true);
    }
    if (button) button.disabled = false;
  }

  // A server bosun signs in to that asks for a sign-in, a wider one, or one at another
  // authorization server: the person signs in from here, and what they asked for is done once
  // more. The button's click lets the page open the sign-in window.
  function offerSignIn(e, again) {
    if (e.code !== "unauthorized" || server.kind === "stdio" || server.sign_in_by !== "bosun") return false;
    const retry = h("button", { id: "sign-in-retry", class: "primary small" }, "Sign in and try again");
    retry.onclick = async () => {
      await signIn(retry);
      if (server.sign_in && server.sign_in.state === "signed in") again();
    };
    clear(msg).append(h("div", { class: "flash error", id: "sign-in-asked" }, e.message, " ", retry));
    return true;
  }

  async function inspect(button) {
    button.disabled = true;
    flash(msg, "Connecting…");
    try {
      const r = await call("mcp_inspect", { server: name });
      flash(msg, "");
      clear(inspectBox).append(
        h(
          "div",
          { class: "card" },
          h("h2", null, "Connection"),
          h(
            "table",
            { class: "kv" },
            [
              ["Server", [r.server_name, r.server_version].filter(Boolean).join(" ")],
              ["Protocol", r.protocol_version + (r.revision ? ` (${r.revision.stateless ? "stateless; " : ""}${r.revision.why})` : "")],
              ["Tools", String(r.tools)],
              r.prompts != null ? ["Prompts", String(r.prompts)] : null,
              r.resources != null ? ["Resources", String(r.resources)] : null,
              ["Runs get", (r.approved_capabilities || []).join(", ")],
              (r.pending_capabilities || []).length ? ["Pending", h("span", { id: "inspect-pending" }, `${r.pending_capabilities.join(", ")} (held back until approved)`)] : null,
              (r.never_relayed || []).length ? ["Never in a run", r.never_relayed.join(", ")] : null,
              (r.pending_tools || []).length ? ["Pending tools", r.pending_tools.map((t) => `${t.name} (${t.change})`).join(", ")] : null,
              ["Timings", `connect ${r.connect_ms} ms, list ${r.list_ms} ms, total ${r.total_ms} ms`],
            ]
              .filter(Boolean)
              .map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v))),
          ),
          r.instructions ? h("pre", { class: "preview" }, r.instructions) : null,
          h("details", null, h("summary", null, "Capabilities"), h("pre", { class: "preview" }, JSON.stringify(r.capabilities, null, 2))),
        ),
      );
    } catch (e) {
      if (!offerSignIn(e, () => inspect(button))) flash(msg, e.message, true);
    }
    button.disabled = false;
  }

  // The OAuth sign-in: a window of this browser opens the provider's page (opened in the click,
  // so no popup blocker stops it), bosund's loopback answer ends it ("You can close this
  // page"), and this page waits for bosund to say how it went. The window gets no handle on
  // this page (its opener is cut before it leaves for the provider); this page closes it when
  // the browser lets it, and otherwise says, with the outcome, that the window is done and can
  // be closed.
  async function signIn(button) {
    button.disabled = true;
    const w = window.open("", "bosun-sign-in", "popup,width=640,height=720");
    // Closes the window when the browser still lets this page, and says how the flow ended
    // and what is left of it for the person.
    const end = () => {
      try {
        if (w && !w.closed) w.close();
      } catch {
        // Already gone.
      }
      return w && !w.closed
        ? " The sign-in window, which says “You can close this page”, is done: close it."
        : "";
    };
    try {
      const fresh = document.getElementById("sign-in-new-client");
      const started = await call("mcp_sign_in", { server: name, new_client: !!(fresh && fresh.checked) });
      // bosund refuses a sign-in address that is not https:// (or http:// to this machine); a
      // page never opens or links anything else, whatever bosund it talks to.
      if (!/^https?:\/\//i.test(started.url || "")) {
        throw new Error(`The sign-in address \`${started.url}\` is not an http(s) address; bosun does not open it.`);
      }
      const link = h("a", { href: started.url, target: "_blank", rel: "noopener noreferrer", id: "sign-in-link" }, "the sign-in page");
      if (w) {
        w.opener = null;
        w.location.href = started.url;
      }
      // A server that forgot the client bosun registered there says so on its own page only.
      const reused = started.reused_registration
        ? ` This uses the client bosun registered there before: if the page says the client or app is unknown, close it, reload this page, and sign in with “as a new client” ticked.`
        : "";
      // Cancelling closes bosund's loopback address for the answer; the wait below then ends
      // with "cancelled" (or "signed in", when the answer was already in).
      const cancel = h("button", { class: "small", id: "sign-in-cancel" }, "Cancel");
      cancel.onclick = async () => {
        cancel.disabled = true;
        try {
          await call("mcp_sign_in_cancel", { attempt: started.attempt });
        } catch (e) {
          flash(msg, `Could not cancel the sign-in: ${e.message}`, true);
        }
      };
      clear(msg).append(h("div", { class: "flash", id: "sign-in-waiting" }, `Sign in to ${name} in the window that opened (or open `, link, `); waiting up to ${Math.round(started.wait_secs / 60)} minutes… `, cancel, reused));
      // What bosun could not check first (a client metadata document it cannot reach).
      if (started.warning) msg.append(h("div", { class: "flash error", id: "sign-in-warning" }, started.warning));
      server = await call("mcp_sign_in_finish", { attempt: started.attempt });
      flash(msg, `Signed in to ${name}: the sign-in is over.${end()}`);
      drawHead();
      drawInfo();
    } catch (e) {
      flash(msg, `Not signed in: ${e.message}${end()}`, true);
    } finally {
      button.disabled = false;
    }
  }

  async function signOut(button) {
    button.disabled = true;
    try {
      server = await call("mcp_sign_out", { server: name });
      flash(msg, `Signed out of ${name}.`);
      drawHead();
      drawInfo();
    } catch (e) {
      flash(msg, e.message, true);
      button.disabled = false;
    }
  }

  async function remove(button) {
    if (!confirm(`Remove the server ${name} and its secrets? Agents that use it lose it.`)) return;
    button.disabled = true;
    try {
      await call("mcp_remove", { server: name });
      location.hash = "#/mcp";
    } catch (e) {
      flash(msg, e.message, true);
      button.disabled = false;
    }
  }

  load();
}

// A tool: its risk, the hints the server sent, and (opened) its parameters.
function toolCard(t) {
  const a = t.assessment;
  return h(
    "div",
    { class: "card tool", dataset: { tool: t.name } },
    h("div", { class: "item-head" }, h("strong", { class: "mono" }, t.name), t.title ? h("span", null, t.title) : null, h("span", { class: `chip risk-${a.risk}` }, a.risk), t.pending ? h("span", { class: "chip bad pending" }, `${t.pending}: held back until approved`) : null, h("span", { class: "muted" }, a.words.join(", "))),
    t.description ? h("div", { class: "description" }, t.description) : null,
    h("div", { class: "muted hints" }, a.sent.length ? `hints sent: ${a.sent.join(", ")}` : "no hints sent (the spec's defaults apply)"),
    h(
      "details",
      { class: "params" },
      h("summary", null, `${t.params.length} parameter${t.params.length === 1 ? "" : "s"} · ${t.full_name}`),
      t.params.length
        ? h(
            "table",
            { class: "list" },
            h("thead", null, h("tr", null, ["Parameter", "Type", "", "What"].map((c) => h("th", null, c)))),
            h("tbody", null, t.params.map((p) => h("tr", null, h("td", { class: "mono" }, p.name), h("td", null, p.type || ""), h("td", null, p.required ? "required" : ""), h("td", null, p.description || "")))),
          )
        : h("p", { class: "muted" }, "No parameters."),
    ),
  );
}

// The edit form: only what was changed is sent (`mcp_edit` keeps what is absent); a line's value
// is replaced only when a new one is typed; rename is its own request.
/// What bosun's gateway holds the server to in every run, and what waits for the person's
/// approval, each with its button.
function gatewayRows(s, approve) {
  if (!s.rules) return [];
  const r = s.rules;
  const pendingCaps = s.pending_capabilities || [];
  const pendingTools = s.pending_tools || [];
  return [
    ["Capabilities", h("span", { id: "gateway-capabilities" }, (r.capabilities || []).join(", "))],
    pendingCaps.length
      ? ["Pending capabilities",
          h("div", { class: "muted" }, "Advertised by the server, held back from runs until you approve them."),
          h("div", { id: "pending-capabilities" }, pendingCaps.map((c) =>
            h("button", { dataset: { capability: c }, onclick: (e) => approve({ capabilities: [c] }, e.target) }, `Approve ${c}`)))]
      : null,
    pendingTools.length
      ? ["Pending tools",
          h("div", { class: "muted" }, "New or changed since you approved the server's tools: held back from runs until you approve them."),
          h("ul", { id: "pending-tools" }, pendingTools.map((t) =>
            h("li", { dataset: { tool: t.name } }, `${t.name} (${t.change}) `,
              h("button", { onclick: (e) => approve({ tools: [t.name] }, e.target) }, "Approve")))),
          pendingTools.length > 1 ? h("button", { id: "approve-all-tools", onclick: (e) => approve({ all_tools: true }, e.target) }, "Approve all") : null]
      : null,
    ["Trust", h("span", { id: "gateway-trust" }, r.trusted ? "trusted: results reach the model as they are" : "untrusted: results reach the model framed as untrusted content")],
    ["Allowed tools", h("span", { id: "gateway-allow" }, (r.allow_tools || []).length ? r.allow_tools.join(", ") : "every tool")],
    ["Denied tools", h("span", { id: "gateway-deny" }, (r.deny_tools || []).length ? r.deny_tools.join(", ") : "none")],
    ["Call deadline", `${r.deadline_ms / 1000} s`],
    ["Result size", `${r.max_result_chars} characters; longer ones reach the model as head and tail`],
    ["Forms (elicitation)", h("span", { id: "gateway-elicitation" }, r.elicitation === "ask" ? "ask: each waits in the Inbox for you to fill in" : "deny: refused")],
    ["Model messages (sampling)", h("span", { id: "gateway-sampling" },
      r.sampling === "ask" ? "ask: each waits in the Inbox; once allowed, the run's CLI writes it"
        : r.sampling === "allow" ? `allow: the run's CLI writes it, up to ${r.sampling_max_tokens ?? 1000} tokens each`
          : "deny: refused")],
    ["Network (fenced runs)", h("span", { id: "gateway-net" }, (r.net || []).length
      ? `what its transport needs, and ${r.net.join(", ")}` : "only what its transport needs (bosun mcp edit NAME --net HOST adds hosts)")],
  ];
}

function editForm(box, s, note, changed) {
  clear(box);
  const out = formMessage("server-edit-message");
  out.ok(note);
  const remote = s.kind !== "stdio";
  const f = {
    rename: text({ name: "new_name", value: s.name }),
    kind: select(remote ? ["http", "sse"] : ["stdio"], s.kind, { name: "kind" }),
    command: text({ name: "command", value: s.command || "", size: 30 }),
    args: h("textarea", { name: "args", rows: 3, cols: 40, value: s.args.join("\n") }),
    url: text({ name: "url", placeholder: s.url || "", size: 40 }),
    allowHttp: h("input", { type: "checkbox", name: "allow_http", checked: s.allow_http }),
    clientId: text({ name: "client_id", value: s.client_id || "" }),
    clientSecret: secret({ name: "client_secret", placeholder: "a new secret (not shown)" }),
    callbackPort: h("input", { type: "number", name: "callback_port", min: 0, max: 65535, value: s.callback_port || "" }),
    by: select(signInBy, s.sign_in_by, { name: "sign_in_by" }),
    version: text({ name: "browser_version", value: s.browser ? s.browser.version : "" }),
    program: text({ name: "browser_program", value: s.browser && s.browser.program_set ? s.browser.program_set : "", size: 40 }),
    trusted: h("input", { type: "checkbox", name: "trusted", checked: !!(s.rules && s.rules.trusted) }),
    allow: text({ name: "allow_tools", value: s.rules ? (s.rules.allow_tools || []).join(", ") : "", size: 40 }),
    deny: text({ name: "deny_tools", value: s.rules ? (s.rules.deny_tools || []).join(", ") : "", size: 40 }),
    deadline: h("input", { type: "number", name: "deadline_s", min: 1, max: 3600, value: s.rules ? s.rules.deadline_ms / 1000 : 60 }),
    maxResult: h("input", { type: "number", name: "max_result_chars", min: 256, value: s.rules ? s.rules.max_result_chars : 8192 }),
    elicitation: select(["deny", "ask"], (s.rules && s.rules.elicitation) || "deny", { name: "elicitation" }),
    sampling: select(["deny", "ask", "allow"], (s.rules && s.rules.sampling) || "deny", { name: "sampling" }),
    samplingMax: h("input", { type: "number", name: "sampling_max_tokens", min: 1, max: 100000, value: (s.rules && s.rules.sampling_max_tokens) || 1000 }),
  };
  const gatewayFields = !s.rules
    ? []
    : [
        h("h3", null, "bosun's gateway"),
        field("Trusted", f.trusted, "untrusted: results are framed as untrusted content"),
        field("Allowed tools", f.allow, "patterns, comma-separated (* and ?); empty: every tool"),
        field("Denied tools", f.deny, "patterns, comma-separated; deny wins"),
        field("Call deadline (seconds)", f.deadline),
        field("Result size (characters)", f.maxResult),
        field("Forms the server asks you to fill in", f.elicitation, "ask: each waits in the Inbox"),
        field("Messages the server asks of the model", f.sampling, "ask: each waits in the Inbox; allow: without asking; the run's CLI writes it"),
        field("Tokens a message may ask for", f.samplingMax, "with allow: more is refused"),
      ];
  // The lines there are: a new value (empty keeps it) and a switch to remove it.
  const existing = (lines, kind) =>
    lines.map((l) => {
      const v = secret({ class: "line-value", placeholder: l.saved ? "set — type to replace" : "missing — type it", "aria-label": `new value of ${l.name}` });
      const rm = h("input", { type: "checkbox", class: "line-remove", "aria-label": `remove ${l.name}` });
      return { name: l.name, v, rm, row: h("div", { class: "line-row", dataset: { line: l.name, kind } }, h("span", { class: "mono line-name" }, l.name), h("span", { class: `chip ${l.saved ? "ok" : "bad"}` }, l.saved ? "set" : "missing"), v, h("label", null, rm, " remove")) };
    });
  const env = existing(s.env, "env");
  const headers = existing(s.headers, "header");
  const newEnv = lineRows({ cls: "env", namePlaceholder: "NAME", valuePlaceholder: "value (not shown again)", secretValues: true, addLabel: "Add an environment line" });
  const newHeaders = lineRows({ cls: "headers", namePlaceholder: "Header-Name", valuePlaceholder: "value (not shown again)", secretValues: true, addLabel: "Add a header line" });

  const fields = s.builtin
    ? [field("chrome-devtools-mcp version", f.version), field("Browser program", f.program, "empty: bosun finds one")]
    : remote
      ? [
          field("Transport", f.kind),
          field("Address", f.url, s.url ? `now ${s.url}; empty keeps it` : null),
          field("Plain http to another machine", f.allowHttp),
          h("div", { class: "field" }, h("span", { class: "label" }, "Headers"), h("div", null, headers.map((l) => l.row), newHeaders.el)),
          field("Who signs in", f.by),
          field("Client id", f.clientId, "empty removes it"),
          field("Client secret", f.clientSecret, "empty keeps it"),
          field("Callback port", f.callbackPort, "0 or empty: any free port"),
        ]
      : [field("Command", f.command), field("Arguments", f.args, "one a line"), h("div", { class: "field" }, h("span", { class: "label" }, "Environment"), h("div", null, env.map((l) => l.row), newEnv.el))];
  const form = h("form", { id: "server-edit-form", onsubmit: submit }, h("h2", null, "Edit"), fields, gatewayFields, h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, "Save")));
  const renameForm = h("form", { id: "server-rename-form", class: "inline", onsubmit: rename }, h("h2", null, "Rename"), f.rename, h("button", { type: "submit" }, "Rename"));
  box.append(s.builtin ? null : renameForm, form, out.el);

  function lineChanges(list, added) {
    const set = [...list.filter((l) => l.v.value && !l.rm.checked).map((l) => ({ name: l.name, value: l.v.value })), ...added.lines()];
    const remove = list.filter((l) => l.rm.checked).map((l) => l.name);
    return [set, remove];
  }

  async function submit(e) {
    e.preventDefault();
    const p = { server: s.name, set_env: [], remove_env: [], set_headers: [], remove_headers: [] };
    if (s.builtin) {
      if (f.version.value.trim() !== (s.browser ? s.browser.version : "")) p.browser_version = f.version.value.trim();
      const prog = s.browser && s.browser.program_set ? s.browser.program_set : "";
      if (f.program.value.trim() !== prog) p.browser_program = f.program.value.trim();
    } else if (remote) {
      if (f.kind.value !== s.kind) p.kind = f.kind.value;
      if (f.url.value.trim()) p.url = f.url.value.trim();
      if (f.allowHttp.checked !== s.allow_http) p.allow_http = f.allowHttp.checked;
      [p.set_headers, p.remove_headers] = lineChanges(headers, newHeaders);
      if (f.by.value !== s.sign_in_by) p.sign_in_by = f.by.value;
      if (f.clientId.value.trim() !== (s.client_id || "")) p.client_id = f.clientId.value.trim();
      if (f.clientSecret.value) p.client_secret = f.clientSecret.value;
      const port = Number(f.callbackPort.value.trim() || 0);
      if (port !== (s.callback_port || 0)) p.callback_port = port;
    } else {
      if (f.command.value.trim() !== (s.command || "")) p.command = f.command.value.trim();
      const args = linesOf(f.args.value);
      if (args.join("\n") !== s.args.join("\n")) p.args = args;
      [p.set_env, p.remove_env] = lineChanges(env, newEnv);
    }
    if (s.rules) {
      const r = s.rules;
      const globs = (v) => v.split(",").map((x) => x.trim()).filter(Boolean);
      const g = {};
      if (f.trusted.checked !== r.trusted) g.trusted = f.trusted.checked;
      const allow = globs(f.allow.value);
      if (allow.join(",") !== (r.allow_tools || []).join(",")) g.allow_tools = allow;
      const deny = globs(f.deny.value);
      if (deny.join(",") !== (r.deny_tools || []).join(",")) g.deny_tools = deny;
      const ms = Math.round(Number(f.deadline.value) * 1000);
      if (ms !== r.deadline_ms) g.deadline_ms = ms;
      const chars = Number(f.maxResult.value);
      if (chars !== r.max_result_chars) g.max_result_chars = chars;
      if (f.elicitation.value !== (r.elicitation || "deny")) g.elicitation = f.elicitation.value;
      if (f.sampling.value !== (r.sampling || "deny")) g.sampling = f.sampling.value;
      const most = Number(f.samplingMax.value);
      if (most !== (r.sampling_max_tokens || 1000)) g.sampling_max_tokens = most;
      if (Object.keys(g).length) p.gateway = g;
    }
    try {
      const next = await call("mcp_edit", p);
      forgetSecrets(form);
      changed(next);
    } catch (err) {
      out.error(err.message);
    }
  }

  async function rename(e) {
    e.preventDefault();
    const to = f.rename.value.trim();
    if (to === s.name) return out.error("Type the new name first.");
    try {
      changed(await call("mcp_rename", { server: s.name, new_name: to }));
    } catch (err) {
      out.error(err.message);
    }
  }
}
