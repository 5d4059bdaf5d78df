// Usage: what the runs of coding CLIs used and cost — a chart of the cost per day, and a table
// summed by agent, card, project or model (the same sums as `bosun usage`).

import { call } from "../api.js";
import { on } from "../bus.js";
import { clear, flash, h } from "../dom.js";

const SVG = "http://www.w3.org/2000/svg";
const DAY = 86_400_000;

export function dollars(micro) {
  const usd = micro / 1e6;
  return micro < 1_000_000 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

// One bar per day of the window (days with nothing show as empty), the cost on top of each; the
// height is the cost, or the tokens when nothing has a known cost.
function chart(days, since) {
  const byDay = new Map(days.map((d) => [d.key, d]));
  const first = since ? new Date(since) : days.length ? new Date(`${days[0].key}T00:00:00Z`) : new Date();
  const keys = [];
  for (let t = Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), first.getUTCDate()); t <= Date.now(); t += DAY) {
    keys.push(new Date(t).toISOString().slice(0, 10));
  }
  const tokens = (d) => d.input + d.output + d.cache_read + d.cache_write;
  const useCost = days.some((d) => d.micro_usd > 0);
  const value = (d) => (d ? (useCost ? d.micro_usd : tokens(d)) : 0);
  const max = Math.max(1, ...keys.map((k) => value(byDay.get(k))));
  const W = 28, GAP = 6, H = 140, TOP = 18, BOTTOM = 30;
  const width = Math.max(1, keys.length) * (W + GAP) + GAP;
  const root = svg("svg", { id: "usage-chart", viewBox: `0 0 ${width} ${H + TOP + BOTTOM}`, width, height: H + TOP + BOTTOM, role: "img", "aria-label": useCost ? "cost per day" : "tokens per day" });
  keys.forEach((k, i) => {
    const d = byDay.get(k);
    const v = value(d);
    const bh = Math.round((v / max) * H);
    const x = GAP + i * (W + GAP);
    const bar = svg("rect", { class: "usage-bar", x, y: TOP + H - bh, width: W, height: Math.max(bh, d ? 1 : 0), "data-day": k, "data-value": v });
    bar.append(svg("title", null, `${k}: ${d ? `${d.runs} runs, ${dollars(d.micro_usd)}, ${tokens(d)} tokens` : "no runs"}`));
    root.append(bar);
    if (d) root.append(svg("text", { x: x + W / 2, y: TOP + H - bh - 4, "text-anchor": "middle", class: "usage-label" }, useCost ? dollars(d.micro_usd) : String(tokens(d))));
    root.append(svg("text", { x: x + W / 2, y: TOP + H + 14, "text-anchor": "middle", class: "usage-day" }, k.slice(5)));
  });
  return root;
}

export function mount(root) {
  const msg = h("div");
  const by = h(
    "select",
    { "aria-label": "sum by", id: "usage-by", onchange: () => load() },
    ["agent", "card", "project", "model"].map((k) => h("option", { value: k }, `by ${k}`)),
  );
  const since = h(
    "select",
    { "aria-label": "since", id: "usage-since", onchange: () => load() },
    h("option", { value: String(7 * DAY) }, "last 7 days"),
    h("option", { value: String(30 * DAY) }, "last 30 days"),
    h("option", { value: String(DAY) }, "today and yesterday"),
    h("option", { value: "" }, "all"),
  );
  const figure = h("div", { class: "usage-chart" });
  const table = h("table", { class: "list", id: "usage-table" });
  root.append(h("div", { class: "page-head" }, h("h1", null, "Usage"), h("div", { class: "filters" }, by, since)), msg, figure, table);

  let seq = 0;
  async function load() {
    const mine = ++seq;
    const window = since.value ? Number(since.value) : undefined;
    const params = (k) => (window ? { by: k, since_ms: window } : { by: k });
    try {
      const [days, rows] = await Promise.all([call("usage", params("day")), call("usage", params(by.value))]);
      if (mine !== seq) return;
      clear(figure).append(days.rows.length ? chart(days.rows, days.since) : h("p", { class: "muted" }, "No runs of coding CLIs in this window."));
      clear(table).append(
        h("thead", null, h("tr", null, [by.value[0].toUpperCase() + by.value.slice(1), "Runs", "Input", "Output", "Cache read", "Cache write", "Tool calls", "Cost"].map((c) => h("th", null, c)))),
        h("tbody", null, [...rows.rows, rows.total].map((r) =>
          h(
            "tr",
            { dataset: { key: r.key }, class: r === rows.total ? "total" : null },
            h("td", null, r.key),
            [r.runs, r.input, r.output, r.cache_read, r.cache_write, r.tool_calls].map((n) => h("td", { class: "num" }, String(n))),
            h("td", { class: "num", title: r.unpriced ? "runs whose cost is not known are not in this sum" : "" }, dollars(r.micro_usd) + (r.unpriced ? ` (+${r.unpriced} unknown)` : "")),
          ),
        )),
      );
      flash(msg, "");
    } catch (e) {
      flash(msg, e.message, true);
    }
  }
  load();
  const offRun = on("run", (r) => {
    if (r.state === "exited") load();
  });
  return () => offRun();
}
