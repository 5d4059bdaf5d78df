// The one stream of changes (`/api/events`), shared by every page: `run`, `pending` (the
// lead's actions), `approval` (runs' tool calls waiting or decided), `chat`, `notification` (the
// lead merged, a merge needs the person), `hello` (bosund is
// (again) reachable: reload what you show) and `daemon` (it went away).

import { signedOut } from "./api.js";

export const bus = new EventTarget();
let source = null;

export function connect() {
  if (source) return;
  source = new EventSource("/api/events");
  for (const name of ["run", "pending", "approval", "chat", "notification", "hello", "daemon"]) {
    source.addEventListener(name, (e) => {
      let data = null;
      try {
        data = JSON.parse(e.data);
      } catch {
        return;
      }
      bus.dispatchEvent(new CustomEvent(name, { detail: data }));
    });
  }
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) {
      // A refused stream (401: the web UI restarted) is not retried by the browser.
      source = null;
      fetch("/api/session").then((r) => {
        if (r.status === 401) signedOut();
        else setTimeout(connect, 2000);
      }, () => setTimeout(connect, 2000));
    }
    bus.dispatchEvent(new CustomEvent("daemon", { detail: { connected: false, message: "the web UI is not reachable; retrying" } }));
  };
}

// Subscribes `f` to `name` until the returned function is called.
export function on(name, f) {
  const g = (e) => f(e.detail);
  bus.addEventListener(name, g);
  return () => bus.removeEventListener(name, g);
}
