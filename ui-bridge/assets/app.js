// The single page: a hash router over the pages, the connection indicator, and the Inbox count
// (the lead's actions and the runs' tool calls that wait: in the tab's title, with a browser
// notification when something starts waiting).

import { call, csrfValue, onSignedOut } from "./api.js";
import { connect, on } from "./bus.js";
import { clear, h } from "./dom.js";

const pages = {
  runs: () => import("./pages/runs.js"),
  run: () => import("./pages/run.js"),
  inbox: () => import("./pages/inbox.js"),
  daemon: () => import("./pages/daemon.js"),
  agents: () => import("./pages/agents.js"),
  mcp: () => import("./pages/mcp.js"),
  board: () => import("./pages/board.js"),
  card: () => import("./pages/card.js"),
  projects: () => import("./pages/projects.js"),
  chat: () => import("./pages/chat.js"),
  usage: () => import("./pages/usage.js"),
  audit: () => import("./pages/audit.js"),
};

let unmount = null;
let routeSeq = 0;

async function route() {
  const parts = (location.hash.replace(/^#\/?/, "") || "runs").split("/").map(decodeURIComponent);
  const name = pages[parts[0]] ? parts[0] : "runs";
  const mine = ++routeSeq;
  if (unmount) {
    try {
      unmount();
    } catch (e) {
      console.error(e);
    }
    unmount = null;
  }
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.dataset.page === ({ run: "runs", card: "board" }[name] || name));
  }
  const view = clear(document.getElementById("view"));
  const mod = await pages[name]();
  if (mine !== routeSeq) return;
  unmount = mod.mount(view, parts.slice(1)) || null;
}

// What waits for the person: the lead's actions (`lead:ID`) and the runs' tool calls
// (`run:ID`), each with the line a notification says.
const waiting = new Map();
const baseTitle = "bosun";
// Whether what waits was read once since the page opened.
let opened = false;

function showCount() {
  const n = waiting.size;
  document.title = n ? `(${n}) ${baseTitle}` : baseTitle;
  const badge = document.getElementById("inbox-count");
  badge.textContent = String(n);
  badge.hidden = n === 0;
}

const actionLine = (a) => a.line;
const approvalLine = (a) => `${a.agent || "a run"} asks to use ${a.tool}: ${(a.preview || "").split("\n")[0]}`;

async function loadWaiting() {
  try {
    const [inbox, runs] = await Promise.all([call("inbox", {}), call("approvals", {})]);
    waiting.clear();
    for (const a of inbox.actions) if (a.state === "waiting") waiting.set(`lead:${a.id}`, actionLine(a));
    for (const a of runs.approvals) if (a.state === "waiting") waiting.set(`run:${a.id}`, approvalLine(a));
    showCount();
    // Opened with no page named while something waits: the Inbox first.
    if (!opened && !location.hash && waiting.size) location.hash = "#/inbox";
    opened = true;
  } catch {
    // The connection indicator says what is wrong.
  }
}

function notify(key, body, title = "bosun: waiting for your OK", hash = "#/inbox") {
  if (!("Notification" in window) || Notification.permission !== "granted" || document.hasFocus()) return;
  try {
    const n = new Notification(title, { body, tag: key });
    n.onclick = () => {
      window.focus();
      location.hash = hash;
    };
  } catch {
    // Some browsers only notify from a service worker; the title still shows the count.
  }
}

// Counts an item in or out as it starts waiting or is decided; a new one is notified.
function track(key, isWaiting, line) {
  if (isWaiting) {
    if (!waiting.has(key)) notify(key, line);
    waiting.set(key, line);
  } else {
    waiting.delete(key);
  }
  showCount();
}

function banner(text) {
  const b = document.getElementById("banner");
  clear(b);
  b.hidden = !text;
  if (text) b.append(text);
}

function start() {
  onSignedOut(() =>
    banner("This browser is signed out of bosun's web UI (it may have restarted). Run `bosun ui` again and open the address it prints."),
  );
  const conn = document.getElementById("conn");
  on("hello", () => {
    conn.textContent = "● connected";
    conn.className = "conn ok";
    loadWaiting();
  });
  on("daemon", (d) => {
    conn.textContent = "● reconnecting";
    conn.className = "conn bad";
    conn.title = d.message || "";
  });
  on("pending", (a) => track(`lead:${a.id}`, a.state === "waiting", actionLine(a)));
  on("approval", (a) => track(`run:${a.id}`, a.state === "waiting", approvalLine(a)));
  const noteTitle = { merged: "bosun: the lead merged", needs_you: "bosun: a merge needs you", sign_in: "bosun: sign in again" };
  on("notification", (n) =>
    notify(
      `note:${n.kind}:${n.card || n.chat || n.at}`,
      n.text,
      noteTitle[n.kind] || "bosun",
      n.card ? `#/card/${n.card}` : n.kind === "sign_in" ? "#/mcp" : "#/inbox",
    ),
  );
  connect();
  // Asked for now, while the page's module loads, rather than by the page's first request.
  csrfValue().catch(() => {});
  window.addEventListener("hashchange", route);
  route();
}

start();

export { h };
