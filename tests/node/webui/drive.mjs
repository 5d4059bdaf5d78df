// Drives bosun's web UI in Debian's chromium (headless, through playwright-core) for the Rust
// tests in tests/tests/webui.rs: `node drive.mjs <scenario>`, with the sign-in address in
// BOSUN_UI_LOGIN. Prints one JSON line of findings and exits 0, or prints why and exits 1.

import { writeSync } from "node:fs";
import { chromium } from "playwright-core";

const scenario = process.argv[2];
const login = process.env.BOSUN_UI_LOGIN;
// Not BOSUN_RUN_ID: that is the run marker, and a run's end sweeps every process carrying it.
const run = process.env.BOSUN_UI_RUN || "";
const timeout = Number(process.env.BOSUN_UI_TIMEOUT_MS || 60000);

function fail(why) {
  // Written synchronously: process.exit does not wait for a pipe.
  writeSync(2, `drive.mjs ${scenario}: ${why}\n`);
  process.exit(1);
}

if (!login) fail("BOSUN_UI_LOGIN is not set");
const base = new URL(login).origin;
const killer = setTimeout(() => fail(`gave up after ${timeout * 2} ms`), timeout * 2);

async function openRun(page) {
  await page.goto(`${base}/#/run/${run}`);
  await page.waitForFunction(() => window.__bosunLog && window.__bosunLog.done(), null, { timeout });
  return page.evaluate(() => ({
    lines: window.__bosunLog.lines(),
    rows: document.querySelectorAll(".log-row").length,
    foreign: document.querySelectorAll("#view script, #view img, #view iframe, #view object, #view svg").length,
    status: document.getElementById("log-status").textContent,
  }));
}

