// One run: its log live and tail-first (the last chunks read first and shown, then followed from
// the seq after them, while the earlier output is read in the background), the agent's events,
// its tool calls waiting for the person (with the Inbox's answers) and what bosun decided about
// each call, stop.

import { call, getJSON } from "../api.js";
import { approvalItem, saidDone, tick } from "../approval.js";
import { on } from "../bus.js";
import { ago, clear, duration, flash, h, when } from "../dom.js";
import { LogView, MAX_CHARS, MAX_LINES } from "../logview.js";
import { exitText, later, stateCell, title } from "./runs.js";

// The first read: the log's last chunks (at most 64 × 64 KiB), enough for the last screen and
// quick to read whatever the log's size.
const TAIL_CHUNKS = 64;
// Each read of earlier output after that: about this many bytes, so no read holds the page up
// for long.
const SLICE_BYTES = 4 << 20;

export function mount(root, [id]) {
  let run = null;
  let next = 1; // the seq after the last chunk shown
  let first = 1; // the first seq read
  let source = null;
  let gone = false; // the log stream is over (the run ended, or the page closed)
  let earlierDone = false; // everything before the tail is read (or left out, over the budget)
  let closed = false;
  let chunkBytes = 0; // the mean size of a chunk read so far
  let chunksRead = 0;
  const log = new LogView();
  const msg = h("div");
  const head = h("div", { class: "run-head" });
  const info = h("div", { class: "run-info" });
  const agentBox = h("div", { class: "agent-box" });
  const asking = h("div", { id: "run-approvals" });
  const decisionsBox = h("div", { id: "run-decisions" });
  const mcpBox = h("div", { id: "run-mcp-calls" });
  let mcpCalls = null; // the run's MCP calls through bosun's gateway, from `get_run` only
  const waitingHere = new Map(); // this run's approvals that wait, by id
  const status = h("span", { class: "muted", id: "log-status" });
  const search = h("input", { type: "search", placeholder: "search the log", title: "Enter: next match, Shift+Enter: the one before", id: "log-search" });
  const followBtn = h("button", { class: "small", id: "jump-end", onclick: () => log.jumpToEnd() }, "Jump to end");
  const loading = h("span", { class: "muted", id: "log-loading" });
  const download = h("a", { class: "button small", href: `/api/runs/${encodeURIComponent(id)}/log.txt`, download: "" }, "Download");
  log.onfollow = (f) => followBtn.classList.toggle("on", f);

  root.append(
    head,
    msg,
    info,
    agentBox,
    asking,
    decisionsBox,
    mcpBox,
    h("div", { class: "log-bar" }, search, followBtn, download, status, loading),
    log.scroll,
  );

  // For the browser tests and the benchmark: the lines as shown (escape sequences removed), the
  // lines as kept, and whether the whole log is in the page.
  window.__bosunLog = { count: () => log.count, lines: () => log.plainLines(), raw: () => log.rawLines(), view: log, done: () => gone && earlierDone };

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
      ["Task", run.agent && run.agent.task ? h("div", { class: "task" }, run.agent.task) : ""],
      ["Program", [run.program, ...run.args].join(" ")],
      ["Folder", run.cwd],
      ["Started", when(run.started_at || run.created_at)],
      // A run still going has been going for so long; it has not taken it yet.
      [run.ended_at ? "Took" : "Running for", duration(took)],
      ["Exit", exitText(run)],
      ["Paused", run.paused],
      ["Process", run.pid ? `pid ${run.pid}, group ${run.pgid}` : ""],
      ["Log", run.log_pruned ? `pruned ${when(run.log_pruned.at)}` : ""],
    ];
    info.append(h("table", { class: "kv" }, rows.filter(([, v]) => v).map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))));
    drawAgent();
  }

  // A tool call: ok, failed (with why), running, or — in a run that is over — what happened
  // to it instead of a result.
  function callChip(c) {
    if (c.ok === true) return h("span", { class: "chip ok" }, c.name);
    if (c.ok === false) return h("span", { class: "chip bad", title: c.error || "failed" }, c.name);
    if (c.unanswered) return h("span", { class: "chip warn", title: `no result: ${c.unanswered}` }, `${c.name} (no result)`);
    return h("span", { class: "chip", title: "running" }, c.name);
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
        h("div", { id: "tool-calls" }, h("strong", null, "Tool calls: "), a.calls.map(callChip)),
      );
    if (a.result) agentBox.append(h("div", { class: a.result.is_error ? "flash error" : "flash" }, a.result.is_error ? `The CLI says it failed: ${a.result.reason || ""}` : "The CLI says it finished.", a.result.text ? h("pre", { class: "result" }, a.result.text) : null));
    drawDecisions(a.decisions || [], a.decisions_not_shown || 0, a.decisions_pruned || 0);
  }

  // What bosun decided about each tool call: by its policy (the rule), or the person, the
  // deadline, the run's end. A long run's view holds its latest decisions only (the earlier
  // ones counted), and a finished run's may have been pruned after bosund's retention period.
  function drawDecisions(ds, notShown, pruned) {
    clear(decisionsBox);
    if (!ds.length && !pruned) return;
    decisionsBox.append(
      h("h2", null, `Decisions (${ds.length + notShown + pruned})`),
      notShown ? h("div", { class: "muted", id: "decisions-not-shown" }, `${notShown} earlier not shown; the latest ${ds.length} follow`) : null,
      pruned ? h("div", { class: "muted", id: "decisions-pruned" }, `${pruned} pruned after bosund's retention period; the run's summary is kept`) : null,
    );
    if (!ds.length) return;
    decisionsBox.append(
      h(
        "table",
        { class: "list decisions", id: "decisions" },
        h("thead", null, h("tr", null, ["Tool", "What", "Decision", "By", "Approval", "Message", "When"].map((c) => h("th", null, c)))),
        h(
          "tbody",
          null,
          ds.map((d) =>
            h(
              "tr",
              { dataset: { decision: d.decision } },
              h("td", { class: "mono" }, d.tool),
              h("td", { class: "what mono", title: d.summary }, d.summary),
              h("td", null, h("span", { class: `state ${d.decision === "allowed" ? "st-succeeded" : "st-failed"}` }, d.decision)),
              h("td", null, d.by),
              h("td", { class: "mono" }, d.approval ? d.approval.slice(0, 8) : ""),
              h("td", null, d.message || ""),
              h("td", { title: when(d.at) }, ago(d.at)),
            ),
          ),
        ),
      ),
    );
  }

  // Who let an MCP call through, or refused it, and where bosun was asked (absent from a record
  // an older bosun kept).
  function decisionWords(d) {
    if (!d) return "";
    const asked = { cli: "asked by the CLI before the call", gateway: "asked at the gateway", rules: "the server's rules in bosun" }[d.asked] || d.asked;
    return `${d.verdict} by ${d.by} (${asked})`;
  }

  // Each MCP call the run made through bosun's gateway: what it was, how it ended, how long it
  // took, how big its result was and whether the model got all of it.
  function drawMcpCalls() {
    clear(mcpBox);
    const m = mcpCalls;
    if (!m || !m.calls.length) return;
    const size = (c) => (c.chars == null ? "" : c.model_got != null ? `${c.chars} (model got ${c.model_got})` : String(c.chars));
    mcpBox.append(
      h("h2", null, `MCP calls (${m.total})`),
      m.total > m.calls.length ? h("div", { class: "muted" }, `The last ${m.calls.length}; the log has every one.`) : null,
      h(
        "table",
        { class: "list mcp-calls", id: "mcp-calls" },
        h("thead", null, h("tr", null, ["Server", "Tool", "Arguments", "Decision", "Outcome", "Took", "Characters", "When"].map((c) => h("th", null, c)))),
        h(
          "tbody",
          null,
          m.calls.map((c) =>
            h(
              "tr",
              { dataset: { outcome: c.outcome.kind, tool: c.tool, verdict: c.decision ? c.decision.verdict : "" } },
              h("td", null, c.server),
              h("td", { class: "mono" }, c.tool),
              h("td", { class: "what mono", title: c.args }, c.args),
              h("td", { class: "decision" }, decisionWords(c.decision)),
              h("td", null, h("span", { class: `state ${c.outcome.kind === "answered" ? "st-succeeded" : "st-failed"}` }, c.outcome.kind.replace(/_/g, " ")), " ", c.outcome.reason || c.outcome.message || c.outcome.how || ""),
              h("td", null, c.ms == null ? "" : `${c.ms} ms`),
              h("td", null, size(c)),
              h("td", { title: when(c.at) }, ago(c.at)),
            ),
          ),
        ),
      ),
    );
  }

  // A `get_run` answer: the run, and its MCP calls (which only that answer carries).
  function takeRun(v) {
    run = later(run, v);
    if (v.mcp_calls !== undefined || !mcpCalls) mcpCalls = v.mcp_calls || null;
    drawMcpCalls();
  }

  // This run's tool calls that wait for the person, answered here as in the Inbox.
  function drawAsking() {
    clear(asking);
    if (!waitingHere.size) return;
    asking.append(h("h2", null, "Waiting for your OK"));
    for (const a of waitingHere.values())
      asking.append(
        approvalItem(a, {
          done: (v) => {
            flash(msg, saidDone(v));
            takeApproval(v);
          },
          failed: (e) => {
            flash(msg, `Not done: ${e.message}`, true);
            loadApprovals();
          },
          showRun: false,
        }),
      );
  }

  function takeApproval(a) {
    if (!run || a.run !== run.id) return;
    const had = waitingHere.has(a.id);
    if (a.state === "waiting") {
      if (had) return;
      waitingHere.set(a.id, a);
    } else {
      if (!had) return refreshSoon();
      waitingHere.delete(a.id);
    }
    drawAsking();
    refreshSoon();
  }

  async function loadApprovals() {
    try {
      const list = (await call("approvals", { run: run.id })).approvals;
      waitingHere.clear();
      for (const a of list) if (a.state === "waiting") waitingHere.set(a.id, a);
      drawAsking();
    } catch {
      // The run's record still shows its decisions.
    }
  }

  // The decisions are in the run's record: read it again shortly after one was made.
  let refreshing = null;
  function refreshSoon() {
    if (refreshing) return;
    refreshing = setTimeout(async () => {
      refreshing = null;
      try {
        const v = await call("get_run", { run: run.id });
        takeRun(v);
        drawHead();
      } catch {
        // Shown again on the next change.
      }
    }, 250);
  }

  async function stop(e) {
    e.target.disabled = true;
    try {
      const v = await call("stop_run", { run: run.id });
      run = later(run, v); // `run` as it is once the answer came, not as it was when asked
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
    // bosun's line for an MCP call: the table of calls is read again.
    if (c.stream === "note" && /^mcp /.test(c.text) && run && run.state !== "exited") refreshSoon();
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
      refreshSoon(); // the last MCP calls
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

  // The lines of some consecutive chunks; a line a chunk left unfinished goes on in the next
  // chunk of the same stream.
  function chunkLines(chunks) {
    const out = [];
    let open = -1;
    for (const c of chunks) {
      const k = c.stream === "stderr" ? 1 : c.stream === "note" ? 2 : 0;
      const parts = c.text.split("\n");
      const ended = parts[parts.length - 1] === "";
      if (ended) parts.pop();
      let i = 0;
      if (open === k && out.length && parts.length) out[out.length - 1].t += parts[i++];
      for (; i < parts.length; i++) out.push({ t: parts[i], k });
      open = ended ? -1 : k;
    }
    return out;
  }

  function counted(chunks) {
    for (const c of chunks) chunkBytes += (c.text.length - chunkBytes) / ++chunksRead;
  }

  // Reads the output before the tail, a slice at a time, newest first, until the start of the
  // log, or until the page's budget is full (then says so: the download has it all).
  async function loadEarlier() {
    const total = first - 1;
    while (first > 1 && !closed && log.dropped === 0) {
      const limit = Math.max(16, Math.min(5000, Math.round(SLICE_BYTES / Math.max(chunkBytes, 1))));
      const from = Math.max(1, first - limit);
      loading.textContent = `reading earlier output: ${Math.round((100 * (total - first + 1)) / total)}%`;
      let before;
      try {
        const url = `/api/runs/${encodeURIComponent(run.id)}/chunks?from=${from}&limit=${first - from}&keep=tail`;
        before = (await getJSON(url)).filter((c) => c.seq < first);
      } catch (e) {
        flash(msg, `Could not read the log's earlier output: ${e.message}`, true);
        break;
      }
      if (closed) break;
      counted(before);
      const lines = chunkLines(before);
      const chars = lines.reduce((n, l) => n + l.t.length, 0);
      if (!log.room(lines.length, chars)) {
        flash(
          msg,
          `The first ${first - 1} chunks of this log are not shown: the page keeps at most ${MAX_LINES.toLocaleString()} lines and ${(MAX_CHARS / 1e6).toFixed(0)} million characters. Download the log for all of it.`,
          true,
        );
        break;
      }
      log.prepend(lines);
      first = before.length ? before[0].seq : from;
      // Let the page draw and take input between slices.
      await new Promise((r) => setTimeout(r, 0));
    }
    loading.textContent = "";
    earlierDone = true;
  }

  async function start() {
    try {
      run = await call("get_run", { run: id });
      takeRun(run);
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    drawHead();
    if (run.agent) loadApprovals();
    // A finished run whose log bosund pruned: said in place of the log, which is not read.
    if (run.log_pruned) {
      const p = run.log_pruned;
      const why = p.why === "size" ? "the finished runs' logs took more than bosund's logs.max, and this run's were among the oldest" : "the run ended longer ago than bosund's retention";
      log.scroll.before(h("div", { class: "muted", id: "log-pruned" }, `The log and MCP call records of this run were pruned ${when(p.at)} (${why}). Its summary is kept above.`));
      log.scroll.hidden = true;
      download.remove();
      gone = true;
      earlierDone = true;
      return;
    }
    if (run.last_seq > 0) {
      first = Math.max(1, run.last_seq - TAIL_CHUNKS + 1);
      try {
        const chunks = await getJSON(`/api/runs/${encodeURIComponent(run.id)}/chunks?from=${first}&limit=${TAIL_CHUNKS}&keep=tail`);
        if (chunks.length) first = chunks[0].seq;
        next = first;
        counted(chunks);
        for (const c of chunks) add(c);
      } catch (e) {
        flash(msg, e.message, true);
      }
    }
    follow();
    loadEarlier();
  }

  const offs = [
    on("run", (v) => {
      if (run && v.id === run.id) {
        run = later(run, v);
        drawHead();
      }
    }),
    on("approval", takeApproval),
  ];
  const timer = setInterval(() => tick(asking), 1000);
  start();
  return () => {
    closed = true;
    offs.forEach((f) => f());
    clearInterval(timer);
    if (refreshing) clearTimeout(refreshing);
    if (source) source.close();
    gone = true;
    delete window.__bosunLog;
  };
}
