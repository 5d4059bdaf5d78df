// A run's log on screen: every line kept as a string, only the visible rows in the DOM. A
// million lines cost a million strings, not a million elements.
//
// The lines are kept in blocks (`Lines`), so that adding at the end, putting earlier output in
// front (read after the tail) and letting the oldest go each cost about the size of what
// changes, never a copy of the whole log. The page keeps at most MAX_LINES lines and MAX_CHARS
// characters: past either, the oldest are let go (the download has them all). That budget is
// what bounds the page's memory; the DOM holds a screenful of rows whatever the log's size.

import { render, plain } from "./ansi.js";
import { h } from "./dom.js";

const LINE_H = 18; // px, the same as .log-row's height in style.css
export const MAX_LINES = 2_000_000;
export const MAX_CHARS = 200_000_000;
const MAX_SHOWN = 4000; // characters of one line shown; the rest is said, not drawn
const MAX_PX = 10_000_000; // past this the scroll height is scaled (browsers cap element height)
const BLOCK = 16384; // lines in a block that grows at the end
const STREAMS = { stdout: 0, stderr: 1, note: 2 };

// The lines: blocks of {t: text[], k: kind[], chars}, and where each block starts.
class Lines {
  constructor() {
    this.blocks = [];
    this.starts = [];
    this.n = 0;
    this.chars = 0;
    this.cached = 0; // the block the last lookup found
  }

  reindex() {
    let at = 0;
    this.starts = this.blocks.map((b) => {
      const s = at;
      at += b.t.length;
      return s;
    });
    this.cached = 0;
  }

  block(i) {
    const c = this.cached;
    if (c < this.blocks.length && i >= this.starts[c] && i < this.starts[c] + this.blocks[c].t.length) return c;
    let lo = 0;
    let hi = this.blocks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= i) lo = mid;
      else hi = mid - 1;
    }
    this.cached = lo;
    return lo;
  }

  text(i) {
    const b = this.block(i);
    return this.blocks[b].t[i - this.starts[b]];
  }

  kind(i) {
    const b = this.block(i);
    return this.blocks[b].k[i - this.starts[b]];
  }

  push(t, k) {
    let last = this.blocks[this.blocks.length - 1];
    if (!last || last.t.length >= BLOCK) {
      last = { t: [], k: [], chars: 0 };
      this.starts.push(this.n);
      this.blocks.push(last);
    }
    last.t.push(t);
    last.k.push(k);
    last.chars += t.length;
    this.chars += t.length;
    this.n++;
  }

  // Adds to the last line (an unfinished line that goes on in the next chunk).
  extendLast(more) {
    const last = this.blocks[this.blocks.length - 1];
    last.t[last.t.length - 1] += more;
    last.chars += more.length;
    this.chars += more.length;
  }

  unshift(texts, kinds) {
    if (!texts.length) return;
    const chars = texts.reduce((s, t) => s + t.length, 0);
    this.blocks.unshift({ t: texts, k: kinds, chars });
    this.n += texts.length;
    this.chars += chars;
    this.reindex();
  }

  // Lets go of whole blocks at the front until at most `lines` lines and `chars` characters
  // are left (the last block always stays); returns how many lines went.
  trim(lines, chars) {
    let gone = 0;
    while (this.blocks.length > 1 && (this.n > lines || this.chars > chars)) {
      const b = this.blocks.shift();
      this.n -= b.t.length;
      this.chars -= b.chars;
      gone += b.t.length;
    }
    if (gone) this.reindex();
    return gone;
  }

  *all() {
    for (const b of this.blocks) yield* b.t;
  }
}

export class LogView {
  constructor() {
    this.lines = new Lines();
    this.dropped = 0; // lines let go at the front, over the budget
    this.open = false; // the last line's chunk did not end with a newline
    this.openKind = -1;
    this.follow = true;
    this.top = 0; // the first line on screen, when not following (fractional)
    this.mark = -1;
    this.scroll = h("div", { class: "log-scroll", tabindex: "0" });
    this.spacer = h("div", { class: "log-spacer" });
    this.rows = h("div", { class: "log-rows" });
    this.spacer.append(this.rows);
    this.scroll.append(this.spacer);
    this.pool = [];
    this.pending = false;
    this.expected = null; // where the page itself last put the scroll position
    this.scroll.addEventListener("scroll", () => {
      // The page's own moves are not the person scrolling.
      const moved = this.expected === null || Math.abs(this.scroll.scrollTop - this.expected) >= 1;
      this.expected = null;
      if (!moved) return;
      this.follow = this.atEnd();
      this.top = this.lineAt(this.scroll.scrollTop);
      this.schedule();
      if (this.onfollow) this.onfollow(this.follow);
    });
    new ResizeObserver(() => this.schedule()).observe(this.scroll);
  }

  get count() {
    return this.lines.n;
  }

  // Whether `lines` more lines of `chars` characters fit in the budget without letting any go.
  room(lines, chars) {
    return this.lines.n + lines <= MAX_LINES && this.lines.chars + chars <= MAX_CHARS;
  }

