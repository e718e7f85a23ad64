// Memory tab: the profile editor (with a live ≈ token estimate) and the searchable archive.
import { api } from "./api.js";
import { h, field, options, CATEGORIES, SCOPES } from "./dom.js";
import { historyList, trashView } from "./history.js";
import { memoryLink, newerLine, relevanceBadge, writeNotice, RELEVANCE_HELP } from "./notices.js";

const PAGE = 20;
const COUNT_DELAY_MS = 200; // the server counts the text a moment after typing stops

function profileEditor(agent) {
  const text = h("textarea", { rows: 12, class: "profile-text", spellcheck: true, disabled: true });
  const gauge = h("p", { class: "gauge", "aria-live": "polite" });
  const message = h("p", { role: "status", class: "result" });
  const save = h("button", { type: "submit" }, "Save profile");
  const regenerate = h("button", { type: "button", class: "secondary" }, "Regenerate");
  const historyButton = h("button", { type: "button", class: "secondary" }, "History");
  const history = h("div", { class: "profile-history" });
  let profile = null;
  let dirty = false;
  let tokens = 0; // the server's count of the text as typed (the tokenizer the budget uses)
  let counting = null;

  function showGauge() {
    const over = tokens > profile.budget;
    gauge.className = `gauge${over ? " over" : ""}`;
    gauge.textContent = `${tokens.toLocaleString("en")} / ${profile.budget.toLocaleString("en")} tokens` +
      (over ? " — over budget" : "");
  }
  function recount() {
    clearTimeout(counting);
    counting = setTimeout(async () => {
      const typed = text.value;
      const counted = await api("/tokens", { method: "POST", body: { text: typed } });
      if (typed !== text.value) return; // typed on meanwhile: the next count will come
      tokens = counted.tokens;
      showGauge();
    }, COUNT_DELAY_MS);
  }
  async function load(force = false) {
    if (dirty && !force) return;
    profile = await api(`/agents/${agent.id}/profile`);
    text.value = profile.text;
    text.disabled = false; // editable once the server's version is in
    dirty = false;
    tokens = profile.tokens;
    showGauge();
  }
  function report(ok, textContent) {
    message.className = `result ${ok ? "ok" : "error"}`;
    message.setAttribute("role", ok ? "status" : "alert");
    message.textContent = textContent;
  }
  text.addEventListener("input", () => { dirty = true; recount(); });

  const form = h("form", { class: "stack profile", onsubmit: async (event) => {
    event.preventDefault();
    save.disabled = true;
    try {
      profile = await api(`/agents/${agent.id}/profile`, { method: "PUT",
        body: { text: text.value, expected_revision: profile.revision } });
      dirty = false;
      text.value = profile.text;
      tokens = profile.tokens;
      showGauge();
      report(true, `Saved (${profile.tokens} tokens).`);
    } catch (error) {
      report(false, `Not saved (${error.status}): ${error.message}`);
    }
    save.disabled = false;
  } },
  h("h3", {}, "Profile"), ...field("Profile document (markdown)", text), gauge,
  h("div", { class: "row" }, save, regenerate, historyButton), message, history);

  // ``focus``: a version to point at (a compaction card's link), its diff scrolled into view.
  async function showHistory(focus = null) {
    const versions = await api(`/agents/${agent.id}/profile/history`);
    history.replaceChildren(h("h4", {}, "Profile history"), historyList(versions, "text", async (version) => {
      await api(`/agents/${agent.id}/profile/restore`, { method: "POST", body: { version } });
      await load(true);
      report(true, `Restored version ${version}.`);
      await showHistory();
    }));
    const entry = focus === null ? null : history.querySelector(`li[data-version="${focus}"]`);
    if (focus !== null && !entry) report(false, `Version ${focus} is no longer in the history.`);
    entry?.classList.add("focus");
    entry?.setAttribute("aria-current", "true");
    entry?.scrollIntoView({ block: "center" });
  }
  historyButton.addEventListener("click", () => (history.childElementCount ? history.replaceChildren() : showHistory()));

  regenerate.addEventListener("click", async () => {
    if (!confirm("Rewrite the profile from the archive? Pinned lines are kept; your other edits are replaced.")) return;
    regenerate.disabled = true;
    report(true, "Regenerating…");
    try {
      const outcome = await api(`/agents/${agent.id}/profile/regenerate`, { method: "POST" });
      await load(true);
      const notes = outcome.notes.length ? ` (${outcome.notes.join("; ")})` : "";
      report(true, (outcome.updated ? "Profile regenerated." : "Regenerated: no change.") + notes);
    } catch (error) {
      report(false, `Regenerate failed: ${error.message}`);
    }
    regenerate.disabled = false;
  });
  return { form, load, showHistory };
}

