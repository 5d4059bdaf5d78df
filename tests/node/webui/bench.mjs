// Measures bosun's web UI in Debian's chromium (headless, through playwright-core) for
// bench/benches/webui.rs: `node bench.mjs <figure>`, with the sign-in address in
// BOSUN_UI_LOGIN. Prints one JSON line of measurements and exits 0, or prints why and exits 1.
// Times are read in the page (performance.now(), from the start of its navigation); memory
// through the DevTools protocol after a garbage collection.
//
// - runs: the Runs page loaded afresh BOSUN_UI_ROUNDS times; each time, how long until the list
//   holds BOSUN_UI_EXPECT runs and its rows on screen are drawn (in the DOM, in a frame about to
//   be painted; the list draws only the rows in view).
// - log: a finished run's page (BOSUN_UI_RUN) loaded afresh BOSUN_UI_ROUNDS times; each time,
//   how long until a row on screen holds BOSUN_UI_LAST (its last line). Then, the whole log read
//   in, the elements in the DOM and the JS heap at the end, in the middle and back at the end,
//   and the frames while scrolling there and back.
// - follow: a run (BOSUN_UI_RUN) that waits for the file BOSUN_UI_GO before it writes: the page
//   follows it live, counting frames, the file is made, and the page is watched until the log
//   has ended; frames per second before (idle) and while it streams, and every line checked.

import { writeFileSync, writeSync } from "node:fs";
import { chromium } from "playwright-core";

const figure = process.argv[2];
const login = process.env.BOSUN_UI_LOGIN;
const run = process.env.BOSUN_UI_RUN || "";
const rounds = Number(process.env.BOSUN_UI_ROUNDS || 5);
const timeout = Number(process.env.BOSUN_UI_TIMEOUT_MS || 300000);

function fail(why) {
  writeSync(2, `bench.mjs ${figure}: ${why}\n`);
  process.exit(1);
}

if (!login) fail("BOSUN_UI_LOGIN is not set");
const base = new URL(login).origin;

// Loads `hash` afresh (a new document, so performance.now() starts again) and returns the
// value the page's init script leaves in window.__at once `ready` holds.
async function timedLoad(page, hash) {
  await page.goto("about:blank");
  await page.goto(`${base}/${hash}`);
  const at = await page.waitForFunction(() => window.__at, null, { timeout });
  return at.jsonValue();
}

async function memory(page, cdp) {
  await cdp.send("HeapProfiler.collectGarbage");
  const heap = await cdp.send("Runtime.getHeapUsage");
  const { metrics } = await cdp.send("Performance.getMetrics");
  const nodes = metrics.find((m) => m.name === "Nodes");
  return {
    elements: await page.evaluate(() => document.getElementsByTagName("*").length),
    rows: await page.evaluate(() => document.querySelectorAll(".log-row:not([hidden])").length),
    nodes: nodes ? nodes.value : null,
    heap_mb: heap.usedSize / 1048576,
  };
}

// Scrolls the log to `line` over `frames` frames, one step a frame; the frames' intervals.
async function scrollFrames(page, line, frames) {
  // Let the garbage collection of the measurement before settle first.
  await page.waitForTimeout(500);
  return page.evaluate(
    ({ line, frames }) =>
      new Promise((done) => {
        const view = window.__bosunLog.view;
        const s = view.scroll;
        const from = s.scrollTop;
        const to = view.scrollFor(line);
        const times = [];
        let i = 0;
        const step = (t) => {
          times.push(t);
          if (i++ >= frames) {
            done(times.slice(1).map((x, j) => x - times[j]));
            return;
          }
          s.scrollTop = from + ((to - from) * i) / frames;
          requestAnimationFrame(step);
        };
        requestAnimationFrame(step);
      }),
    { line, frames },
  );
}

function frameStats(intervals) {
  const sorted = [...intervals].sort((a, b) => a - b);
  return {
    frames: intervals.length,
    mean_ms: intervals.reduce((a, b) => a + b, 0) / Math.max(1, intervals.length),
    worst_ms: sorted[sorted.length - 1] || 0,
    p95_ms: sorted[Math.floor(sorted.length * 0.95)] || 0,
  };
}

