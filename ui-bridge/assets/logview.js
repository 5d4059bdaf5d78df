// A run's log on screen: every line kept as a string in an array, only the visible rows in the
// DOM. A million lines cost a million strings, not a million elements. Past MAX_LINES the
// oldest lines are let go (the download has them all).

import { render, plain } from "./ansi.js";
import { h } from "./dom.js";

const LINE_H = 18; // px, the same as .log-row's height in style.css
const MAX_LINES = 2_000_000;
const MAX_SHOWN = 4000; // characters of one line shown; the rest is said, not drawn
const MAX_PX = 10_000_000; // past this the scroll height is scaled (browsers cap element height)
const STREAMS = { stdout: 0, stderr: 1, note: 2 };

export class LogView {
  constructor() {
    this.text = [];
    this.kind = [];
    this.dropped = 0;
    this.openLine = -1; // the last line, while its chunk did not end with a newline
    this.openKind = -1;
    this.follow = true;
    this.mark = -1;
    this.scroll = h("div", { class: "log-scroll", tabindex: "0" });
    this.spacer = h("div", { class: "log-spacer" });
    this.rows = h("div", { class: "log-rows" });
    this.spacer.append(this.rows);
    this.scroll.append(this.spacer);
    this.pool = [];
    this.pending = false;
    this.scroll.addEventListener("scroll", () => {
      this.follow = this.atEnd();
      this.schedule();
      if (this.onfollow) this.onfollow(this.follow);
    });
    new ResizeObserver(() => this.schedule()).observe(this.scroll);
  }

  get count() {
    return this.text.length;
  }

  // Adds a chunk's text: its lines, continuing an unfinished last line of the same stream.
  append(stream, text) {
    const k = STREAMS[stream] ?? 0;
    const parts = text.split("\n");
    const ended = parts[parts.length - 1] === "";
    if (ended) parts.pop();
    let i = 0;
    if (this.openLine >= 0 && this.openKind === k && this.openLine === this.text.length - 1 && parts.length) {
      this.text[this.openLine] += parts[0];
      i = 1;
    }
    for (; i < parts.length; i++) {
      this.text.push(parts[i]);
      this.kind.push(k);
    }
    this.openLine = ended ? -1 : this.text.length - 1;
    this.openKind = k;
    if (this.text.length > MAX_LINES) {
      const cut = this.text.length - MAX_LINES + Math.floor(MAX_LINES / 10);
      this.text.splice(0, cut);
      this.kind.splice(0, cut);
      this.dropped += cut;
      this.openLine = ended ? -1 : this.text.length - 1;
    }
    this.schedule();
  }

  // Puts earlier lines (read later, with "load earlier") before the ones shown.
  prepend(lines) {
    const kinds = lines.map((l) => l.k);
    const texts = lines.map((l) => l.t);
    const keepAt = this.scroll.scrollTop;
    this.text = texts.concat(this.text);
    this.kind = kinds.concat(this.kind);
    if (this.openLine >= 0) this.openLine += texts.length;
    if (!this.follow) this.scroll.scrollTop = keepAt + texts.length * LINE_H;
    this.schedule();
  }

  atEnd() {
    const s = this.scroll;
    return s.scrollTop + s.clientHeight >= s.scrollHeight - LINE_H;
  }

  jumpToEnd() {
    this.follow = true;
    this.schedule();
  }

  scrollToLine(i) {
    this.follow = false;
    this.mark = i;
    const total = this.text.length * LINE_H;
    const view = this.scroll.clientHeight;
    const y = Math.max(0, i * LINE_H - view / 2);
    this.scroll.scrollTop = total > MAX_PX ? (y / (total - view)) * (MAX_PX - view) : y;
    this.schedule();
  }

  // The first line at or after `from` (wrapping around) whose text contains `q`; -1 if none.
  find(q, from, backwards) {
    const needle = q.toLowerCase();
    const n = this.text.length;
    for (let step = 1; step <= n; step++) {
      const i = (((from + (backwards ? -step : step)) % n) + n) % n;
      const t = this.text[i];
      if (t.toLowerCase().includes(needle) && plain(t).toLowerCase().includes(needle)) return i;
    }
    return -1;
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.draw();
    });
  }

  draw() {
    const n = this.text.length;
    const total = n * LINE_H;
    const height = Math.min(total, MAX_PX);
    this.spacer.style.height = `${height}px`;
    const s = this.scroll;
    const view = s.clientHeight || 400;
    if (this.follow) s.scrollTop = height;
    const top = s.scrollTop;
    let first;
    let offset;
    if (total <= MAX_PX) {
      first = Math.floor(top / LINE_H);
      offset = first * LINE_H;
    } else {
      const frac = height - view > 0 ? top / (height - view) : 0;
      first = Math.floor(frac * Math.max(0, n - Math.floor(view / LINE_H)));
      offset = top;
    }
    const count = Math.ceil(view / LINE_H) + 1;
    this.rows.style.transform = `translateY(${offset}px)`;
    while (this.pool.length < count) {
      const row = h("div", { class: "log-row" });
      this.pool.push(row);
      this.rows.append(row);
    }
    for (let r = 0; r < this.pool.length; r++) {
      const row = this.pool[r];
      const i = first + r;
      if (r >= count || i >= n) {
        row.hidden = true;
        row.dataset.i = "";
        continue;
      }
      row.hidden = false;
      const key = `${i + this.dropped}:${this.text[i].length}:${i === this.mark}`;
      if (row.dataset.key === key) continue;
      row.dataset.key = key;
      row.className = `log-row s${this.kind[i]}${i === this.mark ? " mark" : ""}`;
      let t = this.text[i];
      if (t.endsWith("\r")) t = t.slice(0, -1);
      if (this.kind[i] === 2) t = `bosun: ${t}`;
      if (t.length > MAX_SHOWN) {
        render(row, t.slice(0, MAX_SHOWN));
        row.append(h("span", { class: "more" }, ` … ${t.length - MAX_SHOWN} more characters (download the log for all)`));
      } else {
        render(row, t);
      }
    }
  }

  // For tests and the page: the lines as text, without escape sequences.
  plainLines() {
    return this.text.map((t) => plain(t));
  }
}
