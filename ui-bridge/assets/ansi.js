// Terminal output as text: SGR colours become spans (built with textContent), every other
// escape sequence is dropped, and other control characters are shown as visible symbols, so
// output can neither inject markup nor hide what it says.

const ESC = 0x1b;

// Splits one line into segments [{text, cls, fg, bg}], `state` carried between segments.
export function segments(line) {
  const out = [];
  let st = { bold: false, dim: false, italic: false, under: false, inverse: false, fg: null, bg: null };
  let buf = "";
  const flush = () => {
    if (buf) out.push({ text: buf, st: { ...st } });
    buf = "";
  };
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === ESC) {
      const next = line[i + 1];
      if (next === "[") {
        let j = i + 2;
        while (j < line.length && !(line.charCodeAt(j) >= 0x40 && line.charCodeAt(j) <= 0x7e)) j++;
        if (line[j] === "m") {
          flush();
          st = sgr(st, line.slice(i + 2, j));
        }
        i = j;
      } else if (next === "]" || next === "P" || next === "_" || next === "^") {
        // OSC and other strings (titles, hyperlinks): dropped up to BEL or ESC \.
        let j = i + 2;
        while (j < line.length && line.charCodeAt(j) !== 7 && !(line.charCodeAt(j) === ESC && line[j + 1] === "\\")) j++;
        i = line.charCodeAt(j) === 7 ? j : j + 1;
      } else {
        i += 1;
      }
    } else if (c === 9) {
      buf += "\t";
    } else if (c < 0x20) {
      buf += String.fromCharCode(0x2400 + c);
    } else if (c === 0x7f) {
      buf += "\u2421";
    } else {
      buf += line[i];
    }
  }
  flush();
  return out;
}

// Without the escape sequences: for search and for tests.
export function plain(line) {
  return segments(line).map((s) => s.text).join("");
}

function sgr(st, params) {
  const p = params === "" ? [0] : params.split(/[;:]/).map((x) => (x === "" ? 0 : Number(x)));
  const s = { ...st };
  for (let i = 0; i < p.length; i++) {
    const n = p[i];
    if (n === 0) Object.assign(s, { bold: false, dim: false, italic: false, under: false, inverse: false, fg: null, bg: null });
    else if (n === 1) s.bold = true;
    else if (n === 2) s.dim = true;
    else if (n === 3) s.italic = true;
    else if (n === 4) s.under = true;
    else if (n === 7) s.inverse = true;
    else if (n === 22) s.bold = s.dim = false;
    else if (n === 23) s.italic = false;
    else if (n === 24) s.under = false;
    else if (n === 27) s.inverse = false;
    else if (n >= 30 && n <= 37) s.fg = n - 30;
    else if (n >= 90 && n <= 97) s.fg = n - 90 + 8;
    else if (n === 39) s.fg = null;
    else if (n >= 40 && n <= 47) s.bg = n - 40;
    else if (n >= 100 && n <= 107) s.bg = n - 100 + 8;
    else if (n === 49) s.bg = null;
    else if (n === 38 || n === 48) {
      let colour = null;
      if (p[i + 1] === 5) {
        colour = p[i + 2];
        i += 2;
      } else if (p[i + 1] === 2) {
        const [r, g, b] = [p[i + 2], p[i + 3], p[i + 4]].map((x) => Math.max(0, Math.min(255, x | 0)));
        colour = `rgb(${r},${g},${b})`;
        i += 4;
      }
      if (n === 38) s.fg = colour;
      else s.bg = colour;
    }
  }
  return s;
}

function colour(c) {
  if (typeof c === "string") return c;
  if (c < 16) return null;
  if (c < 232) {
    const v = [0, 95, 135, 175, 215, 255];
    const k = c - 16;
    return `rgb(${v[Math.floor(k / 36)]},${v[Math.floor(k / 6) % 6]},${v[k % 6]})`;
  }
  const g = 8 + (c - 232) * 10;
  return `rgb(${g},${g},${g})`;
}

// Fills `el` with the line's segments as spans.
export function render(el, line) {
  while (el.firstChild) el.firstChild.remove();
  for (const { text, st } of segments(line)) {
    const plainText = !st.bold && !st.dim && !st.italic && !st.under && !st.inverse && st.fg == null && st.bg == null;
    if (plainText) {
      el.append(document.createTextNode(text));
      continue;
    }
    const span = document.createElement("span");
    span.textContent = text;
    let [fg, bg] = st.inverse ? [st.bg, st.fg] : [st.fg, st.bg];
    if (st.inverse && fg == null) fg = "inv";
    const cls = [];
    if (st.bold) cls.push("b");
    if (st.dim) cls.push("dim");
    if (st.italic) cls.push("i");
    if (st.under) cls.push("u");
    if (fg === "inv") cls.push("inv");
    else if (typeof fg === "number" && fg < 16) cls.push(`f${fg}`);
    else if (fg != null) span.style.color = colour(fg);
    if (typeof bg === "number" && bg < 16) cls.push(`g${bg}`);
    else if (bg != null) span.style.backgroundColor = colour(bg);
    span.className = cls.join(" ");
    el.append(span);
  }
}
