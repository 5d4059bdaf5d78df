// A run's tool call that waits for the person: how it is drawn (its preview as text, a file
// change as a side-by-side diff), the time it has left, and the person's four answers (approve,
// approve always, deny with a message, block). The Inbox and a run's page both use it.
//
// Everything here comes from a run (a command, a file's text, a tool's arguments) and goes into
// the page as text nodes only.

import { call } from "./api.js";
import { ago, h } from "./dom.js";

// "12s left", "4m05s left", "no time left".
export function timeLeft(deadline, now = Date.now()) {
  const ms = deadline - now;
  if (ms <= 0) return "no time left";
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s}s left`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s left`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m left`;
}

// Brings every countdown under `root` up to date (the pages call it once a second).
export function tick(root) {
  const now = Date.now();
  for (const el of root.querySelectorAll(".time-left[data-deadline]")) {
    const deadline = Number(el.dataset.deadline);
    el.textContent = timeLeft(deadline, now);
    el.classList.toggle("urgent", deadline - now < 10_000);
  }
}

// The lines of a file change in a preview (`- old`, `+ new`), or null when the preview is not
// one: `file PATH` first, then only `-`, `+` and `…` lines.
function fileChange(lines) {
  if (!lines[0].startsWith("file ") || lines.length < 2) return null;
  const old = [];
  const neu = [];
  const notes = [];
  for (const l of lines.slice(1)) {
    if (l.startsWith("- ") || l === "-") old.push(l.slice(2));
    else if (l.startsWith("+ ") || l === "+") neu.push(l.slice(2));
    else if (l.startsWith("…")) notes.push(l);
    else return null;
  }
  return { path: lines[0].slice(5), old, neu, notes };
}

// Pairs the old and new lines side by side: lines both sides share (the longest common
// subsequence; previews hold at most 40 lines a side) face each other, the rest face a gap.
function pairs(old, neu) {
  const n = old.length;
  const m = neu.length;
  const lcs = Array.from({ length: n + 1 }, () => new Array(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) lcs[i][j] = old[i] === neu[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && old[i] === neu[j]) out.push([old[i++], neu[j++], "same"]);
    else if (j >= m || (i < n && lcs[i + 1][j] >= lcs[i][j + 1])) out.push([old[i++], null, "del"]);
    else out.push([null, neu[j++], "add"]);
  }
  // A removed line followed by an added one reads best on one row: a changed line.
  const rows = [];
  for (const p of out) {
    const last = rows[rows.length - 1];
    if (p[2] === "add" && last && last[2] === "del" && last[1] === null) last[1] = p[1];
    else rows.push([...p]);
  }
  return rows;
}

function cell(text, cls) {
  return h("td", { class: text === null ? "gap" : cls }, text === null ? "" : text);
}

// A preview as the page shows it: a file change as a diff (side by side when something is
// removed, else the new text), anything else as preformatted text.
export function previewView(text) {
  const lines = String(text || "").split("\n");
  const change = fileChange(lines);
  if (!change) return h("pre", { class: "preview" }, text);
  const { path, old, neu, notes } = change;
  const head = h("div", { class: "diff-file mono" }, "file ", h("strong", null, path));
  let table;
  if (old.length) {
    table = sideTable(pairs(old, neu));
  } else {
    table = h("table", { class: "diff new" }, h("tbody", null, neu.map((l) => h("tr", null, h("td", { class: "sign" }, "+"), cell(l, "add")))));
  }
  return h("div", { class: "preview diff-box" }, head, table, notes.map((n) => h("div", { class: "muted" }, n)));
}

// A side-by-side table of rows `[before, after, kind]` (`same`, or a changed, removed or added
// line with null for the side that has none).
function sideTable(rows) {
  return h(
    "table",
    { class: "diff side" },
    h("thead", null, h("tr", null, h("th", null, "before"), h("th", null, "after"))),
    h(
      "tbody",
      null,
      rows.map(([l, r, kind]) => h("tr", null, cell(l, kind === "same" ? "same" : "del"), cell(r, kind === "same" ? "same" : "add"))),
    ),
  );
}

// The rows of a line diff as bosund writes it in the lead's previews (each line `-`, `+` or
// ` ` then the text): a run of removed lines faces the run of added lines after it.
function unifiedRows(lines) {
  const rows = [];
  let del = [];
  let add = [];
  const flush = () => {
    for (let k = 0; k < Math.max(del.length, add.length); k++) rows.push([k < del.length ? del[k] : null, k < add.length ? add[k] : null, "change"]);
    del = [];
    add = [];
  };
  for (const l of lines) {
    if (l[0] === "-") del.push(l.slice(1));
    else if (l[0] === "+") add.push(l.slice(1));
    else {
      flush();
      rows.push([l.slice(1), l.slice(1), "same"]);
    }
  }
  flush();
  return rows;
}

// A pending action's preview (the lead's: a note written over, an agent's instructions
// changed): each part headed `PATH (version N):` or `instructions:` and followed by a line diff
// becomes a side-by-side table; every other line stays text.
export function leadPreviewView(text) {
  const lines = String(text || "").split("\n");
  const out = [];
  let plain = [];
  const flushPlain = () => {
    while (plain.length && plain[plain.length - 1] === "") plain.pop();
    if (plain.length) out.push(h("pre", { class: "preview-text" }, plain.join("\n")));
    plain = [];
  };
  let i = 0;
  while (i < lines.length) {
    const l = lines[i];
    if (/^(.+ \(version \d+\)|instructions):$/.test(l)) {
      let j = i + 1;
      while (j < lines.length && /^[-+ ]/.test(lines[j])) j++;
      const body = lines.slice(i + 1, j);
      if (body.some((b) => b[0] === "-" || b[0] === "+")) {
        flushPlain();
        out.push(h("div", { class: "diff-file mono" }, h("strong", null, l.slice(0, -1))), sideTable(unifiedRows(body)));
        i = j;
        continue;
      }
    }
    plain.push(l);
    i++;
  }
  flushPlain();
  return h("div", { class: "preview diff-box lead-preview" }, out);
}

// One waiting approval with its answers. `done(view)` gets the decided approval; `failed(err)`
// a refusal (already decided, out of time, the run ended), to say in plain words.
export function approvalItem(a, { done, failed, cardName, showRun = true }) {
  const message = h("input", {
    type: "text",
    class: "deny-message",
    placeholder: "a message for the agent with a denial (optional)",
    "aria-label": "message with a denial",
    size: 44,
  });
  const buttons = [];
  const button = (cls, label, title, params) => {
    const b = h("button", { class: cls, title, onclick: () => decide(params()) }, label);
    buttons.push(b);
    return b;
  };
  async function decide(params) {
    for (const b of buttons) b.disabled = true;
    try {
      done(await call("decide", { approval: a.id, ...params }));
    } catch (e) {
      for (const b of buttons) b.disabled = false;
      failed(e);
    }
  }
  const denyParams = (block) => () => {
    const text = message.value.trim();
    return text ? { allow: false, block, message: text } : { allow: false, block };
  };
  const agent = a.agent || "an agent";
  const shell = /^\$ /.test(a.preview || "");
  // The fence's proxy asks for a host as a call of bosun's own tool `Network`; --always
  // allows that host and port.
  const host = a.tool === "Network" && a.input && typeof a.input.host === "string";
  const what = shell ? "this command" : host ? `${a.input.host}:${a.input.port}` : `the tool ${a.tool}`;
  const card = a.card ? h("a", { href: "#/board", title: `card ${a.card}` }, cardName || a.card.slice(0, 8)) : null;
  return h(
    "div",
    { class: "card item approval", dataset: { approval: a.id, run: a.run } },
    h(
      "div",
      { class: "item-head" },
      h("span", { class: "mono" }, a.short_id),
      h("strong", { class: "tool" }, a.tool),
      h("span", { class: `chip class-${(a.class || "").replace(/[^a-z]+/g, "-")}` }, a.class),
      a.attended ? null : h("span", { class: "chip warn", title: "no person started this run" }, "unattended"),
      h("span", { class: "muted" }, agent),
      showRun ? h("span", { class: "muted" }, "run ", h("a", { class: "mono", href: `#/run/${encodeURIComponent(a.run)}` }, a.run.slice(0, 8))) : null,
      card ? h("span", { class: "muted" }, "card ", card) : null,
      h("span", { class: "muted", title: new Date(a.asked_at).toLocaleString() }, `asked ${ago(a.asked_at)}`),
      h("span", { class: "time-left", dataset: { deadline: a.deadline }, title: `denied at ${new Date(a.deadline).toLocaleString()} if nobody answers` }, timeLeft(a.deadline)),
    ),
    h("div", { class: "why" }, "Asks because ", a.why),
    previewView(a.preview),
    a.class === "sign-in" ? signInActions(a, button, buttons, message, denyParams, failed) :
    a.class === "elicitation" ? formActions(a, button, message, denyParams) :
    a.class === "sampling" ? h(
      "div",
      { class: "actions" },
      button("primary approve", "Allow", "let the run's CLI write this message for the server, once", () => ({ allow: true })),
      message,
      button("deny", "Deny", "refuse it; the server is told", denyParams(false)),
    ) : h(
      "div",
      { class: "actions" },
      button("primary approve", "Approve", "let this call run, once", () => ({ allow: true })),
      button("approve-always", "Approve always", `let this call run, and ${what} from now on without asking, for ${agent}`, () => ({ allow: true, always: true })),
      message,
      button("deny", "Deny", "refuse this call; the agent is told, with the message if there is one", denyParams(false)),
      button("danger block", "Block", `refuse this call, and ${what} from now on, for ${agent}`, denyParams(true)),
    ),
  );
}

