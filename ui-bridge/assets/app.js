// The single page: a hash router over the pages, the connection indicator, and the Inbox count
// (in the tab's title, with a browser notification when something starts waiting).

import { call, onSignedOut } from "./api.js";
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
  chat: () => import("./pages/chat.js"),
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
    a.classList.toggle("active", a.dataset.page === (name === "run" ? "runs" : name));
  }
  const view = clear(document.getElementById("view"));
  const mod = await pages[name]();
  if (mine !== routeSeq) return;
  unmount = mod.mount(view, parts.slice(1)) || null;
}

// What waits for the person, by action id.
const waiting = new Map();
const baseTitle = "bosun";

function showCount() {
  const n = waiting.size;
  document.title = n ? `(${n}) ${baseTitle}` : baseTitle;
  const badge = document.getElementById("inbox-count");
  badge.textContent = String(n);
  badge.hidden = n === 0;
}

async function loadWaiting() {
  try {
    const r = await call("inbox", {});
    waiting.clear();
    for (const a of r.actions) if (a.state === "waiting") waiting.set(a.id, a);
    showCount();
  } catch {
    // The connection indicator says what is wrong.
  }
}

function notify(action) {
  if (!("Notification" in window) || Notification.permission !== "granted" || document.hasFocus()) return;
  try {
    const n = new Notification("bosun: waiting for your OK", { body: action.line, tag: action.id });
    n.onclick = () => {
      window.focus();
      location.hash = "#/inbox";
    };
  } catch {
    // Some browsers only notify from a service worker; the title still shows the count.
  }
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
  on("pending", (a) => {
    if (a.state === "waiting") {
      if (!waiting.has(a.id)) notify(a);
      waiting.set(a.id, a);
    } else {
      waiting.delete(a.id);
    }
    showCount();
  });
  connect();
  window.addEventListener("hashchange", route);
  route();
}

start();

export { h };
