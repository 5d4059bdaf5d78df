// Runs: the live list (list_runs, then run events), filters, stop.

import { call } from "../api.js";
import { on } from "../bus.js";
import { ago, clear, duration, flash, h } from "../dom.js";

const LIVE = new Set(["queued", "starting", "running", "stopping"]);

export function exitText(r) {
  if (r.state !== "exited") return r.stop_reason ? `stopping: ${r.stop_reason}` : "";
  const e = r.exit || {};
  const how = e.code != null ? `exit ${e.code}` : e.signal != null ? `signal ${e.signal}` : "";
  return [r.outcome, how, e.reason].filter(Boolean).join(" · ");
}

export function stateCell(r) {
  const label = r.state === "exited" ? r.outcome || "exited" : r.state;
  return h("span", { class: `state st-${label}` }, label, r.paused ? h("span", { class: "paused", title: r.paused }, " paused") : null);
}

export function title(r) {
  return r.name || [r.program, ...(r.args || [])].join(" ");
}

export function mount(root) {
  const runs = new Map();
  const msg = h("div");
  const stateSel = h(
    "select",
    { "aria-label": "state", onchange: () => draw() },
    h("option", { value: "all" }, "all"),
    h("option", { value: "live" }, "live"),
    h("option", { value: "succeeded" }, "succeeded"),
    h("option", { value: "failed" }, "failed / timed out / lost"),
    h("option", { value: "stopped" }, "stopped"),
  );
  const text = h("input", { type: "search", placeholder: "filter: id, name, agent, program", oninput: () => draw() });
  const count = h("span", { class: "muted" });
  const body = h("tbody");
  root.append(
    h("div", { class: "page-head" }, h("h1", null, "Runs"), h("div", { class: "filters" }, stateSel, text, count)),
    msg,
    h(
      "table",
      { class: "list", id: "runs" },
      h("thead", null, h("tr", null, ["Run", "What", "Agent", "State", "Started", "Took", "Exit", ""].map((c) => h("th", null, c)))),
      body,
    ),
  );

  function matches(r) {
    const f = stateSel.value;
    if (f === "live" && !LIVE.has(r.state)) return false;
    if (f === "succeeded" && r.outcome !== "succeeded") return false;
    if (f === "failed" && !["failed", "timed_out", "lost"].includes(r.outcome)) return false;
    if (f === "stopped" && r.outcome !== "stopped") return false;
    const q = text.value.trim().toLowerCase();
    if (!q) return true;
    const agent = r.agent ? r.agent.agent_name : "";
    return [r.id, r.name, r.program, agent, ...(r.args || [])].some((x) => x && String(x).toLowerCase().includes(q));
  }

  async function stop(r, button) {
    button.disabled = true;
    try {
      const v = await call("stop_run", { run: r.id });
      runs.set(v.id, v);
      draw();
    } catch (e) {
      flash(msg, e.message, true);
      button.disabled = false;
    }
  }

  let scheduled = false;
  function draw() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      const shown = [...runs.values()].filter(matches).sort((a, b) => b.created_at - a.created_at);
      count.textContent = `${shown.length} of ${runs.size}`;
      clear(body);
      const frag = document.createDocumentFragment();
      for (const r of shown) {
        const took = r.started_at ? (r.ended_at || Date.now()) - r.started_at : null;
        const stopBtn = LIVE.has(r.state) && r.state !== "stopping" ? h("button", { class: "small danger", onclick: (e) => stop(r, e.target) }, "Stop") : null;
        frag.append(
          h(
            "tr",
            { dataset: { run: r.id, state: r.state } },
            h("td", null, h("a", { href: `#/run/${r.id}`, class: "mono" }, r.short_id)),
            h("td", { class: "what" }, title(r)),
            h("td", null, r.agent ? r.agent.agent_name : ""),
            h("td", null, stateCell(r)),
            h("td", { title: new Date(r.created_at).toLocaleString() }, ago(r.started_at || r.created_at)),
            h("td", null, duration(took)),
            h("td", { class: "exit" }, exitText(r)),
            h("td", null, stopBtn),
          ),
        );
      }
      body.append(frag);
      if (!shown.length) body.append(h("tr", null, h("td", { colspan: 8, class: "muted" }, runs.size ? "No run matches the filter." : "No runs yet. Start one with `bosun run -- …` or from an agent.")));
    });
  }

  async function load() {
    try {
      const r = await call("list_runs", { all: true });
      runs.clear();
      for (const v of r.runs) runs.set(v.id, v);
      flash(msg, "");
      draw();
    } catch (e) {
      flash(msg, e.message, true);
    }
  }

  const offs = [on("run", (v) => (runs.set(v.id, v), draw())), on("hello", load)];
  const tick = setInterval(draw, 10_000);
  load();
  return () => {
    offs.forEach((f) => f());
    clearInterval(tick);
  };
}
