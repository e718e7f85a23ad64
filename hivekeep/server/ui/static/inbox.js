// The review inbox: writes agents made that wait for a person (agents configure --review).
// Each held write shows its agent, where it came from and its text; Approve writes it (as it is,
// or edited in the box), Reject drops it. The sidebar's badge counts what waits.
import { api } from "./api.js";
import { h } from "./dom.js";

export async function pendingCount() {
  try {
    return (await api("/review")).length;
  } catch {
    return null; // a scoped token may not review: no badge
  }
}

function describe(held) {
  if (held.operation === "memorize") return held.fields.content;
  const changes = Object.entries(held.fields).map(([key, value]) => `${key}: ${value}`);
  return `Change memory #${held.memory_id} — ${changes.join("; ")}`;
}

function item(held, refresh) {
  const text = h("textarea", {
    rows: 3, maxlength: 10000, "aria-label": `Text of held write ${held.id}`,
  });
  text.value = held.fields.content ?? "";
  const error = h("p", { class: "error", role: "alert" });
  const act = async (path, body) => {
    error.textContent = "";
    try {
      await api(`/review/${held.id}/${path}`, { method: "POST", body });
      await refresh();
    } catch (failure) {
      error.textContent = failure.message;
    }
  };
  const edited = () => (held.operation === "memorize" && text.value !== held.fields.content
    ? { content: text.value } : {});
  const scope = held.fields.scope ?? "";
  return h("li", { class: "card pending", "data-pending": String(held.id) },
    h("div", { class: "badges" },
      h("span", { class: "badge" }, held.agent ?? `agent ${held.agent_id}`),
      h("span", { class: "badge" }, held.source === "maintenance" ? "from a conversation" : "by the agent"),
      scope ? h("span", { class: `badge ${scope}` }, scope) : null,
      h("span", { class: "badge id" }, held.created_at.slice(0, 16).replace("T", " "))),
    held.operation === "memorize" ? text : h("p", {}, describe(held)),
    h("div", { class: "row" },
      h("button", { type: "button", onclick: () => act("approve", edited()) }, "Approve"),
      h("button", { type: "button", class: "secondary", onclick: () => act("reject") }, "Reject")),
    error);
}

export async function inboxView(main, onCount) {
  const list = h("ul", { class: "cards", id: "inbox" });
  const empty = h("p", { class: "hint" }, "Nothing waits for review.");
  async function refresh() {
    const held = await api("/review");
    list.replaceChildren(...held.map((p) => item(p, refresh)));
    empty.hidden = held.length > 0;
    onCount(held.length);
  }
  main.replaceChildren(
    h("h2", {}, "Inbox"),
    h("p", { class: "hint" }, "Writes of agents set to review (hivekeep agents configure NAME --review shared|all). "
      + "Nothing here is recalled, listed or shared until you approve it."),
    empty, list);
  await refresh();
  return { onEvent: (type) => { if (type === "review:changed") refresh(); } };
}
