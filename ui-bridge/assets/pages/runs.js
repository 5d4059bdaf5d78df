// Runs: the live list (list_runs, then run events), filters, stop; a run of a card links to
// the card (its title read from the board, once the list is shown).
//
// Only the rows on screen are in the DOM (rows have one fixed height, their cells one line):
// laying out a table of a thousand rows costs a slow machine a few hundred milliseconds, and
// every new run would cost it again. The header is a table of its own with the same column
// widths, so it stays in place while the rows scroll.

import { dollars } from "./usage.js";
import { call } from "../api.js";
import { on } from "../bus.js";
import { onWaiting, waitingWords, waits } from "../waiting.js";
import { ago, clear, duration, flash, h } from "../dom.js";

const LIVE = new Set(["queued", "starting", "running", "stopping"]);
const ROW_H = 30; // px, the same as #runs-body tr's height in style.css
const OVERSCAN = 8; // rows drawn beyond each edge of the view
const COLUMNS = [
  ["Run", "7rem"],
  ["What", null],
  ["Agent", "9rem"],
  ["Card", "11rem"],
  ["State", "8rem"],
  ["Started", "7rem"],
  ["Took", "5.5rem"],
  ["Cost", "6rem"],
  ["Exit", "16rem"],
  ["", "5rem"],
];

// A run's cost as `bosun ps` shows it: as the CLI reported it, `~` before one bosun worked out,
// `?` for a coding CLI's run whose cost is not known; nothing for a plain program's run.
export function costText(r) {
  const u = r.agent && r.agent.usage;
  const c = u && u.cost;
  if (c) return (c.source.kind === "computed" ? "~" : "") + dollars(c.micro_usd);
  return r.agent && r.agent.cli && r.agent.cli !== "command" ? "?" : "";
}

export function exitText(r) {
  if (r.state !== "exited") return r.stop_reason ? `stopping: ${r.stop_reason}` : "";
  const e = r.exit || {};
  const how = e.code != null ? `exit ${e.code}` : e.signal != null ? `signal ${e.signal}` : "";
  return [r.outcome, how, e.reason].filter(Boolean).join(" · ");
}

export function stateCell(r) {
  // A run whose calls wait in the inbox is waiting for the person, not just running.
  const asks = r.state === "running" ? waits("run", r.id) : 0;
  if (asks) return h("a", { class: "state st-waiting", href: "#/inbox" }, waitingWords(asks));
  const label = r.state === "exited" ? r.outcome || "exited" : r.state;
  return h("span", { class: `state st-${label}` }, label, r.paused ? h("span", { class: "paused", title: r.paused }, " paused") : null);
}

// Of a run's view already shown and one that came after it, the one to show: a run that has
// ended never shows as live again. The answers to a stop and a read, and the run's events, come
// on connections of their own, so a stop's answer ("stopping") can come after the event of the
// run's end; it then must not put the run back as stopping, with nothing left to correct it.
export function later(shown, v) {
  return shown && shown.id === v.id && shown.state === "exited" && v.state !== "exited" ? shown : v;
}

// What a run is: an agent's run by its task, any other by its name or command line.
export function title(r) {
  const task = r.agent && r.agent.task ? r.agent.task.split("\n").find((l) => l.trim()) : "";
  if (task) return task.length > 120 ? `${task.slice(0, 120)}…` : task;
  return r.name || [r.program, ...(r.args || [])].join(" ");
}

// The column widths, set through the style object (the page's CSP allows no style attribute).
function cols() {
  return h(
    "colgroup",
    null,
    COLUMNS.map(([, w]) => {
      const col = h("col");
      if (w) col.style.width = w;
      return col;
    }),
  );
}

