// Building the page. Everything that comes from a run or the daemon goes in as text nodes:
// no innerHTML anywhere in the web UI.

// An optional part left out (`cond ? h(…) : null`) is skipped by `append`, as `h` skips it:
// the DOM's own `append` writes it as the text "null". Every page builds on this module, so
// this holds for each of them.
for (const proto of [Element.prototype, DocumentFragment.prototype]) {
  const append = proto.append;
  proto.append = function (...nodes) {
    return append.apply(this, nodes.filter((n) => n != null && n !== false));
  };
}

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = !!v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export function ago(ms) {
  if (!ms) return "";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

export function duration(ms) {
  if (ms == null) return "";
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

export function when(ms) {
  return ms ? new Date(ms).toLocaleString() : "";
}

// A one-line message under the page's title: an error in red, else a note.
export function flash(el, text, isError) {
  clear(el);
  if (text) el.append(h("div", { class: isError ? "flash error" : "flash" }, text));
}