// The answers to a "needs a new sign-in" item of a run: Sign in starts the sign-in to its server
// (the page opens in a window of its own, as on the server's page); once it is over, bosund lets
// the call that waited go on and the item goes by itself. Dismiss fails the call.
function signInActions(a, button, buttons, message, denyParams, failed) {
  const server = (a.input && a.input.server) || "";
  const said = h("span", { class: "muted sign-in-said" });
  const signIn = h("button", { class: "primary sign-in", title: `sign in to ${server}; the call that waits then goes on` }, "Sign in");
  buttons.push(signIn);
  signIn.onclick = async () => {
    signIn.disabled = true;
    const w = window.open("", "bosun-sign-in", "popup,width=640,height=720");
    try {
      const started = await call("mcp_sign_in", { server, new_client: false });
      if (!/^https?:\/\//i.test(started.url || "")) {
        throw new Error(`The sign-in address \`${started.url}\` is not an http(s) address; bosun does not open it.`);
      }
      if (w) {
        w.opener = null;
        w.location.href = started.url;
      }
      said.textContent = `Sign in to ${server} in the window that opened; waiting…`;
      await call("mcp_sign_in_finish", { attempt: started.attempt });
      said.textContent = `Signed in to ${server}: the call goes on.`;
    } catch (e) {
      signIn.disabled = false;
      said.textContent = "";
      failed(e);
    } finally {
      try {
        if (w && !w.closed) w.close();
      } catch {
        // Already gone.
      }
    }
  };
  return h(
    "div",
    { class: "actions" },
    signIn,
    message,
    button("deny", "Dismiss", "do not sign in now: the call that waits fails, and the agent is told", denyParams(false)),
    said,
  );
}

