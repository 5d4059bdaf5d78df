// What of the runs waits for the person, by run and by agent: the tool calls waiting in the
// inbox, read from `approvals` when the page connects and kept by each approval's event. The
// Runs and Agents pages show it as a state ("waiting for you"), as the Board does for cards.

import { call } from "./api.js";
import { on } from "./bus.js";

const items = new Map(); // approval id → its run and agent
const listeners = new Set();

function changed() {
  for (const f of listeners) f();
}

function take(a) {
  if (a.state === "waiting") items.set(a.id, { run: a.run, agent: a.agent });
  else items.delete(a.id);
}

async function load() {
  try {
    const r = await call("approvals", {});
    items.clear();
    for (const a of r.approvals) take(a);
    changed();
  } catch {
    // The connection indicator says what is wrong; the next hello reads them again.
  }
}

on("hello", load);
on("approval", (a) => {
  take(a);
  changed();
});
load();

// How many calls of the run `run` (kind "run") or of the agent named `key` (kind "agent") wait.
export function waits(kind, key) {
  let n = 0;
  for (const i of items.values()) if (i[kind] === key) n++;
  return n;
}

// Calls `f` whenever what waits changes; returns what stops it.
export function onWaiting(f) {
  listeners.add(f);
  return () => listeners.delete(f);
}

// The state's words.
export function waitingWords(n) {
  return n === 1 ? "waiting for you (1 call)" : `waiting for you (${n} calls)`;
}
