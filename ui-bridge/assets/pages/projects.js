// Projects: the list and adding one (a git checkout); one project's page: its setup, edit,
// the person's switches (its cards are tested before review; the lead may merge its cards'
// pull requests, off unless the person sets it here or with `bosun project set`), its daily
// budget and today's spending against it, set and taken off (`budget.js`), remove.

import { call } from "../api.js";
import { sharedBudget } from "../budget.js";
import { clear, flash, h, when } from "../dom.js";
import { field, formMessage, text } from "../forms.js";

export function mount(root, [name]) {
  return name ? projectPage(root, name) : listPage(root);
}

function host(hst) {
  if (!hst) return "";
  if (hst.kind === "github") return `GitHub ${hst.repo}`;
  if (hst.kind === "other") return hst.host;
  return "no origin remote";
}

function listPage(root) {
  const msg = h("div", { id: "projects-message" });
  const body = h("tbody", { id: "projects-body" });
  const out = formMessage("project-add-message");
  const f = {
    name: text({ name: "name", placeholder: "name", required: true }),
    folder: text({ name: "folder", placeholder: "/path/to/a/git/checkout", size: 40 }),
    main: text({ name: "main_branch", placeholder: "main branch (found when empty)" }),
    github: text({ name: "github", placeholder: "owner/name (when origin does not say)" }),
    testing: h("input", { type: "checkbox", name: "testing", checked: true }),
  };
  const form = h(
    "form",
    { id: "project-add-form", class: "card form", onsubmit: add },
    h("h2", null, "Add a project"),
    field("Name", f.name),
    field("Folder", f.folder, "a git checkout; its top folder is taken"),
    field("Main branch", f.main),
    field("GitHub", f.github),
    h("label", { class: "switch" }, f.testing, "Its cards are tested before review"),
    h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, "Add")),
    out.el,
  );
  root.append(
    h("div", { class: "page-head" }, h("h1", null, "Projects")),
    msg,
    h("table", { class: "list" }, h("thead", null, h("tr", null, ["Project", "Folder", "Main branch", "Host", "Testing", "Lead may merge", "Cards"].map((c) => h("th", null, c)))), body),
    form,
  );

  async function add(e) {
    e.preventDefault();
    try {
      const p = await call("project_add", {
        name: f.name.value.trim(),
        folder: f.folder.value.trim(),
        main_branch: f.main.value.trim() || null,
        github: f.github.value.trim() || null,
        testing: f.testing.checked,
      });
      form.reset();
      out.ok(`Added ${p.name}.`);
      load();
    } catch (err) {
      out.error(err.message);
    }
  }

  async function load() {
    try {
      const r = await call("project_list");
      clear(body);
      for (const p of r.projects)
        body.append(
          h(
            "tr",
            { dataset: { project: p.name } },
            h("td", null, h("a", { href: `#/projects/${encodeURIComponent(p.name)}` }, p.name)),
            h("td", { class: "mono" }, p.folder),
            h("td", null, p.main_branch),
            h("td", null, host(p.host)),
            h("td", null, p.testing ? "on" : "off"),
            h("td", { class: "lead-may-merge" }, p.lead_may_merge ? "yes" : "no"),
            h("td", null, String(p.cards)),
          ),
        );
      if (!r.projects.length) body.append(h("tr", null, h("td", { colspan: 7, class: "muted" }, "No projects yet.")));
    } catch (err) {
      flash(msg, err.message, true);
    }
  }
  load();
}

