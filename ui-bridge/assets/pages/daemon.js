// Daemon: bosund's status.

import { call, getJSON } from "../api.js";
import { on } from "../bus.js";
import { clear, duration, flash, h, when } from "../dom.js";

export function mount(root) {
  const msg = h("div");
  const table = h("table", { class: "kv" });
  root.append(h("div", { class: "page-head" }, h("h1", null, "Daemon")), msg, table);
  async function load() {
    try {
      const s = await call("daemon_status");
      const me = await getJSON("/api/session");
      clear(table);
      const rows = [
        ["bosund", `version ${s.version}, pid ${s.pid}, protocol ${s.protocol_version}`],
        ["State directory", s.state_dir],
        ["Up", `${duration(Date.now() - s.started_at)} (since ${when(s.started_at)})`],
        ["Live runs", String(s.live_runs)],
        ["Connected runners", String(s.attached_runners)],
        ["Shutting down", s.shutting_down ? "yes" : "no"],
        ["Storage", s.storage_fault || "fine"],
        ["Web UI", `bosun ${me.version}, up since ${when(me.started_at)}`],
      ];
      if (s.upgrade) rows.push(["Upgrade", s.upgrade]);
      if (s.notify) rows.push(["Desktop notifications", notifyCell(s.notify)]);
      // What bosund keeps (`bosun daemon set retention=… logs.max=…`), and how its store fares.
      if (s.retention_ms != null) {
        rows.push(["Retention", `${span(s.retention_ms)}: decided approvals and finished runs' decisions, logs and MCP call records`]);
        rows.push(["Logs at most", s.logs_max != null ? mib(s.logs_max) : "no bound (logs.max=off)"]);
      }
      if (s.last_prune) {
        const p = s.last_prune;
        rows.push(["Last pruned", `${when(p.ended_at)}: ${p.approvals} approvals, the decisions of ${p.runs} runs, the logs of ${p.logs || 0} (${mib(p.log_bytes || 0)})`]);
      }
      if (s.store_bytes != null) rows.push(["Store", mib(s.store_bytes)]);
      if (s.last_compact) rows.push(["Last compacted", `${when(s.last_compact.ended_at)}: ${mib(s.last_compact.before)} → ${mib(s.last_compact.after)}`]);
      for (const [k, v] of rows) table.append(h("tr", null, h("th", null, k), h("td", null, v)));
      flash(msg, "");
    } catch (e) {
      flash(msg, e.message, true);
    }
  }
  // On or off (the same switch as `bosun daemon set notify=on|off`), how many were shown, and
  // why the last could not be.
  function notifyCell(n) {
    const words = n.on
      ? `on, ${n.shown} shown since bosund started` + (n.problem ? `; the last could not be: ${n.problem}` : "")
      : "off";
    const turn = h("button", { type: "button", class: "small" }, n.on ? "Turn off" : "Turn on");
    turn.addEventListener("click", async () => {
      turn.disabled = true;
      try {
        await call("daemon_set", { settings: [`notify=${n.on ? "off" : "on"}`] });
        await load();
      } catch (e) {
        flash(msg, e.message, true);
        turn.disabled = false;
      }
    });
    return h("span", null, words, " ", turn);
  }
  load();
  const t = setInterval(load, 5000);
  const off = on("hello", load);
  return () => {
    clearInterval(t);
    off();
  };
}

function mib(bytes) {
  return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}

// A retention as it is set: whole days as days (`30d`), else as a duration.
function span(ms) {
  return ms % 86400000 === 0 ? `${ms / 86400000}d` : duration(ms);
}