// A server's form (an "elicitation" item): each field as a control of its kind, filled with the
// server's suggestion. Send answers it (bosund checks the answer against the form and says what
// does not fit; nothing is sent then); Decline tells the server no.
function formActions(a, button, message, denyParams) {
  const form = (a.input && a.input.form) || { fields: [] };
  const controls = form.fields.map(fieldControl);
  const answer = () => {
    const out = {};
    for (const c of controls) {
      const v = c.value();
      if (v !== undefined) out[c.name] = v;
    }
    return { allow: true, answer: out };
  };
  return h(
    "div",
    { class: "form-answer" },
    h("div", { class: "form-fields" }, controls.map((c) => c.row)),
    h(
      "div",
      { class: "actions" },
      button("primary approve send-form", "Send", "send these answers to the server, once", answer),
      message,
      button("deny", "Decline", "send nothing; the server is told the person declined", denyParams(false)),
    ),
  );
}

// One field of a server's form: its row, and its value (undefined when left empty).
function fieldControl(f) {
  const k = f.kind || {};
  const id = `form-${f.name}`;
  const label = h("label", { for: id }, f.title || f.name, f.required ? " *" : "");
  const hint = f.description ? h("div", { class: "muted" }, f.description) : null;
  const given = f.default;
  let control;
  let value;
  if (k.type === "boolean") {
    control = h("select", { id, name: f.name }, ["", "true", "false"].map((o) => h("option", { value: o }, o === "" ? "—" : o === "true" ? "yes" : "no")));
    if (given !== undefined) control.value = String(given);
    value = () => (control.value === "" ? undefined : control.value === "true");
  } else if (k.type === "choice") {
    control = h("select", { id, name: f.name }, [h("option", { value: "" }, "—"), ...k.options.map((o) => h("option", { value: o.value }, o.title || o.value))]);
    if (given !== undefined) control.value = given;
    value = () => (control.value === "" ? undefined : control.value);
  } else if (k.type === "choices") {
    const boxes = k.options.map((o) => h("input", { type: "checkbox", value: o.value, checked: Array.isArray(given) && given.includes(o.value) }));
    control = h("span", { id, class: "choices" }, k.options.map((o, i) => h("label", null, boxes[i], ` ${o.title || o.value} `)));
    value = () => boxes.filter((b) => b.checked).map((b) => b.value);
  } else if (k.type === "number") {
    control = h("input", { id, name: f.name, type: "number", step: k.integer ? "1" : "any", min: k.min ?? null, max: k.max ?? null });
    if (given !== undefined) control.value = String(given);
    value = () => (control.value.trim() === "" ? undefined : Number(control.value));
  } else {
    const type = { email: "email", uri: "url", date: "date" }[k.format] || "text";
    const placeholder = k.format === "date-time" ? "YYYY-MM-DDTHH:MM:SSZ" : "";
    control = h("input", { id, name: f.name, type, placeholder, size: 40 });
    if (given !== undefined) control.value = given;
    value = () => (control.value === "" ? undefined : control.value);
  }
  return { name: f.name, value, row: h("div", { class: "form-field", dataset: { field: f.name } }, label, " ", control, hint) };
}

// A decided approval, one line: for the Inbox's history.
export function decidedLine(a) {
  const by = a.decided_by ? ` by ${a.decided_by}` : "";
  const first = (a.preview || "").split("\n")[0];
  return h(
    "div",
    { class: `item done st-${a.state}`, dataset: { approval: a.id } },
    h("span", { class: "mono" }, a.short_id),
    ` ${a.state}${by} · ${a.tool} · ${first}`,
    h("span", { class: "muted" }, ` · ${a.agent || ""} run `, h("a", { class: "mono", href: `#/run/${encodeURIComponent(a.run)}` }, a.run.slice(0, 8))),
    a.message ? h("div", { class: "muted" }, `told the agent: ${a.message}`) : null,
    a.form_answer ? h("div", { class: "muted" }, `answered: ${JSON.stringify(a.form_answer)}`) : null,
  );
}

// Says what the person's answer did, for the page's message line.
export function saidDone(a) {
  const by = a.decided_by && a.decided_by !== "the person" ? ` (by ${a.decided_by})` : "";
  return `${a.short_id} ${a.tool}: ${a.state}${by}`;
}
