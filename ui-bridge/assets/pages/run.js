// One run: its log live and tail-first (the last chunks read first, then followed from the seq
// after them), the agent's events, stop.

import { call, getJSON } from "../api.js";
import { on } from "../bus.js";
import { clear, duration, flash, h, when } from "../dom.js";
import { LogView } from "../logview.js";
import { exitText, stateCell, title } from "./runs.js";

const TAIL_CHUNKS = 2000;

export function mount(root, [id]) {
  let run = null;
  let next = 1; // the seq after the last chunk shown
  let first = 1; // the first seq read
  let source = null;
  let gone = false;
  const log = new LogView();
  const msg = h("div");
  const head = h("div", { class: "run-head" });
  const info = h("div", { class: "run-info" });
  const agentBox = h("div", { class: "agent-box" });
  const status = h("span", { class: "muted", id: "log-status" });
  const search = h("input", { type: "search", placeholder: "search the log", title: "Enter: next match, Shift+Enter: the one before", id: "log-search" });
  const followBtn = h("button", { class: "small", id: "jump-end", onclick: () => log.jumpToEnd() }, "Jump to end");
  const earlier = h("button", { class: "small", hidden: true, onclick: () => loadEarlier() }, "Load earlier output");
  const download = h("a", { class: "button small", href: `/api/runs/${encodeURIComponent(id)}/log.txt`, download: "" }, "Download");
  log.onfollow = (f) => followBtn.classList.toggle("on", f);

  root.append(
    head,
    msg,
    info,
    agentBox,
    h("div", { class: "log-bar" }, earlier, search, followBtn, download, status),
    log.scroll,
  );

  // For the browser tests: the lines as shown (escape sequences removed).
  window.__bosunLog = { count: () => log.count, lines: () => log.plainLines(), done: () => gone };

  let lastMatch = -1;
  search.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || !search.value) return;
    const i = log.find(search.value, lastMatch < 0 ? -1 : lastMatch, e.shiftKey);
    if (i < 0) {
      status.textContent = "not found";
      return;
    }
    lastMatch = i;
    status.textContent = `line ${i + 1}`;
    log.scrollToLine(i);
  });

  function drawHead() {
    if (!run) return;
    clear(head);
    const live = run.state !== "exited";
    head.append(h("h1", null, h("span", { class: "mono" }, run.short_id), " ", title(run)), stateCell(run));
    if (live && run.state !== "stopping") head.append(h("button", { class: "danger", id: "stop-run", onclick: stop }, "Stop"));
    clear(info);
    const took = run.started_at ? (run.ended_at || Date.now()) - run.started_at : null;
    const rows = [
      ["Program", [run.program, ...run.args].join(" ")],
      ["Folder", run.cwd],
      ["Started", when(run.started_at || run.created_at)],
      ["Took", duration(took)],
      ["Exit", exitText(run)],
      ["Paused", run.paused],
      ["Process", run.pid ? `pid ${run.pid}, group ${run.pgid}` : ""],
    ];
    info.append(h("table", { class: "kv" }, rows.filter(([, v]) => v).map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))));
    drawAgent();
  }

  function drawAgent() {
    clear(agentBox);
    const a = run && run.agent;
    if (!a) return;
    agentBox.append(h("h2", null, "Agent ", h("a", { href: `#/agents/${encodeURIComponent(a.agent_name)}` }, a.agent_name), ` (${a.cli})`));
    if (a.model) agentBox.append(h("div", { class: "muted" }, `model ${a.model}`));
    if (a.servers && a.servers.length)
      agentBox.append(h("div", null, h("strong", null, "Servers: "), a.servers.map(([n, s]) => h("span", { class: `chip ${s === "connected" ? "ok" : "warn"}` }, `${n}: ${s}`))));
    if (a.calls && a.calls.length)
      agentBox.append(
        h("div", null, h("strong", null, "Tool calls: "), a.calls.map((c) => h("span", { class: `chip ${c.ok ? "ok" : "bad"}`, title: c.error || "" }, c.name))),
      );
    if (a.result) agentBox.append(h("div", { class: a.result.is_error ? "flash error" : "flash" }, a.result.is_error ? `The CLI says it failed: ${a.result.reason || ""}` : "The CLI says it finished.", a.result.text ? h("pre", { class: "result" }, a.result.text) : null));
  }

  async function stop(e) {
    e.target.disabled = true;
    try {
      run = await call("stop_run", { run: run.id });
      drawHead();
    } catch (err) {
      flash(msg, err.message, true);
      e.target.disabled = false;
    }
  }

  function add(c) {
    if (c.seq < next) return;
    next = c.seq + 1;
    log.append(c.stream, c.text);
  }

  function follow() {
    if (gone) return;
    source = new EventSource(`/api/runs/${encodeURIComponent(run.id)}/log?from=${next}`);
    status.textContent = "live";
    source.onmessage = (e) => add(JSON.parse(e.data));
    source.addEventListener("lagged", () => (status.textContent = "catching up from the store"));
    source.addEventListener("reconnecting", (e) => (status.textContent = JSON.parse(e.data).message));
    source.addEventListener("resumed", (e) => (status.textContent = JSON.parse(e.data).message));
    source.addEventListener("end", (e) => {
      const d = JSON.parse(e.data);
      source.close();
      gone = true;
      run = d.run;
      status.textContent = `ended: ${log.count} lines`;
      drawHead();
    });
    source.addEventListener("failed", (e) => {
      source.close();
      gone = true;
      flash(msg, JSON.parse(e.data).message, true);
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        gone = true;
        status.textContent = "the stream was refused; reload the page";
      } else status.textContent = "connection lost; retrying";
    };
  }

  function chunkLines(chunks) {
    const out = [];
    for (const c of chunks) {
      const k = c.stream === "stderr" ? 1 : c.stream === "note" ? 2 : 0;
      const parts = c.text.split("\n");
      if (parts[parts.length - 1] === "") parts.pop();
      for (const t of parts) out.push({ t, k });
    }
    return out;
  }

  async function loadEarlier() {
    const from = Math.max(1, first - TAIL_CHUNKS);
    try {
      const url = `/api/runs/${encodeURIComponent(run.id)}/chunks?from=${from}&limit=${first - from}&keep=tail`;
      const before = (await getJSON(url)).filter((c) => c.seq < first);
      if (before.length) {
        log.prepend(chunkLines(before));
        first = before[0].seq;
      } else first = 1;
      earlier.hidden = first <= 1;
    } catch (e) {
      flash(msg, e.message, true);
    }
  }

  async function start() {
    try {
      run = await call("get_run", { run: id });
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    drawHead();
    if (run.last_seq > 0) {
      first = Math.max(1, run.last_seq - TAIL_CHUNKS + 1);
      try {
        const chunks = await getJSON(`/api/runs/${encodeURIComponent(run.id)}/chunks?from=${first}&limit=${TAIL_CHUNKS}&keep=tail`);
        if (chunks.length) first = chunks[0].seq;
        next = first;
        for (const c of chunks) add(c);
      } catch (e) {
        flash(msg, e.message, true);
      }
    }
    earlier.hidden = first <= 1;
    follow();
  }

  const off = on("run", (v) => {
    if (run && v.id === run.id) {
      run = v;
      drawHead();
    }
  });
  start();
  return () => {
    off();
    if (source) source.close();
    gone = true;
    delete window.__bosunLog;
  };
}
