// Audit: bosund's record of who changed what agents may do and who answered what (the same as
// `bosun audit`), newest first, each change with how it stood before and after; Verify checks
// that no entry was edited or taken out since it was written (`bosun audit verify`).

import { call } from "../api.js";
import { clear, flash, h, when } from "../dom.js";

const DAY = 86_400_000;

function json(v) {
  return h("pre", { class: "audit-json" }, JSON.stringify(v, null, 2));
}

export function mount(root) {
  const msg = h("div");
  const check = h("div", { id: "audit-check" });
  const since = h(
    "select",
    { "aria-label": "since", id: "audit-since", onchange: () => load() },
    h("option", { value: String(7 * DAY) }, "last 7 days"),
    h("option", { value: String(30 * DAY) }, "last 30 days"),
    h("option", { value: "" }, "all kept"),
  );
  const verify = h("button", { id: "audit-verify", onclick: () => runCheck() }, "Verify");
  const table = h("table", { class: "list", id: "audit-table" });
  root.append(
    h("div", { class: "page-head" }, h("h1", null, "Audit"), h("div", { class: "filters" }, since, verify)),
    msg,
    check,
    table,
  );

  async function runCheck() {
    try {
      const view = await call("audit", { since_ms: 0, verify: true });
      const c = view.check || {};
      clear(check).append(
        c.state === "intact"
          ? h("p", { class: "ok" }, `The record is intact: ${c.entries} entries, each as it was written.`)
          : h("p", { class: "error" }, `The record was changed after it was written: line ${c.line}: ${c.why}`),
      );
    } catch (e) {
      flash(msg, e.message, true);
    }
  }

  async function load() {
    const params = since.value ? { since_ms: Number(since.value) } : {};
    try {
      const view = await call("audit", params);
      const rows = [...view.entries].reverse();
      clear(table).append(
        h("thead", null, h("tr", null, ["#", "When", "Who", "What", ""].map((c) => h("th", null, c)))),
        h(
          "tbody",
          null,
          rows.length
            ? rows.map((e) =>
                h(
                  "tr",
                  { dataset: { n: String(e.n) } },
                  h("td", { class: "num" }, String(e.n)),
                  h("td", null, when(e.at)),
                  h("td", null, e.who),
                  h("td", { class: "wrap" }, e.what),
                  h(
                    "td",
                    null,
                    e.before || e.after
                      ? h(
                          "details",
                          null,
                          h("summary", null, "before / after"),
                          e.before ? [h("div", { class: "muted" }, "before"), json(e.before)] : [],
                          e.after ? [h("div", { class: "muted" }, "after"), json(e.after)] : [],
                        )
                      : "",
                  ),
                ),
              )
            : h("tr", null, h("td", { colspan: "5", class: "muted" }, "Nothing on record in this window.")),
        ),
      );
      flash(msg, "");
    } catch (e) {
      flash(msg, e.message, true);
    }
  }
  load();
}