// ``ctx``: {agent, reload, focus} of the archive the item is listed in.
function memoryItem(ctx, memory) {
  const { agent, reload } = ctx;
  const own = !memory.shared_by;
  const weak = memory.match === "weak" ? " weak" : "";
  const item = h("li", { class: `memory${weak}`, "data-id": String(memory.id) });
  const badges = h("div", { class: "badges" },
    h("span", { class: "badge id" }, `#${memory.id}`),
    h("span", { class: "badge" }, memory.category),
    memory.subject ? h("span", { class: "badge" }, memory.subject) : null,
    memory.scope === "shared" ? h("span", { class: "badge shared" }, own ? "shared" : `shared by ${memory.shared_by}${memory.author_deleted ? " (deleted)" : ""}`) : null,
    memory.importance ? h("span", { class: "badge", title: "importance" }, `★ ${memory.importance}`) : null,
    h("span", { class: "badge", title: "times recalled" }, `recalled ${memory.retrieval_count}×`),
    memory.match ? relevanceBadge(memory) : null,
    h("small", {}, memory.age));
  const actions = own ? h("div", { class: "row" },
    h("button", { type: "button", class: "secondary", onclick: () => edit() }, "Edit"),
    h("button", { type: "button", class: "secondary", "aria-label": `History of memory ${memory.id}`, onclick: () => showHistory() }, "History"),
    h("button", { type: "button", class: "danger", "aria-label": `Delete memory ${memory.id}`, onclick: async () => {
      if (!confirm("Delete this memory?")) return;
      await api(`/agents/${agent.id}/memories/${memory.id}`, { method: "DELETE" });
      reload();
    } }, "Delete")) : memory.author_deleted ? h("div", { class: "row" },
    // no agent owns it any more: deleting it is the person's call (the hive-level route)
    h("button", { type: "button", class: "danger", "aria-label": `Delete memory ${memory.id}`, onclick: async () => {
      if (!confirm(`Delete this shared memory of ${memory.shared_by} (deleted) for every agent?`)) return;
      await api(`/memories/${memory.id}`, { method: "DELETE" });
      reload();
    } }, "Delete")) : null;
  // h() drops the absent parts (Element.append would write them out as the text "null")
  // a search hit says why it was found: how well it matches, and by which search
  const why = memory.why ? h("small", { class: "why" }, memory.why) : null;
  item.replaceChildren(...h("div", {}, h("p", { class: "content" }, memory.content), badges, why,
    memory.newer ? newerLine(ctx, memory.newer) : null, actions).childNodes);

  async function showHistory() {
    const versions = await api(`/agents/${agent.id}/memories/${memory.id}/history`);
    const close = h("button", { type: "button", class: "secondary", onclick: () => reload() }, "Close history");
    item.replaceChildren(h("p", { class: "content" }, memory.content), historyList(versions, "content", async (version) => {
      await api(`/agents/${agent.id}/memories/${memory.id}/restore`, { method: "POST", body: { version } });
      reload();
    }), close);
  }

  function edit() {
    const form = memoryForm(memory, async (body) => {
      await api(`/agents/${agent.id}/memories/${memory.id}`, { method: "PATCH", body });
      reload();
    }, "Save changes", () => item.replaceWith(memoryItem(ctx, memory)));
    item.replaceChildren(form);
    form.querySelector("textarea").focus();
  }
  return item;
}

// The add / edit form; ``submit(body)`` may throw an ApiError, shown under the form.
function memoryForm(memory, submit, label, cancel) {
  const content = h("textarea", { rows: 2, required: true, maxlength: 2000 });
  content.value = memory?.content || "";
  const category = h("select", {}, options(CATEGORIES, memory?.category || "fact"));
  const subject = h("input", { maxlength: 200, value: memory?.subject || "" });
  const importance = h("input", { type: "number", min: 1, max: 10, value: memory?.importance || "" });
  const scope = h("select", {}, options(SCOPES, memory?.scope || "private"));
  const error = h("p", { class: "error", role: "alert" });
  const outcome = h("div", { class: "outcome" }); // what the server said of the write, if anything
  return h("form", { class: "stack memory-form", onsubmit: async (event) => {
    event.preventDefault();
    error.textContent = "";
    outcome.replaceChildren();
    try {
      const shown = await submit({
        content: content.value, category: category.value, scope: scope.value,
        subject: subject.value.trim() || null,
        importance: importance.value ? Number(importance.value) : null,
      });
      if (!memory) event.target.reset();
      if (shown) outcome.replaceChildren(shown);
    } catch (failure) {
      error.textContent = failure.message;
    }
  } },
  ...field("Content", content),
  h("div", { class: "row wrap" },
    h("div", { class: "stack" }, ...field("Category", category)),
    h("div", { class: "stack" }, ...field("Subject", subject)),
    h("div", { class: "stack" }, ...field("Importance (1-10)", importance)),
    h("div", { class: "stack" }, ...field("Scope", scope))),
  h("div", { class: "row" }, h("button", { type: "submit" }, label),
    cancel ? h("button", { type: "button", class: "secondary", onclick: cancel }, "Cancel") : null),
  error, outcome);
}

