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