function projectPage(root, name) {
  const msg = h("div", { id: "project-message" });
  const box = h("div");
  root.append(msg, box);

  async function load() {
    let p;
    try {
      p = await call("project_show", { project: name });
    } catch (e) {
      flash(msg, e.message, true);
      return;
    }
    draw(p);
  }

  function draw(p) {
    clear(box);
    const out = formMessage("project-form-message");
    const switchOut = formMessage("project-switch-message");
    const f = {
      name: text({ name: "name", value: p.name }),
      folder: text({ name: "folder", value: p.folder, size: 50 }),
      main: text({ name: "main_branch", value: p.main_branch }),
      github: text({ name: "github", value: p.host.kind === "github" ? p.host.repo : "", placeholder: "owner/name; empty reads origin again" }),
    };
    const testing = h("input", { type: "checkbox", name: "testing", checked: p.testing });
    const merge = h("input", { type: "checkbox", name: "lead-may-merge", id: "lead-may-merge", checked: p.lead_may_merge });
    const form = h(
      "form",
      { id: "project-form", class: "card form", onsubmit: save },
      h("h2", null, "Edit"),
      field("Name", f.name),
      field("Folder", f.folder),
      field("Main branch", f.main),
      field("GitHub", f.github),
      h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, "Save")),
      out.el,
    );
    const switches = h(
      "form",
      { id: "project-switches", class: "card form", onsubmit: setSwitches },
      h("h2", null, "Switches"),
      h("label", { class: "switch" }, testing, "Its cards are tested (QA) before review"),
      h("label", { class: "switch" }, merge, "The lead may merge its cards' pull requests"),
      h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, "Apply")),
      switchOut.el,
    );
    box.append(
      h("div", { class: "page-head" }, h("h1", null, "Project ", p.name), h("a", { href: "#/projects" }, "all projects"), h("button", { class: "danger", id: "project-remove", onclick: remove }, "Remove")),
      h(
        "table",
        { class: "kv", id: "project-info" },
        [
          ["Folder", p.folder],
          ["Main branch", p.main_branch],
          ["Host", host(p.host)],
          ["Testing", p.testing ? "on" : "off"],
          ["Lead may merge", p.lead_may_merge ? "yes" : "no"],
          ["Cards", String(p.cards)],
          ["Added", when(p.created_at)],
        ].map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v))),
      ),
      switches,
      sharedBudget({
        id: "project-budget",
        view: p.daily_budget,
        per: "a day (UTC), for the runs of its cards created that day",
        spentWhen: "today",
        save: async (edit) => draw(await call("project_edit", { project: p.name, daily_budget_micro_usd: edit.micro_usd, daily_budget_tokens: edit.tokens })),
      }),
      form,
    );

    async function save(e) {
      e.preventDefault();
      const q = { project: p.name };
      if (f.name.value.trim() !== p.name) q.name = f.name.value.trim();
      if (f.folder.value.trim() !== p.folder) q.folder = f.folder.value.trim();
      if (f.main.value.trim() !== p.main_branch) q.main_branch = f.main.value.trim();
      if (f.github.value.trim() !== (p.host.kind === "github" ? p.host.repo : "")) q.github = f.github.value.trim();
      if (Object.keys(q).length === 1) return out.ok("Nothing changed.");
      try {
        const next = await call("project_edit", q);
        if (next.name !== name) {
          location.hash = `#/projects/${encodeURIComponent(next.name)}`;
          return;
        }
        draw(next);
        flash(document.getElementById("project-form-message"), "Saved.");
      } catch (err) {
        out.error(err.message);
      }
    }

    async function setSwitches(e) {
      e.preventDefault();
      const settings = [];
      if (testing.checked !== p.testing) settings.push(`testing=${testing.checked ? "on" : "off"}`);
      if (merge.checked !== p.lead_may_merge) settings.push(`lead-may-merge=${merge.checked ? "on" : "off"}`);
      if (!settings.length) return switchOut.ok("Nothing changed.");
      try {
        draw(await call("project_set", { project: p.name, settings }));
        flash(document.getElementById("project-switch-message"), "Applied.");
      } catch (err) {
        switchOut.error(err.message);
      }
    }

    async function remove(e) {
      if (!confirm(`Remove the project ${p.name}? Its checkout is not touched.`)) return;
      e.target.disabled = true;
      try {
        await call("project_remove", { project: p.name });
        location.hash = "#/projects";
      } catch (err) {
        flash(msg, err.message, true);
        e.target.disabled = false;
      }
    }
  }

  load();
}