function archive(agent) {
  const query = h("input", { type: "search", maxlength: 1000, placeholder: "Search memories" });
  const category = h("select", {}, options(CATEGORIES, "", "any category"));
  const subject = h("input", { maxlength: 200, placeholder: "any subject" });
  const scope = h("select", {}, options(SCOPES, "", "any scope"));
  const list = h("ul", { class: "memories", "aria-label": "Memories" });
  const summary = h("p", { role: "status" });
  const legend = h("p", { class: "hint legend", hidden: true }, RELEVANCE_HELP);
  const previous = h("button", { type: "button", class: "secondary" }, "Previous");
  const next = h("button", { type: "button", class: "secondary" }, "Next");
  let offset = 0;

  async function load(live = false) {
    const params = new URLSearchParams({ limit: PAGE, offset });
    for (const [name, input] of Object.entries({ query, category, subject, scope })) {
      if (input.value.trim()) params.set(name, input.value.trim());
    }
    try {
      const page = await api(`/agents/${agent.id}/memories?${params}`);
      if (live && list.querySelector("form, .history")) return; // an edit or history is open: keep it
      const focused = list.querySelector(".memory.focus")?.dataset.id; // a refresh keeps it
      list.replaceChildren(...page.memories.map((m) => memoryItem(ctx, m)));
      if (focused) list.querySelector(`li[data-id="${focused}"]`)?.classList.add("focus");
      legend.hidden = !params.has("query") || !page.memories.length;
      const shown = page.memories.length;
      summary.textContent = shown ? `${offset + 1}–${offset + shown} of ${page.total}` +
        (page.warning ? ` (${page.warning})` : "") : "No memories match.";
      previous.disabled = offset === 0;
      next.disabled = !page.has_more;
    } catch (error) {
      summary.textContent = error.message;
    }
  }
  previous.addEventListener("click", () => { offset = Math.max(0, offset - PAGE); load(); });
  next.addEventListener("click", () => { offset += PAGE; load(); });
  const search = h("form", { class: "row wrap filters", role: "search", onsubmit: (event) => {
    event.preventDefault();
    offset = 0;
    load();
  } },
  h("div", { class: "stack grow" }, ...field("Search", query)),
  h("div", { class: "stack" }, ...field("Category", category)),
  h("div", { class: "stack" }, ...field("Subject", subject)),
  h("div", { class: "stack" }, ...field("Scope", scope)),
  h("button", { type: "submit" }, "Search"));
  const add = memoryForm(null, async (body) => {
    const written = await api(`/agents/${agent.id}/memories`, { method: "POST", body });
    offset = 0;
    await load();
    return writeNotice(ctx, written);
  }, "Add memory");
  const section = h("section", { class: "archive" }, h("h3", {}, "Archive"),
    h("details", {}, h("summary", {}, "Add a memory"), add),
    search, summary, legend, list, h("div", { class: "row" }, previous, next));

  // Memory #id scrolled to and outlined; fetched and shown first when not on this page.
  async function focus(id) {
    let item = list.querySelector(`li[data-id="${id}"]`);
    if (!item) {
      try {
        item = memoryItem(ctx, await api(`/agents/${agent.id}/memories/${id}`));
      } catch (error) {
        summary.textContent = `Memory #${id}: ${error.message}`;
        return;
      }
      list.prepend(item);
    }
    for (const old of list.querySelectorAll(".memory.focus")) old.classList.remove("focus");
    item.classList.add("focus");
    item.scrollIntoView({ block: "center" });
    item.querySelector(".content").setAttribute("tabindex", "-1");
    item.querySelector(".content").focus({ preventScroll: true });
  }
  const ctx = { agent, reload: () => load(), focus };
  // A live refresh must not throw away an edit in progress (a save reloads anyway).
  const trash = trashView(agent, () => load());
  section.append(trash.section);
  const refresh = () => { trash.load(); if (!list.querySelector("form, .history")) load(true); };
  return { section, load, refresh, focus };
}

export async function memoryView(panel, agent) {
  const editor = profileEditor(agent);
  const memories = archive(agent);
  panel.append(h("div", { class: "memory-tab" }, editor.form, memories.section));
  await Promise.all([editor.load(), memories.load()]);
  const linked = location.hash.match(/\/memory\/profile\/(\d+)$/); // from a compaction card
  if (linked) await editor.showHistory(Number(linked[1]));
  const memory = location.hash.match(/\/memory\/(\d+)$/); // a link to one memory (#N)
  if (memory) await memories.focus(Number(memory[1]));
  let timer = null;
  return {
    onEvent(type) {
      if (type === "profile:updated" || type === "hive:changed") editor.load();
      if (type.startsWith("memory:") || type === "hive:changed") {
        clearTimeout(timer);
        timer = setTimeout(memories.refresh, 200);
      }
    },
  };
}