  // Adds a chunk's text: its lines, continuing an unfinished last line of the same stream.
  append(stream, text) {
    const k = STREAMS[stream] ?? 0;
    const parts = text.split("\n");
    const ended = parts[parts.length - 1] === "";
    if (ended) parts.pop();
    let i = 0;
    if (this.open && this.openKind === k && this.lines.n && parts.length) {
      this.lines.extendLast(parts[0]);
      i = 1;
    }
    for (; i < parts.length; i++) this.lines.push(parts[i], k);
    this.open = !ended;
    this.openKind = k;
    if (this.lines.n > MAX_LINES || this.lines.chars > MAX_CHARS) {
      // Let a tenth more go than needed, so this does not happen on every chunk.
      const gone = this.lines.trim(MAX_LINES - MAX_LINES / 10, MAX_CHARS - MAX_CHARS / 10);
      this.dropped += gone;
      this.top = Math.max(0, this.top - gone);
      if (this.mark >= 0) this.mark -= gone;
    }
    this.schedule();
  }

  // Puts earlier lines ({t, k} each, read after the tail) before the ones shown; the view
  // stays on the lines it shows.
  prepend(lines) {
    this.lines.unshift(
      lines.map((l) => l.t),
      lines.map((l) => l.k),
    );
    if (!this.follow) {
      this.top += lines.length;
      this.placeScroll();
    }
    if (this.mark >= 0) this.mark += lines.length;
    this.schedule();
  }

  // The scroll geometry: the spacer's height, and how far the view can scroll.
  geometry() {
    const n = this.lines.n;
    const total = n * LINE_H;
    const height = Math.min(total, MAX_PX);
    const view = this.scroll.clientHeight || 400;
    const maxTop = Math.max(0, height - view);
    const maxLine = Math.max(0, n - view / LINE_H);
    return { n, total, height, view, maxTop, maxLine, scaled: total > MAX_PX };
  }

  // The line at the top of the view for a scroll position, and the other way round.
  lineAt(scrollTop) {
    const g = this.geometry();
    if (!g.scaled) return scrollTop / LINE_H;
    return g.maxTop > 0 ? (scrollTop / g.maxTop) * g.maxLine : 0;
  }

  scrollFor(line) {
    const g = this.geometry();
    if (!g.scaled) return line * LINE_H;
    return g.maxLine > 0 ? (line / g.maxLine) * g.maxTop : 0;
  }

  // Puts the scroll position where the top line is (the geometry changes as lines come).
  placeScroll() {
    const g = this.geometry();
    this.spacer.style.height = `${g.height}px`;
    this.setScroll(this.follow ? g.maxTop : this.scrollFor(Math.min(this.top, g.maxLine)));
  }

  setScroll(want) {
    if (Math.abs(this.scroll.scrollTop - want) < 1) return;
    this.scroll.scrollTop = want;
    this.expected = this.scroll.scrollTop;
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
    this.top = Math.max(0, i - this.geometry().view / LINE_H / 2);
    this.placeScroll();
    this.schedule();
  }

  // The first line at or after `from` (wrapping around) whose text contains `q`; -1 if none.
  find(q, from, backwards) {
    const needle = q.toLowerCase();
    const n = this.lines.n;
    for (let step = 1; step <= n; step++) {
      const i = (((from + (backwards ? -step : step)) % n) + n) % n;
      const t = this.lines.text(i);
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
    const g = this.geometry();
    if (this.follow) this.top = g.maxLine;
    this.placeScroll();
    const top = Math.min(this.top, g.maxLine);
    const first = Math.max(0, Math.floor(top));
    // Rows sit where the scroll position puts the top line, less the part of it scrolled past.
    const offset = this.scroll.scrollTop - (top - first) * LINE_H;
    const count = Math.ceil(g.view / LINE_H) + 1;
    this.rows.style.transform = `translateY(${Math.max(0, g.scaled ? offset : first * LINE_H)}px)`;
    while (this.pool.length < count) {
      const row = h("div", { class: "log-row" });
      this.pool.push(row);
      this.rows.append(row);
    }
    for (let r = 0; r < this.pool.length; r++) {
      const row = this.pool[r];
      const i = first + r;
      if (r >= count || i >= g.n) {
        row.hidden = true;
        row.dataset.key = "";
        continue;
      }
      row.hidden = false;
      let t = this.lines.text(i);
      const kind = this.lines.kind(i);
      const key = `${i + this.dropped}:${t.length}:${i === this.mark}`;
      if (row.dataset.key === key) continue;
      row.dataset.key = key;
      row.className = `log-row s${kind}${i === this.mark ? " mark" : ""}`;
      if (t.endsWith("\r")) t = t.slice(0, -1);
      if (kind === 2) t = `bosun: ${t}`;
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
    return Array.from(this.lines.all(), (t) => plain(t));
  }

  // For the benchmark: every line as kept (escape sequences and all), without a copy.
  rawLines() {
    return this.lines.all();
  }
}