const figures = {
  async runs(page) {
    const expect = Number(process.env.BOSUN_UI_EXPECT || 0);
    await page.addInitScript((n) => {
      const look = () => {
        const list = document.getElementById("runs-scroll");
        const body = document.getElementById("runs-body");
        const drawn = body ? body.querySelectorAll("tr[data-run]").length : 0;
        if (list && list.dataset.shown === String(n) && body.rows.length > 0 && drawn >= Math.min(n, 20)) window.__at = performance.now();
        else requestAnimationFrame(look);
      };
      requestAnimationFrame(look);
    }, expect);
    const ms = [];
    for (let i = 0; i < rounds; i++) ms.push(await timedLoad(page, "#/runs"));
    const rows = await page.evaluate(() => document.querySelectorAll("#runs-body tr[data-run]").length);
    // The daemon's answer alone, as the page gets it: one list_runs through /api/call.
    const api_ms = await page.evaluate(async () => {
      const { csrf } = await (await fetch("/api/session")).json();
      const t0 = performance.now();
      const r = await fetch("/api/call", {
        method: "POST",
        headers: { "content-type": "application/json", "x-bosun-csrf": csrf },
        body: JSON.stringify({ method: "list_runs", params: { all: true } }),
      });
      await r.json();
      return performance.now() - t0;
    });
    return { ms, rows, api_ms, elements: await page.evaluate(() => document.getElementsByTagName("*").length) };
  },

  async log(page, cdp) {
    const last = process.env.BOSUN_UI_LAST || "";
    await page.addInitScript((needle) => {
      const look = () => {
        for (const row of document.querySelectorAll(".log-row:not([hidden])"))
          if (row.textContent.includes(needle)) {
            window.__at = performance.now();
            return;
          }
        requestAnimationFrame(look);
      };
      requestAnimationFrame(look);
    }, last);
    const ms = [];
    for (let i = 0; i < rounds; i++) ms.push(await timedLoad(page, `#/run/${run}`));
    await page.waitForFunction(() => window.__bosunLog && window.__bosunLog.done(), null, { timeout });
    const whole_ms = await page.evaluate(() => performance.now());
    const lines = await page.evaluate(() => window.__bosunLog.count());
    const mem = { end: await memory(page, cdp) };
    const down = frameStats(await scrollFrames(page, Math.floor(lines / 2), 120));
    mem.middle = await memory(page, cdp);
    const middle = await page.evaluate(() => document.querySelector(".log-row:not([hidden])").textContent);
    const back = frameStats(await scrollFrames(page, lines, 120));
    mem.back = await memory(page, cdp);
    return { ms, whole_ms, lines, mem, scroll: { down, back }, middle };
  },

  async follow(page, cdp) {
    await page.goto(`${base}/#/run/${run}`);
    await page.waitForFunction(() => window.__bosunLog && document.getElementById("log-status").textContent === "live", null, { timeout });
    // Counts frames from now on: the page idle (the run waits), then while it streams.
    await page.evaluate(() => {
      window.__frames = [];
      const loop = (t) => {
        window.__frames.push(t);
        if (!window.__stop) requestAnimationFrame(loop);
      };
      requestAnimationFrame(loop);
    });
    await page.waitForTimeout(2000);
    const go = await page.evaluate(() => performance.now());
    writeFileSync(process.env.BOSUN_UI_GO, "go\n");
    await page.waitForFunction(() => window.__bosunLog.done(), null, { timeout, polling: 250 });
    const end = await page.evaluate(() => {
      window.__stop = true;
      return performance.now();
    });
    const frames = await page.evaluate(() => window.__frames);
    const idle = frames.filter((t) => t < go);
    const busy = frames.filter((t) => t >= go && t <= end);
    // The worst second: the fewest frames in any one-second window while it streamed.
    let worst = Infinity;
    for (let s = go; s + 1000 <= end; s += 100) worst = Math.min(worst, busy.filter((t) => t >= s && t < s + 1000).length);
    const gaps = busy.slice(1).map((t, i) => t - busy[i]);
    const check = await page.evaluate(() => {
      let numbered = 0;
      let inOrder = true;
      let first = null;
      let last = null;
      for (const t of window.__bosunLog.raw()) {
        if (!t.startsWith("line ")) continue;
        const n = Number(t.slice(5, 15));
        if (first === null) first = n;
        else if (n !== last + 1) inOrder = false;
        last = n;
        numbered++;
      }
      return { count: window.__bosunLog.count(), numbered, inOrder, first, last };
    });
    return {
      idle_fps: (idle.length - 1) / ((idle[idle.length - 1] - idle[0]) / 1000),
      stream_s: (end - go) / 1000,
      fps: busy.length / ((end - go) / 1000),
      worst_second_frames: Number.isFinite(worst) ? worst : busy.length,
      longest_gap_ms: Math.max(0, ...gaps),
      mem: await memory(page, cdp),
      ...check,
    };
  },
};

const browser = await chromium.launch({
  executablePath: process.env.BOSUN_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const errors = [];
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(timeout);
  page.on("pageerror", (e) => errors.push(String(e)));
  const cdp = await context.newCDPSession(page);
  await cdp.send("Performance.enable");
  await page.goto(login);
  if (new URL(page.url()).search !== "") fail(`the sign-in did not redirect to a clean address: ${page.url()}`);
  const result = await figures[figure](page, cdp);
  if (errors.length) fail(`the page threw: ${errors.join("; ")}`);
  writeSync(1, `${JSON.stringify(result)}\n`);
} catch (e) {
  fail(e && e.stack ? e.stack : String(e));
} finally {
  await browser.close();
}
process.exit(0);
