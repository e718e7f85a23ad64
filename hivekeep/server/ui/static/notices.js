// What the server says about a memory, shown rather than dropped: the outcome of a write
// (saved, or already known as #N; the similar memories it may outdate), a newer near-twin that
// may supersede a memory, and how well a search hit matches.
import { h } from "./dom.js";

const day = (stamp) => (stamp || "").slice(0, 10);

// A link to memory #id of the open agent; ``ctx.focus`` scrolls to it (fetching it if it is not
// on the page), the href keeps it a real link (new tab, copy).
export function memoryLink(ctx, id, text = `#${id}`) {
  return h("a", {
    href: `#/agents/${ctx.agent.id}/memory/${id}`, class: "memory-link", "data-memory": String(id),
    onclick: (event) => { event.preventDefault(); ctx.focus(id); },
  }, text);
}

// ``written``: the POST /memories answer (memory, duplicate, reworded?, similar?,
// merged_as_version?).
export function writeNotice(ctx, written) {
  const { memory } = written;
  const head = written.reworded
    ? h("p", {}, "Reworded ", memoryLink(ctx, memory.id),
      ": the same fact, now in the words you typed. Its previous text is kept in its history.")
    : written.duplicate
      ? h("p", {}, "Already known as ", memoryLink(ctx, memory.id), `: “${memory.content}”. `,
        written.merged_as_version
          ? `The text you typed was kept as version ${written.merged_as_version} of its history.`
          : "Nothing new was saved.")
      : h("p", {}, "Saved as ", memoryLink(ctx, memory.id), ".");
  const similar = written.similar || [];
  return h("div", { class: `write-result${written.duplicate ? " duplicate" : ""}`, role: "status" },
    head,
    similar.length ? h("p", {}, "Similar memories, which this one may update or contradict:") : null,
    similar.length ? h("ul", { class: "similar" }, similar.map((s) => h("li", {},
      memoryLink(ctx, s.id), ` “${s.content}” (${s.author}, ${day(s.created_at)})`))) : null);
}

// ``memory.newer``: a later near-twin that may supersede this memory.
export function newerLine(ctx, newer) {
  return h("p", { class: "newer" }, "newer: ", memoryLink(ctx, newer.id),
    ` “${newer.content}” (${day(newer.created_at)})`);
}

export const RELEVANCE_HELP = "Search results are ranked best first by fusing a search by " +
  "meaning with a search by words. Strong match: holds every word of the search, or is close " +
  "to it in meaning. Weak match: shares only some words, or is only faintly related.";

// The hit's match in words (the fused score orders the list; it is no similarity to show).
export function relevanceBadge(memory) {
  const strong = memory.match === "strong";
  const found = (memory.found_by || []).map((arm) => ({
    vector: "meaning", text: "every word", text_partial: "some words",
  })[arm] || arm).join(" + ");
  return h("span", {
    class: `badge match ${strong ? "strong" : "weak"}`,
    title: `${RELEVANCE_HELP}${found ? ` Found by: ${found}.` : ""}`,
  }, strong ? "strong match" : "weak match");
}
