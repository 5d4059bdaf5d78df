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

// Confirmations ("Remove …?") are accepted in the scenarios that set this; any other dialog is
// dismissed and reported.
let acceptConfirm = false;

// Everything the browser was sent (but the event streams), to check no secret came back.
const bodies = [];

// Fails when `canary` is in the page (its HTML, its fields' values, its storage) or in any
// answer the browser got so far.
async function checkNoSecret(page, canary, when) {
  if (!canary) throw new Error("no canary to check for");
  const found = await page.evaluate((c) => {
    const where = [];
    if (document.documentElement.outerHTML.includes(c)) where.push("the page's HTML");
    for (const i of document.querySelectorAll("input, textarea")) if (i.value.includes(c)) where.push(`the field ${i.name || i.className}`);
    for (const s of [localStorage, sessionStorage]) for (let k = 0; k < s.length; k++) if ((s.getItem(s.key(k)) || "").includes(c)) where.push("storage");
    if (document.cookie.includes(c)) where.push("a cookie");
    return where;
  }, canary);
  const sent = (await Promise.all(bodies)).filter((b) => b.text.includes(canary)).map((b) => b.url);
  if (found.length || sent.length) throw new Error(`the secret is in ${[...found, ...sent].join(", ")} (${when})`);
}

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

  // Stops a run from the Runs page (or, with BOSUN_UI_STOP_FROM=run, from the run's own page)
  // and waits until the page shows it ended. With BOSUN_UI_LATE_ANSWER=1 the answer to the stop
  // ("stopping") reaches the page only after the event of the run's end was shown, as it can
  // when the machine is busy (they come on connections of their own): the run must still show
  // as ended once the answer is taken in.
  async stop(page) {
    const late = process.env.BOSUN_UI_LATE_ANSWER === "1";
    const runsPage = process.env.BOSUN_UI_STOP_FROM !== "run";
    const ended = runsPage ? `tr[data-run="${run}"][data-state="exited"]` : ".run-head .state.st-stopped";
    let delivered;
    const answered = new Promise((r) => (delivered = r));
    if (late)
      await page.route("**/api/call", async (route) => {
        if (!(route.request().postData() || "").includes('"stop_run"')) return route.continue();
        const response = await route.fetch();
        await page.waitForSelector(ended);
        const finished = page.waitForEvent("requestfinished", (r) => r === route.request());
        await route.fulfill({ response });
        delivered(await finished);
      });
    if (runsPage) {
      await page.goto(`${base}/#/runs`);
      await page.locator(`tr[data-run="${run}"] button`, { hasText: "Stop" }).click();
    } else {
      await page.goto(`${base}/#/run/${run}`);
      await page.locator("#stop-run").click();
    }
    if (late) {
      // The end was shown before the answer was let through.
      await answered;
      // The page has taken the answer in and drawn itself again (the list in an animation frame).
      await page.evaluate(() => new Promise((r) => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(r)), 0)));
    } else await page.waitForSelector(ended);
    if (!runsPage) return { state: await page.locator(".run-head .state").textContent() };
    const row = page.locator(`tr[data-run="${run}"]`);
    return { exit: await row.locator("td.exit").textContent(), state: await row.getAttribute("data-state") };
  },

  // The Runs page with a history larger than one answer of bosund: how many list_runs calls it
  // made, the count it shows, and the run in the last row once scrolled to the end (the oldest).
  async runsPages(page) {
    let asked = 0;
    page.on("request", (r) => {
      if (r.url().endsWith("/api/call") && (r.postData() || "").includes('"list_runs"')) asked++;
    });
    await page.goto(`${base}/#/runs`);
    await page.waitForSelector("#runs-scroll[data-shown]", { timeout });
    const count = await page.locator("#runs-count").textContent();
    await page.locator("#runs-scroll").evaluate((e) => (e.scrollTop = e.scrollHeight));
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const last = await page.locator("#runs-body tr[data-run]").last().getAttribute("data-run");
    return { asked, count, last };
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

  // A run's MCP calls through bosun's gateway, on its page.
  // A run's decisions as its page shows them: the heading, the line saying how many earlier
  // ones are not shown, and each row's summary.
  async decisions(page) {
    await page.goto(`${base}/#/run/${run}`);
    await page.waitForSelector("#decisions tbody tr");
    const heading = await page.locator("#run-decisions h2").textContent();
    const notShown = await page.locator("#decisions-not-shown").textContent();
    const rows = await page.locator("#decisions tbody tr td.what").allTextContents();
    return { heading, notShown, rows };
  },

  // A run's tool calls as its page shows them: each chip's text, title and class.
  async toolcalls(page) {
    await page.goto(`${base}/#/run/${run}`);
    await page.waitForSelector("#tool-calls .chip");
    const calls = await page.locator("#tool-calls .chip").evaluateAll((chips) =>
      chips.map((c) => ({ text: c.textContent, title: c.title, class: c.className })));
    return { calls };
  },

  async mcpcalls(page) {
    await page.goto(`${base}/#/run/${run}`);
    await page.waitForSelector("#mcp-calls tbody tr");
    const heading = await page.locator("#run-mcp-calls h2").textContent();
    const calls = await page.locator("#mcp-calls tbody tr").evaluateAll((rows) =>
      rows.map((r) => ({ tool: r.dataset.tool, outcome: r.dataset.outcome, verdict: r.dataset.verdict, text: r.textContent })));
    return { heading, calls };
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

  // MCP servers from the browser: add (stdio with a secret environment line, by address with a
  // secret header), a refusal said next to the form, tools listed and one inspected, the
  // connection tested, edit (a line added, another removed), rename, import from a Claude
  // Code config, remove. The secret canary never comes back.
  async mcp(page) {
    const canary = process.env.BOSUN_UI_CANARY;
    acceptConfirm = true;
    await page.goto(`${base}/#/mcp`);
    await page.click("#mcp-add-open");
    const form = page.locator("#mcp-add-form");
    await form.locator("input[name=name]").fill("ev");
    await form.locator("input[name=command]").fill(process.env.BOSUN_UI_EVERYTHING);
    await form.locator("textarea[name=args]").fill("stdio");
    await form.locator("button.add-line", { hasText: "environment" }).click();
    await form.locator(".env .line-name").last().fill("TOKEN");
    await form.locator(".env .line-value").last().fill(canary);
    await form.locator("button[type=submit]").click();
    await page.waitForSelector('#mcp-servers tr[data-server="ev"]');
    await checkNoSecret(page, canary, "after adding ev");
    // The same name again: refused, in the daemon's words, next to the form.
    await page.click("#mcp-add-open");
    await form.locator("input[name=name]").fill("ev");
    await form.locator("input[name=command]").fill("/bin/true");
    await form.locator("button[type=submit]").click();
    const refused = await page.locator("#mcp-add-message .flash.error").textContent();
    // By address, with a secret header.
    await form.locator("input[name=name]").fill("remote-h");
    await form.locator("select[name=kind]").selectOption("http");
    await form.locator("input[name=url]").fill("http://127.0.0.1:9/mcp");
    await form.locator("button.add-line", { hasText: "header" }).click();
    await form.locator(".headers .line-name").last().fill("Authorization");
    await form.locator(".headers .line-value").last().fill(`Bearer ${canary}`);
    await form.locator("button[type=submit]").click();
    await page.waitForSelector('#mcp-servers tr[data-server="remote-h"]');
    const remote = await page.locator('#mcp-servers tr[data-server="remote-h"]').textContent();
    // One of the older SSE transport: bosun's gateway holds it too, its rules set on its page.
    await page.click("#mcp-add-open");
    await form.locator("input[name=name]").fill("remote-s");
    await form.locator("select[name=kind]").selectOption("sse");
    await form.locator("input[name=url]").fill("http://127.0.0.1:9/sse");
    await form.locator("button[type=submit]").click();
    await page.waitForSelector('#mcp-servers tr[data-server="remote-s"]');
    await page.goto(`${base}/#/mcp/remote-s`);
    const sseEdit = page.locator("#server-edit-form");
    await sseEdit.locator("input[name=deny_tools]").fill("danger-*");
    await sseEdit.locator("button[type=submit]").click();
    await page.waitForFunction(() => (document.querySelector("#server-edit-message") || {}).textContent === "Saved.");
    const sseGateway = await page.locator("#gateway-deny").textContent();

    // One server: its lines by name, its tools, one tool's parameters, the connection.
    await page.goto(`${base}/#/mcp/ev`);
    await page.waitForSelector("#server-info [data-line]");
    const lines = await page.locator("#server-info [data-line]").allTextContents();
    await page.click("#list-tools");
    await page.waitForSelector('#server-tools [data-tool="echo"]');
    const tools = await page.locator("#server-tools [data-tool]").count();
    const echo = page.locator('#server-tools [data-tool="echo"]');
    const risk = await echo.locator(".chip").first().textContent();
    await echo.locator("details summary").click();
    const params = await echo.locator("details td.mono").allTextContents();
    await page.click("#inspect");
    await page.waitForSelector("#server-inspect table");
    const inspected = await page.locator("#server-inspect").textContent();
    // What the server advertised beyond tools and prompts waits for the person: approve one.
    await page.waitForSelector('#pending-capabilities button[data-capability="resources"]');
    const pendingCapabilities = await page.locator("#pending-capabilities button").evaluateAll((bs) => bs.map((b) => b.dataset.capability));
    await page.click('#pending-capabilities button[data-capability="resources"]');
    await page.waitForFunction(() => (document.querySelector("#gateway-capabilities") || {}).textContent === "tools, prompts, resources");
    const approvedCapabilities = await page.locator("#gateway-capabilities").textContent();

    // Edit: a new line, the old one removed.
    const edit = page.locator("#server-edit-form");
    await edit.locator("button.add-line").click();
    await edit.locator(".env .line-name").last().fill("OTHER");
    await edit.locator(".env .line-value").last().fill(canary);
    await edit.locator('[data-line="TOKEN"] input.line-remove').check();
    // And what bosun's gateway holds it to.
    await edit.locator("input[name=trusted]").check();
    await edit.locator("input[name=deny_tools]").fill("get-*, trigger-*");
    await edit.locator("input[name=deadline_s]").fill("30");
    await edit.locator("select[name=elicitation]").selectOption("ask");
    await edit.locator("button[type=submit]").click();
    await page.waitForFunction(() => (document.querySelector("#server-edit-message") || {}).textContent === "Saved.");
    const edited = await page.locator("#server-info [data-line]").allTextContents();
    const gateway = {
      trust: await page.locator("#gateway-trust").textContent(),
      deny: await page.locator("#gateway-deny").textContent(),
      elicitation: await page.locator("#gateway-elicitation").textContent(),
    };
    await checkNoSecret(page, canary, "after editing ev");

    // Rename.
    await page.locator("#server-rename-form input").fill("ev2");
    await page.locator("#server-rename-form button").click();
    await page.waitForFunction(() => location.hash === "#/mcp/ev2");
    await page.waitForSelector("#server-info");
    const renamed = await page.locator("h1").textContent();

    // Import from the coding CLIs' configs: the candidate by name, its values never shown.
    await page.goto(`${base}/#/mcp`);
    await page.click("#mcp-import-open");
    await page.click("#mcp-import-scan");
    const name = process.env.BOSUN_UI_IMPORT;
    await page.waitForSelector(`#mcp-import-found tr[data-candidate="${name}"]`);
    const candidate = await page.locator(`#mcp-import-found tr[data-candidate="${name}"]`).textContent();
    for (const box of await page.locator("#mcp-import-found input.pick").all()) await box.uncheck();
    await page.locator(`#mcp-import-found tr[data-candidate="${name}"] input.pick`).check();
    await page.click("#mcp-import-go");
    await page.waitForSelector(`#mcp-servers tr[data-server="${name}"]`);
    const said = await page.locator("#mcp-message").textContent();

    // Remove.
    await page.locator('#mcp-servers tr[data-server="remote-h"] button', { hasText: "Remove" }).click();
    await page.waitForSelector('#mcp-servers tr[data-server="remote-h"]', { state: "detached" });
    const servers = await page.locator("#mcp-servers tr[data-server]").evaluateAll((rows) => rows.map((r) => r.dataset.server));
    await checkNoSecret(page, canary, "at the end");
    return { refused, remote, sseGateway, lines, tools, risk, params, inspected, pendingCapabilities, approvedCapabilities, edited, gateway, renamed, candidate, said, servers };
  },

  // A signed-in server moves to another authorization server (the test OAuth server's
  // switch): List tools on its page is refused, the page offers to sign in, and one click signs
  // in at the new server and lists the tools.
  async resignin(page) {
    const control = new URL("/test/switch-as", process.env.BOSUN_UI_OAUTH_URL);
    const switched = await fetch(control, { method: "POST" });
    if (!switched.ok) throw new Error(`switch-as answered ${switched.status}`);
    await page.goto(`${base}/#/mcp/remote`);
    await page.waitForSelector("#list-tools");
    await page.click("#list-tools");
    await page.waitForSelector("#sign-in-retry");
    const asked = await page.locator("#sign-in-asked").textContent();
    await page.click("#sign-in-retry");
    await page.waitForSelector('#server-tools [data-tool="whoami"]');
    const issuer = await page.evaluate(async () => {
      const r = await fetch("/api/call", { method: "POST", credentials: "same-origin", headers: { "content-type": "application/json", "x-bosun-csrf": (await (await fetch("/api/session")).json()).csrf }, body: JSON.stringify({ method: "mcp_show", params: { server: "remote" } }) });
      return (await r.json()).sign_in.issuer;
    });
    return { asked, issuer };
  },

  // A run's call waits in the Inbox for a new sign-in to its server: the item offers Sign in
  // and Dismiss only; Sign in opens the provider's page in a window of its own, and the item
  // goes once the sign-in is over and the call went on.
  async signinitem(page) {
    await page.goto(`${base}/#/inbox`);
    const item = page.locator("#approvals-list .approval").first();
    await item.waitFor();
    const shown = await item.textContent();
    const buttons = await item.locator("button").allTextContents();
    const popups = [];
    page.context().on("page", (p) => popups.push(p));
    await item.locator("button.sign-in").click();
    await page.waitForSelector("#approvals-list .approval", { state: "detached" });
    const history = await page.locator("#inbox-history").textContent();
    return { shown, buttons, popups: popups.length, history };
  },

  // A server's form waiting in the Inbox: its fields as controls; an answer out of range is
  // refused with the reason (the form keeps what was typed); then one that fits is sent.
  async formitem(page) {
    await page.goto(`${base}/#/inbox`);
    const item = page.locator("#approvals-list .approval").first();
    await item.waitFor();
    const fields = await item.locator(".form-field").evaluateAll((rows) => rows.map((r) => r.dataset.field));
    const buttons = await item.locator("button").allTextContents();
    const kinds = await item.evaluate((el) => ({
      email: el.querySelector("#form-email")?.type,
      date: el.querySelector("#form-birthdate")?.type,
      integer: el.querySelector("#form-integer")?.type,
      check: el.querySelector("#form-check")?.tagName,
      multi: el.querySelectorAll("[data-field=untitledMultipleSelectEnum] input[type=checkbox]").length,
      integerDefault: el.querySelector("#form-integer")?.value,
    }));
    await item.locator("#form-name").fill("Grace Hopper");
    await item.locator("#form-integer").fill("500");
    await item.locator("button.send-form").click();
    await page.waitForFunction(() => /Not done/.test(document.getElementById("inbox-message").textContent));
    const refusal = await page.locator("#inbox-message").textContent();
    const kept = await item.locator("#form-name").inputValue();
    await item.locator("#form-integer").fill("12");
    await item.locator("#form-untitledSingleSelectEnum").selectOption("Rachel");
    await item.locator("[data-field=untitledMultipleSelectEnum] input[value=Drums]").check();
    await item.locator("button.send-form").click();
    await page.waitForSelector("#approvals-list .approval", { state: "detached" });
    const history = await page.locator("#inbox-history").textContent();
    return { fields, buttons, kinds, refusal, kept, history };
  },

  // Signs in to a server reached by address (the test OAuth server) from its page: the
  // provider's page opens in a window of the browser, and the page comes back signed in; then
  // again as a new client; then a sign-in cancelled before the provider answered.
  async oauth(page) {
    await page.goto(`${base}/#/mcp`);
    await page.click("#mcp-add-open");
    const form = page.locator("#mcp-add-form");
    await form.locator("input[name=name]").fill("remote");
    await form.locator("select[name=kind]").selectOption("http");
    await form.locator("input[name=url]").fill(process.env.BOSUN_UI_OAUTH_URL);
    await form.locator("button[type=submit]").click();
    await page.waitForSelector('#mcp-servers tr[data-server="remote"]');
    await page.goto(`${base}/#/mcp/remote`);
    await page.waitForSelector("#sign-in");
    const popups = [];
    page.context().on("page", (p) => popups.push(p));
    await page.click("#sign-in");
    await page.waitForFunction(() => (document.getElementById("sign-in-state") || {}).textContent === "signed in");
    const said = await page.locator("#server-message").textContent();
    const visited = popups.map((p) => p.url());
    // The provider sent the window on to bosund's loopback answer, which says it is done.
    const answered = popups.length ? await popups[0].locator("body").textContent() : "";
    await page.click("#list-tools");
    await page.waitForSelector('#server-tools [data-tool="whoami"]');
    await page.click("#sign-out");
    await page.waitForFunction(() => (document.getElementById("sign-in-state") || {}).textContent === "not signed in");
    // The service forgets bosun's client: signed in again as a new client, then out.
    const control = new URL("/test/forget-clients", process.env.BOSUN_UI_OAUTH_URL);
    const forgot = await fetch(control, { method: "POST" });
    if (!forgot.ok) throw new Error(`forget-clients answered ${forgot.status}`);
    await page.check("#sign-in-new-client");
    await page.click("#sign-in");
    await page.waitForFunction(() => (document.getElementById("sign-in-state") || {}).textContent === "signed in");
    const renewed = await page.locator("#server-message").textContent();
    await page.click("#sign-out");
    await page.waitForFunction(() => (document.getElementById("sign-in-state") || {}).textContent === "not signed in");
    // A sign-in cancelled while the provider's page has not answered yet (its request is held
    // here): bosund's loopback address for the answer closes, and nothing is saved.
    let held;
    const holding = new Promise((r) => (held = r));
    await page.context().route("**/authorize**", (route) => held(route));
    await page.click("#sign-in");
    const authorize = await holding;
    const callback = new URL(authorize.request().url()).searchParams.get("redirect_uri");
    await page.click("#sign-in-cancel");
    await page.waitForFunction(() => /cancelled/.test(document.getElementById("server-message").textContent));
    const cancelled = await page.locator("#server-message").textContent();
    await authorize.abort();
    let callbackClosed = false;
    try {
      await fetch(callback);
    } catch {
      callbackClosed = true;
    }
    const afterCancel = await page.locator("#sign-in-state").textContent();
    return { said, popups: popups.length, visited, answered, renewed, cancelled, callbackClosed, afterCancel };
  },

  // The agent form: a new agent with its setup, a secret line, a server on with one of its
  // tools off, approvals and a verdict; then a change refused as a whole (the message next to
  // the form); then an edit.
  async agent(page) {
    const canary = process.env.BOSUN_UI_CANARY;
    await page.goto(`${base}/#/agents`);
    await page.click("#agent-new");
    const form = page.locator("#agent-form");
    await form.waitFor();
    await form.locator("input[name=name]").fill("helper");
    await form.locator("select[name=cli]").selectOption("claude");
    await form.locator("input[name=cwd]").fill(process.env.BOSUN_UI_CWD);
    await form.locator("input[name=model]").fill("sonnet");
    await form.locator("textarea[name=instructions]").fill("Be brief.");
    await form.locator("input[name=max_output]").fill("64M");
    await form.locator("button.add-line", { hasText: "Add a line" }).click();
    await form.locator(".env .line-name").last().fill("PLAIN");
    await form.locator(".env .line-value").last().fill("1");
    await form.locator("button.add-line", { hasText: "secret" }).click();
    await form.locator(".secret-env .line-name").last().fill("API_KEY");
    await form.locator(".secret-env .line-value").last().fill(canary);
    await form.locator('[aria-label="mcp.everything"]').check();
    await form.locator('[aria-label="mcp.everything.echo"]').uncheck();
    await form.locator("select[name=approval]").selectOption("read-only");
    await form.locator("#verdict-add").click();
    await form.locator(".verdict-key").last().fill("Bash(git *)");
    await form.locator("#agent-save").click();
    await page.waitForFunction(() => location.hash === "#/agents/helper");
    await page.waitForSelector('#agent-form [data-line="API_KEY"]');
    const secretShown = await page.locator('#agent-form [data-line="API_KEY"]').textContent();
    await checkNoSecret(page, canary, "after creating the agent");

    // Two changes, one of them wrong: nothing is changed, and the daemon says why.
    const f2 = page.locator("#agent-form");
    await f2.locator('input[name="web.search"]').check();
    await f2.locator('input[name="approval.wait"]').fill("0s");
    await f2.locator("#agent-save").click();
    const refused = await page.locator("#agent-form-message .flash.error").textContent();

    // A time cap past a week, read by the bridge's one parser (issue 25): refused in its words
    // before anything is sent.
    await f2.locator('input[name="approval.wait"]').fill("10m");
    await f2.locator("input[name=time_cap]").fill("400d");
    await f2.locator("#agent-save").click();
    await page.waitForFunction(() => /week/.test((document.getElementById("agent-form-message") || {}).textContent || ""));
    const capRefused = await page.locator("#agent-form-message").textContent();

    // An edit that is right.
    await f2.locator("input[name=time_cap]").fill("2h");
    await f2.locator('input[name="approval.wait"]').fill("10m");
    await f2.locator('input[name="web.search"]').uncheck();
    await f2.locator("input[name=model]").fill("opus");
    await f2.locator("#agent-save").click();
    await page.waitForFunction(() => (document.getElementById("agent-form-message") || {}).textContent === "Saved.");
    const model = await page.locator("#agent-form input[name=model]").inputValue();
    const maxOutput = await page.locator("#agent-form input[name=max_output]").inputValue();
    const timeCap = await page.locator("#agent-form input[name=time_cap]").inputValue();

    // A new Codex agent with its settings, whose switches are refused: it is created, the page
    // says so, and sends only the switches again once they are right.
    await page.goto(`${base}/#/agents/~new`);
    const f3 = page.locator("#agent-form");
    await f3.locator("input[name=name]").fill("coder2");
    await f3.locator("select[name=cli]").selectOption("codex");
    await f3.locator("input[name=cwd]").fill(process.env.BOSUN_UI_CWD);
    await f3.locator("textarea[name=codex_config]").fill('model_provider="ollama"');
    await f3.locator('input[name="approval.wait"]').fill("0s");
    await f3.locator("#agent-save").click();
    const createdRefused = await page.locator("#agent-form-message .flash.error").textContent();
    const hashAfterRefusal = await page.evaluate(() => location.hash);
    await f3.locator('input[name="approval.wait"]').fill("5m");
    await page.click("#agent-retry-switches");
    await page.waitForFunction(() => (document.getElementById("agent-form-message") || {}).textContent === "Saved.");
    const codexConfig = await page.locator("#agent-form textarea[name=codex_config]").inputValue();
    await checkNoSecret(page, canary, "at the end");
    return { secretShown, refused, model, maxOutput, capRefused, timeCap, createdRefused, hashAfterRefusal, codexConfig };
  },

  // Projects (add, a refusal, the lead-may-merge switch, edit, remove) and a card (edit, hold
  // and release, moved to an Auto column so that its run starts), then the Runs page's Card
  // column linking to it.
  async cards(page) {
    acceptConfirm = true;
    const card = process.env.BOSUN_UI_CARD;
    await page.goto(`${base}/#/projects`);
    const add = page.locator("#project-add-form");
    const addProject = async (name, folder) => {
      await add.locator("input[name=name]").fill(name);
      await add.locator("input[name=folder]").fill(folder);
      await add.locator("button[type=submit]").click();
    };
    await addProject("web", process.env.BOSUN_UI_REPO);
    await page.waitForSelector('#projects-body tr[data-project="web"]');
    await addProject("web", process.env.BOSUN_UI_REPO);
    const refused = await page.locator("#project-add-message .flash.error").textContent();
    await addProject("other", process.env.BOSUN_UI_REPO2);
    await page.waitForSelector('#projects-body tr[data-project="other"]');
    await page.goto(`${base}/#/projects/web`);
    await page.locator("#lead-may-merge").check();
    await page.locator("#project-switches button[type=submit]").click();
    await page.waitForFunction(() => (document.getElementById("project-switch-message") || {}).textContent === "Applied.");
    await page.locator("#project-form input[name=main_branch]").fill("main");
    await page.locator("#project-form input[name=github]").fill("acme/site");
    await page.locator("#project-form button[type=submit]").click();
    await page.waitForFunction(() => /Saved\.|\S/.test((document.getElementById("project-form-message") || {}).textContent || ""));
    const projectSaid = await page.locator("#project-form-message").textContent();
    const project = await page.locator("#project-info").textContent();
    await page.goto(`${base}/#/projects/other`);
    await page.click("#project-remove");
    await page.waitForFunction(() => location.hash === "#/projects");
    await page.waitForSelector('#projects-body tr[data-project="web"]');
    const projects = await page.locator("#projects-body tr[data-project]").evaluateAll((rows) => rows.map((r) => r.dataset.project));

    // The card.
    await page.goto(`${base}/#/card/${card}`);
    const form = page.locator("#card-form");
    await form.waitFor();
    await form.locator("input[name=title]").fill("Docs v2");
    await form.locator("textarea[name=description]").fill("Write the docs");
    await form.locator("select[name=project]").selectOption("web");
    await form.locator("select[name=assignee]").selectOption("worker");
    await form.locator("button[type=submit]").click();
    await page.waitForFunction(() => (document.getElementById("card-form-message") || {}).textContent === "Saved.");
    await page.locator("#card-hold input[name=hold_reason]").fill("waiting for the spec");
    await page.click("#card-hold-go");
    await page.waitForSelector("#card-release");
    const held = await page.locator("#card-hold").textContent();
    await page.click("#card-release");
    await page.waitForSelector("#card-hold-go");
    await page.locator("#card-form select[name=column]").selectOption("To do");
    await page.locator("#card-form button[type=submit]").click();
    await page.waitForSelector("#card-run", { timeout });
    const activity = await page.locator("#card-activity").textContent();

    // The Runs page: the run's card, linking to it.
    await page.goto(`${base}/#/runs`);
    const link = page.locator(`#runs-body td.card-cell a[data-card="${card}"]`).first();
    await link.waitFor();
    await page.waitForFunction((id) => (document.querySelector(`#runs-body a[data-card="${id}"]`) || {}).textContent !== id.slice(0, 8), card);
    const cardCell = await link.textContent();
    await link.click();
    await page.waitForFunction((id) => location.hash === `#/card/${id}`, card);
    return { refused, projectSaid, project, projects, held, activity, cardCell };
  },

  // A chat message with a file picked in the browser and one named by its path; the answer
  // streams live with its tool calls; the lead's pending action is shown in the chat with its
  // preview side by side and discarded there; the Inbox's history then holds it.
  async chat(page) {
    await page.goto(`${base}/#/chat/${process.env.BOSUN_UI_CHAT}`);
    await page.waitForSelector("#chat-form");
    // What the live answer showed, whenever it showed it (it goes once the answer is in).
    await page.evaluate(() => {
      window.__live = { calls: [], texts: [], results: [] };
      new MutationObserver(() => {
        const seen = window.__live;
        for (const el of document.querySelectorAll("#chat-live .live-call")) {
          const t = el.querySelector(".mono").textContent;
          if (!seen.calls.includes(t)) seen.calls.push(t);
          const r = el.querySelector(".live-result").textContent;
          if (r && !seen.results.includes(r)) seen.results.push(r);
        }
        for (const el of document.querySelectorAll("#chat-live .live-text")) if (!seen.texts.includes(el.textContent)) seen.texts.push(el.textContent);
      }).observe(document.getElementById("view"), { subtree: true, childList: true, characterData: true });
    });
    await page.locator("#chat-text").fill("attach the spec to the Docs card, then save the plan");
    await page.locator("#chat-files").setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("picked in the browser\n") });
    await page.locator("#chat-paths").fill(process.env.BOSUN_UI_FILE);
    await page.locator("#chat-form button[type=submit]").click();
    await page.waitForFunction(() => [...document.querySelectorAll("#messages .msg.lead")].some((m) => m.textContent.includes("Asked.")));
    const said = await page.locator("#chat-message .flash").first().textContent();
    await page.waitForSelector("#chat-live", { state: "detached" });
    const live = await page.evaluate(() => window.__live);
    // The pending action, inline.
    const item = page.locator("#chat-pending [data-action]").first();
    await item.waitFor();
    const shown = await item.textContent();
    const before = await item.locator("table.diff.side td.del").allTextContents();
    const after = await item.locator("table.diff.side td.add").allTextContents();
    await page.waitForFunction(() => document.title.startsWith("(1)"));
    await item.locator("button.discard").click();
    await page.waitForSelector("#chat-pending [data-action]", { state: "detached" });
    await page.waitForFunction(() => document.title === "bosun");
    const saidDiscarded = await page.locator("#chat-message").textContent();
    await page.goto(`${base}/#/inbox`);
    await page.waitForFunction(() => ((document.getElementById("inbox-history") || {}).textContent || "").includes("discarded"));
    const history = await page.locator("#inbox-history").textContent();
    const waiting = await page.locator("#actions-list [data-action]").count();
    return { said, live, shown, before, after, saidDiscarded, history, waiting };
  },

  // The lead's two actions start waiting while the chat's page is open (sent from it): the tab's
  // title counts them and a browser notification says each (the tab not focused); "Approve all"
  // in the chat approves both.
  async approveall(page) {
    await page.addInitScript(() => {
      window.__notified = [];
      class FakeNotification {
        constructor(title, options) {
          window.__notified.push({ title, body: (options || {}).body || "" });
        }
      }
      FakeNotification.permission = "granted";
      FakeNotification.requestPermission = async () => "granted";
      window.Notification = FakeNotification;
      document.hasFocus = () => false;
    });
    await page.goto(`${base}/#/chat/${process.env.BOSUN_UI_CHAT}`);
    await page.reload();
    await page.waitForSelector("#chat-form");
    await page.locator("#chat-text").fill("save both notes");
    await page.locator("#chat-form button[type=submit]").click();
    await page.waitForFunction(() => document.querySelectorAll("#chat-pending [data-action]").length === 2);
    await page.waitForFunction(() => document.title.startsWith("(2)"));
    const title = await page.title();
    const notified = await page.evaluate(() => window.__notified);
    await page.locator("#chat-pending button.approve-all").click();
    await page.waitForSelector("#chat-pending [data-action]", { state: "detached" });
    await page.waitForFunction(() => document.title === "bosun");
    const said = await page.locator("#chat-message").textContent();
    return { title, notified, said };
  },

  // The board says where a card stands, live: its agent, project and branch, "waiting for
  // you" with a link to its calls in the inbox (BOSUN_UI_CARD's group, marked); approved
  // there, the same card on the board turns done without a reload.
  async board(page) {
    const card = process.env.BOSUN_UI_CARD;
    const kcard = `.kcard[data-card="${card}"]`;
    await page.goto(`${base}/#/board`);
    await page.locator(`${kcard} .card-asks`).waitFor({ timeout });
    const waiting = await page.locator(kcard).textContent();
    await page.locator(`${kcard} .card-asks`).click();
    const group = `#approvals-list [data-group="card:${card}"]`;
    await page.waitForSelector(`${group}.focus .approval`, { timeout });
    const item = page.locator(`${group} .approval`).first();
    const asked = await item.locator(".preview").textContent();
    const hash = await page.evaluate(() => location.hash);
    await item.locator("button.approve").click();
    await item.waitFor({ state: "detached" });
    await page.goto(`${base}/#/board`);
    await page.waitForSelector(`${kcard} .card-state`);
    const after = [await page.locator(`${kcard} .card-state`).textContent()];
    await page.waitForFunction(
      (sel) => (document.querySelector(sel) || { textContent: "" }).textContent.includes("done"),
      `${kcard} .card-state`,
      { timeout },
    );
    after.push(await page.locator(`${kcard} .card-state`).textContent());
    return { waiting, asked, hash, after, done: await page.locator(kcard).textContent() };
  },

  // Opens every page; the page must not throw (checked after every scenario) and must show
  // no error.
  // Every page (and those BOSUN_UI_MORE names, comma-separated): none shows an error, nor
  // "null" where an optional part was left out.
  async pages(page) {
    const shown = {};
    const more = (process.env.BOSUN_UI_MORE || "").split(",").filter(Boolean);
    for (const p of ["runs", "inbox", "board", "projects", "agents", "agents/~new", "mcp", "chat", "usage", "audit", "daemon", ...more]) {
      await page.goto(`${base}/#/${p}`);
      await page.waitForTimeout(700);
      const errors = await page.locator("#view .flash.error").allTextContents();
      if (errors.length) throw new Error(`#/${p} shows an error: ${errors.join("; ")}`);
      // (Data shown as it is, in a <pre> or a log's line, may hold a JSON null.)
      const text = await page.evaluate(() => {
        const view = document.getElementById("view").cloneNode(true);
        for (const raw of view.querySelectorAll("pre, .log-row")) raw.remove();
        return view.textContent;
      });
      if (/\bnull\b/.test(text)) throw new Error(`#/${p} shows "null": ${text.slice(0, 2000)}`);
      shown[p] = text.slice(0, 200);
    }
    return { shown };
  },

  // After an upgrade (tests/tests/upgrade.rs): what the agent `coder`'s page says was carried
  // over from its permission mode, and the Daemon page's Upgrade row.
  async carried(page) {
    await page.goto(`${base}/#/agents/coder`);
    const agent = await page.locator("#agent-carried-over").textContent({ timeout });
    await page.goto(`${base}/#/daemon`);
    const row = page.locator("#view tr", { has: page.locator("th", { hasText: /^Upgrade$/ }) });
    const daemon = await row.locator("td").textContent({ timeout });
    return { agent, daemon };
  },

  // The Usage page: its table by agent, the days its chart has bars for, its table by model,
  // and the Runs page's cost cells.
  async usage(page) {
    await page.goto(`${base}/#/usage`);
    await page.waitForSelector("#usage-table tbody tr", { timeout });
    const cells = (sel) =>
      page.locator(sel).evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
    const rows = await cells("#usage-table tbody tr");
    const bars = await page
      .locator("#usage-chart rect.usage-bar")
      .evaluateAll((rs) => rs.map((r) => [r.getAttribute("data-day"), Number(r.getAttribute("data-value"))]).filter(([, v]) => v > 0));
    await page.selectOption("#usage-by", "model");
    await page.waitForFunction(() => (document.querySelector("#usage-table thead th") || {}).textContent === "Model", null, { timeout });
    const models = await cells("#usage-table tbody tr");
    await page.goto(`${base}/#/runs`);
    await page.waitForSelector("#runs-body tr[data-run]", { timeout });
    const costs = await page.locator("#runs-body tr[data-run] td.cost").allTextContents();
    return { rows, bars, models, costs };
  },

  // A card's or a project's budget on its page (BOSUN_UI_PAGE, the block BOSUN_UI_BLOCK): each
  // of BOSUN_UI_STEPS in turn, `{usd, tokens}` typed and Set or `{off: true}` for its Take it
  // off button; what the form said after each, and what the block shows at the end.
  async budget(page) {
    const block = process.env.BOSUN_UI_BLOCK;
    const message = `${block}-message`;
    await page.goto(`${base}/#/${process.env.BOSUN_UI_PAGE}`);
    await page.waitForSelector(`#${block}-form`);
    const said = [];
    for (const step of JSON.parse(process.env.BOSUN_UI_STEPS || "[]")) {
      // The block is drawn anew after a change, its message saying so; a refusal is said in
      // the block as it was.
      await page.evaluate((id) => (document.getElementById(id).textContent = ""), message);
      if (step.off) await page.click(`#${block}-off`);
      else {
        await page.fill(`#${block}-form input[name=budget_usd]`, step.usd);
        await page.fill(`#${block}-form input[name=budget_tokens]`, step.tokens);
        await page.click(`#${block}-form button[type=submit]`);
      }
      await page.waitForFunction((id) => (document.getElementById(id) || {}).textContent, message);
      said.push(await page.locator(`#${message}`).textContent());
    }
    // A row's lines as the person reads them (each kind of cap spent on a line of its own).
    const rows = await page.locator(`#${block} table.kv tr`).evaluateAll((trs) => trs.map((tr) => [tr.querySelector("th").textContent, tr.querySelector("td").innerText.trim()]));
    const fields = [await page.inputValue(`#${block}-form input[name=budget_usd]`), await page.inputValue(`#${block}-form input[name=budget_tokens]`)];
    return { said, shown: Object.fromEntries(rows), fields };
  },

  // An agent's budget of each run (BOSUN_UI_AGENT): set from its form, then a cap of 0 with
  // another change, refused whole; what the form said each time.
  async agentbudget(page) {
    await page.goto(`${base}/#/agents/${process.env.BOSUN_UI_AGENT}`);
    const form = page.locator("#agent-form");
    await form.waitFor();
    const before = await form.locator('input[name="max-tool-calls"]').inputValue();
    await form.locator('input[name="budget.usd"]').fill("2.5");
    await form.locator('input[name="budget.tokens"]').fill("500000");
    await form.locator('input[name="max-tool-calls"]').fill("");
    await form.locator("#agent-save").click();
    await page.waitForFunction(() => (document.getElementById("agent-form-message") || {}).textContent === "Saved.");
    const f2 = page.locator("#agent-form");
    const shown = [await f2.locator('input[name="budget.usd"]').inputValue(), await f2.locator('input[name="budget.tokens"]').inputValue()];
    await f2.locator('input[name="budget.usd"]').fill("");
    await f2.locator('input[name="max-tool-calls"]').fill("0");
    await f2.locator("#agent-save").click();
    await page.waitForSelector("#agent-form-message .flash.error");
    const refused = await page.locator("#agent-form-message .flash.error").textContent();
    return { before, shown, refused };
  },

  // A run whose call waits: the app opened with no page named goes to the Inbox, whose group is
  // headed by the run's task and agent; the Runs and Agents pages say it waits.
  async waiting(page) {
    await page.goto(`${base}/`);
    await page.waitForFunction(() => location.hash === "#/inbox", null, { timeout });
    const head = page.locator(`section[data-group="run:${run}"] .group-head h2`);
    await page.waitForFunction((sel) => {
      const el = document.querySelector(sel);
      return el && !el.textContent.startsWith("Run");
    }, `section[data-group="run:${run}"] .group-head h2`, { timeout });
    const heading = await head.textContent();
    await page.goto(`${base}/#/runs`);
    const state = page.locator(`tr[data-run="${run}"] .state.st-waiting`);
    await state.waitFor({ timeout });
    const runState = await state.textContent();
    await page.goto(`${base}/#/agents`);
    const chip = page.locator(`tr[data-agent="${process.env.BOSUN_UI_AGENT}"] .waiting`);
    await chip.waitFor({ timeout });
    return { heading, runState, agent: await chip.textContent() };
  },

  // The Audit page: its rows (newest first: number, who, what), and what Verify says.
  async audit(page) {
    await page.goto(`${base}/#/audit`);
    await page.waitForSelector("#audit-table tbody tr[data-n]", { timeout });
    const rows = await page.$$eval("#audit-table tbody tr[data-n]", (trs) =>
      trs.map((tr) => {
        const td = tr.querySelectorAll("td");
        return { n: Number(tr.dataset.n), who: td[2].textContent, what: td[3].textContent };
      }),
    );
    await page.locator("#audit-verify").click();
    await page.waitForSelector("#audit-check p", { timeout });
    const check = await page.locator("#audit-check p").textContent();
    return { rows, check };
  },

  // The Daemon page's row of desktop notifications, before and after its switch is pressed.
  async notify(page) {
    await page.goto(`${base}/#/daemon`);
    const row = page.locator("#view tr", { has: page.locator("th", { hasText: /^Desktop notifications$/ }) });
    const before = await row.locator("td").textContent({ timeout });
    await row.locator("button", { hasText: "Turn off" }).click({ timeout });
    await row.locator("button", { hasText: "Turn on" }).waitFor({ timeout });
    const after = await row.locator("td").textContent({ timeout });
    return { before, after };
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
    await page.goto(`${base}/#/chat/${process.env.BOSUN_UI_CHAT}`);
    await page.waitForSelector("#chat-pending [data-action] table.diff");
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${dir}/chat.png` });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${base}/#/board`);
    await page.waitForTimeout(700);
    await page.screenshot({ path: `${dir}/board.png` });
    await page.goto(`${base}/#/agents/coder`);
    await page.waitForSelector("#agent-form");
    await page.setViewportSize({ width: 1280, height: 1300 });
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${dir}/agent.png` });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${base}/#/mcp/everything`);
    await page.click("#list-tools");
    await page.waitForSelector('#server-tools [data-tool="echo"]');
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${dir}/mcp.png` });
    return { saved: ["runs.png", "run.png", "inbox.png", "run-approval.png", "chat.png", "board.png", "agent.png", "mcp.png"] };
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
    if (acceptConfirm && d.type() === "confirm") {
      d.accept().catch(() => {});
      return;
    }
    dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  page.on("response", (r) => {
    if ((r.headers()["content-type"] || "").startsWith("text/event-stream")) return;
    bodies.push(r.text().then((text) => ({ url: r.url(), text }), () => ({ url: r.url(), text: "" })));
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

