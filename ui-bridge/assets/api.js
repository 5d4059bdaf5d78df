// The bridge's API: one generic call (a request of bosund's UI protocol), and plain reads.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let csrf = null; // the session's CSRF value, once asked for (a promise)

async function readJSON(r) {
  const data = await r.json().catch(() => null);
  if (!r.ok) {
    const e = data && data.error;
    if (r.status === 401) signedOut();
    throw new ApiError(r.status, e ? e.code : "http", e ? e.message : `the web UI answered ${r.status}`);
  }
  return data;
}

export async function getJSON(url) {
  return readJSON(await fetch(url, { credentials: "same-origin" }));
}

// Asked for once, however many calls start before the answer comes.
export function csrfValue() {
  if (!csrf)
    csrf = getJSON("/api/session").then(
      (s) => s.csrf,
      (e) => {
        csrf = null;
        throw e;
      },
    );
  return csrf;
}

// Sends one request of the UI protocol: `call("list_runs", {all: true})`.
export async function call(method, params) {
  const body = params === undefined ? { method } : { method, params };
  const r = await fetch("/api/call", {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json", "x-bosun-csrf": await csrfValue() },
    body: JSON.stringify(body),
  });
  return readJSON(r);
}

const listeners = new Set();
export function onSignedOut(f) {
  listeners.add(f);
}
export function signedOut() {
  for (const f of listeners) f();
}

// Keeps a file the person picked on this machine for bosun (`POST /api/uploads`): the answer
// is `{path, name, bytes}`, the path a chat message can name.
export async function upload(file) {
  const r = await fetch(`/api/uploads?name=${encodeURIComponent(file.name)}`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/octet-stream", "x-bosun-csrf": await csrfValue() },
    body: file,
  });
  return readJSON(r);
}