export function mount(root) {
  const runs = new Map();
  const cards = new Map(); // card id → {short_id, title}
  let shown = [];
  let loaded = false;
  const msg = h("div");
  const stateSel = h(
    "select",
    { "aria-label": "state", onchange: () => filter() },
    h("option", { value: "all" }, "all"),
    h("option", { value: "live" }, "live"),
    h("option", { value: "succeeded" }, "succeeded"),
    h("option", { value: "failed" }, "failed / timed out / lost"),
    h("option", { value: "stopped" }, "stopped"),
  );
  const text = h("input", { type: "search", placeholder: "filter: id, name, agent, program", oninput: () => filter() });
  const count = h("span", { class: "muted", id: "runs-count" });
  const body = h("tbody", { id: "runs-body" });
  const table = h("table", { class: "list runs-table", id: "runs" }, cols(), body);
  const spacer = h("div", { class: "runs-spacer" }, table);
  const scroller = h("div", { class: "runs-scroll", id: "runs-scroll" }, spacer);
  const header = h("div", { class: "runs-head" }, h("table", { class: "list runs-table" }, cols(), h("thead", null, h("tr", null, COLUMNS.map(([c]) => h("th", null, c))))));
  root.append(h("div", { class: "page-head" }, h("h1", null, "Runs"), h("div", { class: "filters" }, stateSel, text, count)), msg, header, scroller);

  function matches(r) {
    const f = stateSel.value;
    if (f === "live" && !LIVE.has(r.state)) return false;
    if (f === "succeeded" && r.outcome !== "succeeded") return false;
    if (f === "failed" && !["failed", "timed_out", "lost"].includes(r.outcome)) return false;
    if (f === "stopped" && r.outcome !== "stopped") return false;
    const q = text.value.trim().toLowerCase();
    if (!q) return true;
    const agent = r.agent ? r.agent.agent_name : "";
    const card = r.agent && r.agent.card ? cards.get(r.agent.card) : null;
    return [r.id, r.name, r.program, agent, card && card.title, card && card.short_id, ...(r.args || [])].some((x) => x && String(x).toLowerCase().includes(q));
  }

  async function stop(r, button) {
    button.disabled = true;
    try {
      take(await call("stop_run", { run: r.id }));
      filter();
    } catch (e) {
      flash(msg, e.message, true);
      button.disabled = false;
    }
  }

  function row(r) {
    const took = r.started_at ? (r.ended_at || Date.now()) - r.started_at : null;
    const what = title(r);
    const exit = exitText(r);
    const stopBtn = LIVE.has(r.state) && r.state !== "stopping" ? h("button", { class: "small danger", onclick: (e) => stop(r, e.target) }, "Stop") : null;
    return h(
      "tr",
      { dataset: { run: r.id, state: r.state } },
      h("td", null, h("a", { href: `#/run/${r.id}`, class: "mono" }, r.short_id)),
      h("td", { class: "what", title: what }, what),
      h("td", null, r.agent ? r.agent.agent_name : ""),
      h("td", { class: "card-cell" }, cardLink(r)),
      h("td", null, stateCell(r)),
      h("td", { title: new Date(r.created_at).toLocaleString() }, ago(r.started_at || r.created_at)),
      h("td", null, duration(took)),
      h("td", { class: "num cost" }, costText(r)),
      h("td", { class: "exit", title: exit }, exit),
      h("td", null, stopBtn),
    );
  }

  function cardLink(r) {
    const id = r.agent && r.agent.card;
    if (!id) return null;
    const c = cards.get(id);
    const label = c ? `${c.short_id} ${c.title}` : id.slice(0, 8);
    return h("a", { href: `#/card/${id}`, title: label, dataset: { card: id } }, label);
  }

  // The cards' titles for the Card column: read after the runs, so the list never waits for it.
  let cardsLoading = false;
  async function loadCards() {
    if (cardsLoading) return;
    cardsLoading = true;
    try {
      const b = await call("board");
      cards.clear();
      for (const c of b.cards) cards.set(c.id, { short_id: c.short_id, title: c.title });
      filter();
    } catch {
      // The column then shows the card's id.
    }
    cardsLoading = false;
  }

  // Draws the rows in view (and a few beyond) of the filtered list, in the next frame; filters
  // and sorts again (newest first) first when something changed.
  let scheduled = false;
  let dirty = true;
  function draw() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      if (dirty) {
        dirty = false;
        shown = [...runs.values()].filter(matches).sort((a, b) => b.created_at - a.created_at);
        count.textContent = `${shown.length} of ${runs.size}`;
      }
      const view = scroller.clientHeight || 600;
      const first = Math.max(0, Math.floor(scroller.scrollTop / ROW_H) - OVERSCAN);
      const last = Math.min(shown.length, Math.ceil((scroller.scrollTop + view) / ROW_H) + OVERSCAN);
      spacer.style.height = `${Math.max(1, shown.length) * ROW_H}px`;
      table.style.transform = `translateY(${first * ROW_H}px)`;
      clear(body);
      const frag = document.createDocumentFragment();
      for (let i = first; i < last; i++) frag.append(row(shown[i]));
      body.append(frag);
      if (!shown.length)
        body.append(
          h(
            "tr",
            null,
            h("td", { colspan: COLUMNS.length, class: "muted" }, !loaded ? "Connecting to bosund…" : runs.size ? "No run matches the filter." : "No runs yet. Start one with `bosun run -- …` or from an agent."),
          ),
        );
      // For the benchmark: how many runs the list holds, once it is read.
      if (loaded) scroller.dataset.shown = String(shown.length);
    });
  }

  function filter() {
    dirty = true;
    draw();
  }

  // A list answers as runs were when bosund read them; an event that came while it was on its
  // way is newer (a run stopped in the meantime must not show as running again), and a list
  // asked after it (the stream subscribed again) replaces it.
  let loading = 0;
  let touched = new Set();

  // A view of one run that came after the list was asked for: an event, or a stop's answer.
  function take(v) {
    runs.set(v.id, later(runs.get(v.id), v));
    touched.add(v.id);
  }

  // Every run, page by page: one answer of bosund holds about a megabyte of runs.
  async function listAll() {
    const all = [];
    let page = {};
    for (;;) {
      const r = await call("list_runs", { all: true, page });
      for (const v of r.runs) all.push(v);
      if (!r.next) return { runs: all };
      page = { after: r.next };
    }
  }

  async function load() {
    const mine = ++loading;
    touched = new Set();
    try {
      const r = await listAll();
      if (mine !== loading) return;
      const newer = new Map([...touched].filter((id) => runs.has(id)).map((id) => [id, runs.get(id)]));
      const before = new Map(runs);
      runs.clear();
      for (const v of r.runs) runs.set(v.id, newer.get(v.id) || later(before.get(v.id), v));
      for (const [id, v] of newer) runs.set(id, v);
      loaded = true;
      flash(msg, "");
      filter();
      if (r.runs.some((v) => v.agent && v.agent.card)) loadCards();
    } catch (e) {
      flash(msg, e.message, true);
    }
  }

  scroller.addEventListener("scroll", draw);
  const resize = new ResizeObserver(draw);
  resize.observe(scroller);
  // Read at once, and again each time the stream is (again) subscribed: what changed before
  // the subscription was not streamed.
  const offs = [
    on("run", (v) => {
      take(v);
      if (v.agent && v.agent.card && !cards.has(v.agent.card)) loadCards();
      filter();
    }),
    on("hello", load),
    onWaiting(filter),
  ];
  const tick = setInterval(draw, 10_000);
  load();
  return () => {
    offs.forEach((f) => f());
    resize.disconnect();
    clearInterval(tick);
  };
}