const scenarios = {
  // A run's log, live to its end: every line, the DOM bounded, markup from the run as text.
  async log(page) {
    const seen = await openRun(page);
    return { count: seen.lines.length, lines: seen.lines, rows: seen.rows, foreign: seen.foreign, status: seen.status };
  },

  // Stops a run from the Runs page and waits until the list shows it ended.
  async stop(page) {
    await page.goto(`${base}/#/runs`);
    const row = page.locator(`tr[data-run="${run}"]`);
    await row.locator("button", { hasText: "Stop" }).click();
    await page.waitForSelector(`tr[data-run="${run}"][data-state="exited"]`);
    return { exit: await row.locator("td.exit").textContent() };
  },

  // Approves the one pending action of the lead from the Inbox.
  async inbox(page) {
    await page.goto(`${base}/#/inbox`);
    const item = page.locator("[data-action]").first();
    await item.waitFor();
    const shown = await item.textContent();
    await page.waitForFunction(() => document.title.startsWith("(1)"));
    const title = await page.title();
    await item.locator("button.approve").click();
    await page.waitForSelector("[data-action]", { state: "detached" });
    await page.waitForFunction(() => document.title === "bosun");
    const history = await page.locator("#inbox-history").textContent();
    return { shown, title, history };
  },

  // A run's tool call waits in the Inbox: its preview, the countdown, the tab's count; approve
  // it, see it go to the history, then the decision on the run's page.
  async approve(page) {
    await page.goto(`${base}/#/inbox`);
    const item = page.locator("#approvals-list .approval").first();
    await item.waitFor();
    await page.waitForFunction(() => document.title.startsWith("(1)"));
    const title = await page.title();
    const shown = await item.textContent();
    const preview = await item.locator(".preview").textContent();
    const left = [await item.locator(".time-left").textContent()];
    await page.waitForFunction((before) => document.querySelector("#approvals-list .time-left").textContent !== before, left[0]);
    left.push(await item.locator(".time-left").textContent());
    await item.locator("button.approve").click();
    await item.waitFor({ state: "detached" });
    await page.waitForFunction(() => document.title === "bosun");
    const history = await page.locator("#inbox-history").textContent();
    const said = await page.locator("#inbox-message").textContent();
    await page.goto(`${base}/#/run/${run}`);
    await page.waitForSelector("#decisions tbody tr");
    const decisions = await page.locator("#decisions tbody tr").allTextContents();
    return { shown, preview, title, left, history, said, decisions };
  },

  // Denies a run's first call with a message (BOSUN_UI_MESSAGE), then blocks its second, a file
  // edit shown side by side. Run data that tries to be markup must stay text.
  async deny(page) {
    const foreign = () => page.evaluate(() => document.querySelectorAll("#view script, #view img, #view iframe, #view object, #view svg").length);
    await page.goto(`${base}/#/inbox`);
    const first = page.locator("#approvals-list .approval").first();
    await first.waitFor();
    const firstId = await first.getAttribute("data-approval");
    const one = { preview: await first.locator(".preview").textContent(), foreign: await foreign() };
    await first.locator("input.deny-message").fill(process.env.BOSUN_UI_MESSAGE || "");
    await first.locator("button.deny").click();
    await page.waitForSelector(`#approvals-list [data-approval="${firstId}"]`, { state: "detached" });
    const second = page.locator(`#approvals-list .approval:not([data-approval="${firstId}"])`).first();
    await second.waitFor();
    const two = {
      tool: await second.locator(".tool").textContent(),
      file: await second.locator(".diff-file").textContent(),
      before: await second.locator("table.diff.side td.del").allTextContents(),
      after: await second.locator("table.diff.side td.add").allTextContents(),
      foreign: await foreign(),
    };
    await second.locator("button.block").click();
    await second.waitFor({ state: "detached" });
    await page.waitForFunction(() => document.querySelectorAll("#inbox-history [data-approval]").length >= 2);
    const history = await page.locator("#inbox-history").textContent();
    return { one, two, history, foreign: await foreign() };
  },

  // Opens every page; the page must not throw (checked after every scenario) and must show
  // no error.
  async pages(page) {
    const shown = {};
    for (const p of ["runs", "inbox", "board", "agents", "mcp", "chat", "daemon"]) {
      await page.goto(`${base}/#/${p}`);
      await page.waitForTimeout(700);
      const errors = await page.locator("#view .flash.error").allTextContents();
      if (errors.length) throw new Error(`#/${p} shows an error: ${errors.join("; ")}`);
      shown[p] = (await page.locator("#view").textContent()).slice(0, 200);
    }
    return { shown };
  },

  // Saves PNGs of the main pages into BOSUN_SHOTS.
  async screens(page) {
    const dir = process.env.BOSUN_SHOTS;
    await page.goto(`${base}/#/runs`);
    await page.waitForSelector("#runs-body tr[data-run]");
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${dir}/runs.png` });
    await openRun(page);
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${dir}/run.png` });
    await page.goto(`${base}/#/inbox`);
    await page.waitForSelector("#approvals-list .approval");
    await page.waitForSelector("#actions-list [data-action]");
    await page.setViewportSize({ width: 1280, height: 1000 });
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${dir}/inbox.png` });
    await page.goto(`${base}/#/run/${process.env.BOSUN_UI_AGENT_RUN}`);
    await page.waitForSelector("#run-approvals .approval");
    await page.waitForSelector("#decisions tbody tr");
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${dir}/run-approval.png` });
    return { saved: ["runs.png", "run.png", "inbox.png", "run-approval.png"] };
  },
};

const browser = await chromium.launch({
  executablePath: process.env.BOSUN_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const dialogs = [];
const errors = [];
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(timeout);
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  const signIn = await page.goto(login);
  if (new URL(page.url()).search !== "") fail(`the sign-in did not redirect to a clean address: ${page.url()}`);
  if (!signIn.ok()) fail(`the sign-in answered ${signIn.status()}`);
  const result = await scenarios[scenario](page);
  if (errors.length) fail(`the page threw: ${errors.join("; ")}`);
  writeSync(1, `${JSON.stringify({ ...result, dialogs })}\n`);
} catch (e) {
  fail(e && e.stack ? e.stack : String(e));
} finally {
  clearTimeout(killer);
  await browser.close();
}
process.exit(0);

