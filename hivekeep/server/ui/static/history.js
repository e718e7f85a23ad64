// History and Trash views: versions with a readable word diff and Restore buttons, and the trash.
import { api } from "./api.js";
import { h } from "./dom.js";

// A word-level diff of two texts: [{op: "same" | "add" | "del", text}], by longest common run.
export function diffWords(before, after) {
  const a = before.split(/(\s+)/), b = after.split(/(\s+)/);
  const n = a.length, m = b.length;
  const table = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const parts = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { parts.push({ op: "same", text: a[i] }); i++; j++; }
    else if (j < m && (i === n || table[i][j + 1] >= table[i + 1][j])) { parts.push({ op: "add", text: b[j] }); j++; }
    else { parts.push({ op: "del", text: a[i] }); i++; }
  }
  return parts;
}

// Each change between unchanged runs as one <del> (the old words) then one <ins> (the new), not
// interleaved word by word; diffView keeps them apart by a space ("10am 11am", not "10am11am").
// The text keeps its line breaks (white-space: pre-wrap in the stylesheet).
export function diffRuns(before, after) {
  const runs = [];
  let change = null;
  for (const { op, text } of diffWords(before, after)) {
    if (op === "same") {
      change = null;
      const last = runs[runs.length - 1];
      if (last?.op === "same") last.text += text; else runs.push({ op, text });
    } else {
      if (!change) {
        change = { del: { op: "del", text: "" }, add: { op: "add", text: "" } };
        runs.push(change.del, change.add);
      }
      change[op].text += text;
    }
  }
  return runs.filter((run) => run.text);
}

function diffView(before, after) {
  const runs = diffRuns(before, after);
  return h("p", { class: "diff" }, ...runs.flatMap(({ op, text }, index) => {
    if (op === "same") return [text];
    const node = h(op === "add" ? "ins" : "del", { title: op === "add" ? "added" : "removed" }, text);
    return op === "add" && runs[index - 1]?.op === "del" ? [" ", node] : [node];
  }));
}

// ``versions`` newest first; ``key`` is "content" (a memory) or "text" (a profile).
export function historyList(versions, key, restore) {
  return h("ol", { class: "history", "aria-label": "History" }, ...versions.map((version, index) => {
    const older = versions[index + 1];
    return h("li", { class: "version", "data-version": version.version },
      h("div", { class: "badges" },
        h("strong", {}, `v${version.version}`),
        h("span", { class: "badge" }, version.operation),
        h("span", { class: "badge" }, `by ${version.changed_by}`),
        h("small", {}, version.changed_at.slice(0, 19).replace("T", " "))),
      older ? diffView(older[key], version[key]) : h("p", { class: "diff" }, version[key] || "(empty)"),
      index === 0 ? null : h("button", { type: "button", class: "secondary",
        "aria-label": `Restore version ${version.version}`,
        onclick: () => restore(version.version) }, "Restore"));
  }));
}

// The agent's trash: forgotten memories with a Restore button each.
export function trashView(agent, onRestored) {
  const list = h("ul", { class: "memories trash", "aria-label": "Trash" });
  const summary = h("p", { role: "status" });
  async function load() {
    const page = await api(`/agents/${agent.id}/trash`);
    summary.textContent = page.total ? `${page.total} forgotten, restorable` : "The trash is empty.";
    list.replaceChildren(...page.memories.map((memory) => h("li", { class: "memory" },
      h("p", { class: "content" }, memory.content),
      h("small", {}, `forgotten ${memory.deleted_at.slice(0, 19).replace("T", " ")} by ${memory.deleted_by}`),
      h("div", { class: "row" }, h("button", { type: "button", class: "secondary",
        "aria-label": `Restore memory ${memory.id}`, onclick: async () => {
          await api(`/agents/${agent.id}/memories/${memory.id}/restore`, { method: "POST", body: {} });
          await load();
          onRestored();
        } }, "Restore")))));
  }
  const section = h("details", { class: "trash-view" }, h("summary", {}, "Trash"), summary, list);
  section.addEventListener("toggle", () => { if (section.open) load(); });
  return { section, load: () => (section.open ? load() : Promise.resolve()) };
}
