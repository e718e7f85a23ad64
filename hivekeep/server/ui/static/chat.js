// Chat tab: conversations, streamed replies, the context-usage bar and live compaction cards.
import { api, streamPost } from "./api.js";
import { h, field } from "./dom.js";

const number = (n) => n.toLocaleString("en");
const count = (n, one, many) => `${number(n)} ${n === 1 ? one : many}`;
// Shown instead of a send that would fail: what is missing, and where it is set.
const NO_MODEL = "This agent has no chat model yet, so it cannot reply or compact. Choose one in " +
  "the Settings tab, or start the server with HIVEKEEP_LLM set (README → Configuration).";

// What is typed but not sent, per agent and conversation: it survives a tab switch and a reload.
const drafts = {
  key: (agentId, conversationId) => `hivekeep.draft.${agentId}.${conversationId}`,
  get: (agentId, conversationId) => localStorage.getItem(drafts.key(agentId, conversationId)) || "",
  set(agentId, conversationId, text) {
    if (text) localStorage.setItem(drafts.key(agentId, conversationId), text);
    else localStorage.removeItem(drafts.key(agentId, conversationId));
  },
};
// A failed turn keeps its message stored; the server answers a resend of it in place.
const UNANSWERED = "Not answered: the model failed. Send it again to retry (it is not stored twice).";

// The profile History entry a compaction's rewrite wrote (memory.js opens it, with its diff).
const profileDiff = (agentId, version) => `#/agents/${agentId}/memory/profile/${version}`;

// One compaction, as a card: running (pass, stage) → done (numbers, summary) → or the error.
export function compactionCard(state, agentId) {
  const card = h("article", {
    class: `card compaction ${state.status}`, "aria-live": "polite", "data-record": state.record_id,
  });
  const add = (...parts) => card.append(...parts.filter(Boolean));
  if (state.status === "running") {
    add(h("strong", {}, "Compacting…"),
      h("span", {}, ` pass ${state.pass_number || 1}${state.stage ? ` · ${state.stage}` : ""}`));
  } else if (state.status === "error") {
    add(h("strong", {}, "Compaction failed: "), h("span", {}, state.error || "unknown error"));
  } else if (state.status === "nothing") {
    add(h("strong", {}, "Nothing to compact"), h("span", {}, " — the history is already short."));
  } else {
    add(
      h("strong", {}, "Compacted"),
      h("ul", { class: "facts" },
        h("li", {}, `${count(state.messages_folded, "message", "messages")} folded`),
        h("li", {}, `${count(state.memories_extracted, "memory", "memories")} extracted`),
        h("li", {}, !state.profile_updated ? "profile unchanged"
          : state.profile_version == null ? "profile updated"
          : h("a", { class: "profile-diff", href: profileDiff(agentId, state.profile_version) },
            `profile updated (v${state.profile_version_before} → v${state.profile_version}): see the change`))),
      state.maintenance_error ? h("p", { class: "error" }, `Maintenance failed (retried later): ${state.maintenance_error}`) : null,
      state.summary ? h("details", {}, h("summary", {}, "Summary"), h("p", { class: "summary" }, state.summary)) : null);
  }
  return card;
}

function messageItem(message, agentId) {
  if (message.is_compaction_record) {
    return compactionCard({ status: "done", ...message.record, record_id: message.id }, agentId);
  }
  if (message.role === "system") return null;
  const folded = message.summary_id !== null ? " folded" : "";
  if (message.role === "tool") {
    return h("details", { class: `msg tool${folded}` },
      h("summary", {}, `tool result: ${message.tool_name}`), h("pre", {}, message.content));
  }
  const calls = (message.tool_calls || []).map((c) => h("div", { class: "call" }, `→ ${c.name}(${c.arguments})`));
  const who = message.role === "user" ? message.speaker || "you" : "agent";
  return h("div", { class: `msg ${message.role}${folded}` },
    h("span", { class: "who" }, who), h("div", { class: "text" }, message.content), calls);
}

function contextBar(ctx) {
  if (!ctx.window) return h("span"); // no model: the composer says so, once
  const used = Math.min(100, (100 * ctx.tokens) / ctx.window);
  return h("div", { class: "context" },
    h("div", {
      class: `bar${used >= ctx.threshold_percent ? " over" : ""}`, role: "meter",
      "aria-label": "Context usage", "aria-valuemin": "0", "aria-valuemax": String(ctx.window),
      "aria-valuenow": String(ctx.tokens),
    }, h("div", { class: "fill", style: `width:${used}%` }),
      h("div", { class: "marker", style: `left:${ctx.threshold_percent}%`, title: "compaction threshold" })),
    h("small", {}, `${number(ctx.tokens)} / ${number(ctx.window)} tokens (${used.toFixed(0)}%) · compacts at ${ctx.threshold_percent}%`),
    // why nothing happens yet (under the trigger, or too little old enough to fold)
    ctx.waiting ? h("small", { class: "waiting" }, ctx.waiting) : null);
}

export async function chatView(panel, agent) {
  const list = h("ul", { class: "conversations", "aria-label": "Conversations" });
  const log = h("div", { class: "log", role: "log", "aria-label": "Messages" });
  const usage = h("div", { class: "usage" });
  const notice = h("p", { class: "error", role: "alert" });
  const input = h("textarea", { rows: 2, maxlength: 100000, required: true });
  const send = h("button", { type: "submit" }, "Send");
  const compact = h("button", { type: "button", class: "secondary" }, "Force compact");
  const undone = h("p", { class: "undo", role: "status" });
  const trashList = h("ul", { class: "conversation-trash", "aria-label": "Deleted conversations" });
  const trashSummary = h("summary", {}, "Deleted conversations");
  const trash = h("details", { class: "trash", hidden: true }, trashSummary, trashList);
  let conversation = null;
  let sending = false; // this tab streams the turn itself: the bus's copy of it is skipped
  let remote = null; // a turn another tab (or a page before a reload) started: {reply, text}
  let live = null; // the running compaction's card
  const { model_id: model, llm_error: unusable, room_warning: cramped } =
    await api(`/agents/${agent.id}/settings`);
  // the model's window leaves the conversation too little room: said before anything is sent
  const room = cramped ? h("p", { class: "warning room", role: "alert" }, cramped) : null;
  // No model at all, or one that cannot work (e.g. HIVEKEEP_LLM without its API key): say which.
  const reason = !model && unusable && !unusable.startsWith("No LLM is configured")
    ? `The chat model cannot be used, so Send is off: ${unusable} Give this server the key in ` +
      "the Settings tab (kept in memory only), or restart it with the key set."
    : NO_MODEL;
  const noModel = model ? null : h("p", { class: "hint no-model", id: `no-model-${agent.id}` },
    reason.split("the Settings tab")[0],
    h("a", { href: `#/agents/${agent.id}/settings` }, "the Settings tab"),
    reason.split("the Settings tab")[1]);
  if (noModel) {
    for (const button of [send, compact]) {
      button.disabled = true;
      button.title = reason === NO_MODEL ? "No chat model is set for this agent"
        : "The chat model cannot be used (see the note above)";
      button.setAttribute("aria-describedby", noModel.id);
    }
  }

  const titleOf = (c) => c.title || `Conversation ${c.id}`;
  function conversationItem(c) {
    const item = h("li", { "data-id": String(c.id) });
    const rename = () => {
      const title = h("input", { value: c.title, maxlength: 200, required: true, "aria-label": "New title" });
      item.replaceChildren(h("form", { class: "row rename", onsubmit: async (event) => {
        event.preventDefault();
        try {
          await api(`/conversations/${c.id}`, { method: "PATCH", body: { title: title.value } });
          await showList();
        } catch (error) { notice.textContent = error.message; }
      } }, title, h("button", { type: "submit" }, "Save"),
      h("button", { type: "button", class: "secondary", onclick: () => showList() }, "Cancel")));
      title.focus();
    };
    item.append(
      h("button", { type: "button", class: "link", "aria-current": c.id === conversation ? "true" : null,
        onclick: () => open(c.id) }, titleOf(c)),
      h("span", { class: "row actions" },
        h("button", { type: "button", class: "secondary small", "aria-label": `Rename ${titleOf(c)}`, onclick: rename }, "Rename"),
        h("button", { type: "button", class: "danger small", "aria-label": `Delete ${titleOf(c)}`, onclick: () => remove(c) }, "Delete")));
    return item;
  }

  // Deleted: to the trash, with an Undo at once and a Restore in the trash list below.
  async function remove(c) {
    try {
      await api(`/conversations/${c.id}`, { method: "DELETE" });
    } catch (error) {
      notice.textContent = error.message;
      return;
    }
    const undo = h("button", { type: "button", class: "secondary", onclick: () => restore(c.id) }, "Undo");
    undone.replaceChildren(h("span", {}, `"${titleOf(c)}" moved to the trash. `), undo);
    if (c.id === conversation) {
      conversation = null;
      form.hidden = true;
      usage.replaceChildren();
      log.replaceChildren(h("p", { class: "hint" }, "Conversation deleted: pick or start another."));
    }
    await showList();
  }

  async function restore(id) {
    try {
      await api(`/conversations/${id}/restore`, { method: "POST" });
    } catch (error) {
      notice.textContent = error.message;
      return;
    }
    undone.replaceChildren();
    await open(id);
  }

  async function showList() {
    const [{ conversations }, { conversations: trashed }] = await Promise.all([
      api(`/agents/${agent.id}/conversations`), api(`/agents/${agent.id}/conversations?trashed=true`)]);
    list.replaceChildren(...conversations.map(conversationItem));
    trash.hidden = !trashed.length;
    trashList.replaceChildren(...trashed.map((c) => h("li", {}, h("span", {}, titleOf(c)), " ",
      h("button", { type: "button", class: "secondary small", "aria-label": `Restore ${titleOf(c)}`,
        onclick: () => restore(c.id) }, "Restore"))));
    trashSummary.textContent = `Deleted conversations (${trashed.length})`;
    return conversations;
  }

  async function refreshContext() {
    if (conversation) usage.replaceChildren(contextBar(await api(`/conversations/${conversation}/context`)));
  }

  async function open(id) {
    conversation = id;
    live = null;
    const [{ messages }, ctx] = await Promise.all([
      api(`/conversations/${id}/messages?limit=1000`), api(`/conversations/${id}/context`)]);
    if (conversation !== id) return; // another one was opened meanwhile
    log.replaceChildren(...messages.map((message) => messageItem(message, agent.id)).filter(Boolean));
    usage.replaceChildren(contextBar(ctx));
    const last = messages.filter((m) => !m.is_compaction_record).at(-1);
    if (ctx.answering && !sending) { // a turn runs on the server (this page was reloaded mid-way)
      remote = { reply: h("div", { class: "text" }, remote?.text || ""), text: remote?.text || "" };
      log.append(h("div", { class: "msg assistant streaming" }, h("span", { class: "who" }, "agent"), remote.reply));
    } else if (last?.role === "user" && !sending) { // its turn failed: say so, at the message
      const shown = log.querySelectorAll(".msg.user");
      shown[shown.length - 1]?.append(h("small", { class: "unanswered" }, UNANSWERED));
    }
    log.scrollTop = log.scrollHeight;
    input.value = drafts.get(agent.id, id);
    await showList();
    form.hidden = false;
    input.focus();
  }

  async function newConversation() {
    const created = await api(`/agents/${agent.id}/conversations`, { method: "POST", body: {} });
    await open(created.id);
  }

  const form = h("form", { class: "composer", hidden: true, onsubmit: async (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text || !model) return;
    notice.textContent = "";
    send.disabled = true;
    sending = true;
    let failed = false;
    const failWith = (message) => { failed = true; notice.textContent = message; };
    log.append(messageItem({ role: "user", content: text, summary_id: null }));
    const reply = h("div", { class: "text" });
    log.append(h("div", { class: "msg assistant streaming" }, h("span", { class: "who" }, "agent"), reply));
    try {
      await streamPost(`/conversations/${conversation}/chat`, { message: text }, (type, data) => {
        if (type === "delta") reply.textContent += data.text;
        else if (type === "tool") reply.before(h("div", { class: "call" }, `→ ${data.name}`));
        else if (type === "error") failWith(data.message);
        log.scrollTop = log.scrollHeight;
      });
    } catch (error) {
      failWith(error.message);
    }
    if (!failed) { // a failed send keeps what was typed, to try again
      input.value = "";
      drafts.set(agent.id, conversation, "");
    }
    send.disabled = false;
    sending = false;
    await open(conversation);
  } },
  ...field("Message", input), send);
  input.addEventListener("input", () => drafts.set(agent.id, conversation, input.value));
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); form.requestSubmit(); }
  });

  compact.addEventListener("click", async () => {
    if (!conversation || !model) return;
    compact.disabled = true;
    notice.textContent = "";
    try {
      const outcome = await api(`/conversations/${conversation}/compact`, { method: "POST" });
      if (outcome.status === "nothing") log.append(compactionCard(outcome, agent.id));
      else await open(conversation);
    } catch (error) {
      notice.textContent = error.message;
      live?.remove();
    }
    compact.disabled = false;
  });

  panel.append(h("div", { class: "chat" },
    h("aside", {}, h("button", { type: "button", onclick: newConversation }, "New conversation"), list, undone, trash),
    h("div", { class: "thread" }, h("div", { class: "toolbar" }, usage, compact), noModel, room, notice, log, form)));
  const existing = await showList();
  if (existing.length) await open(existing[0].id);
  else log.append(h("p", { class: "hint" }, "No conversation yet: start one."));

  // A turn streamed to another tab (or to this page before a reload) shows here as it runs.
  function onChatEvent(type, data) {
    if (sending) return; // this tab streams it itself
    if (data.conversation_id !== conversation) {
      if (type === "chat:done") showList(); // a new title, a new order
      return;
    }
    if (type === "chat:done") {
      remote = null;
      open(conversation);
      return;
    }
    if (remote?.reply) {
      remote.text += data.text;
      remote.reply.textContent = remote.text;
      log.scrollTop = log.scrollHeight;
    } else if (!remote) { // the first piece: show the stored user message, then the reply
      remote = { reply: null, text: data.text };
      open(conversation);
    } else {
      remote.text += data.text;
    }
  }

  function onEvent(type, event) {
    const data = event.data;
    if (type === "chat:delta" || type === "chat:done") return onChatEvent(type, data);
    if (!type.startsWith("compacting:") || data.conversation_id !== conversation) return;
    if (data.record_id && log.querySelector(`[data-record="${data.record_id}"]`)) {
      live?.remove(); // already shown, from the stored record
      live = null;
      return;
    }
    const state = type === "compacting:done" ? { ...data, status: data.status || "done" }
      : type === "compacting:error" ? { ...data, status: "error" }
      : { ...data, status: "running" };
    const card = compactionCard(state, agent.id);
    if (live) live.replaceWith(card); else log.append(card);
    live = type.endsWith("start") || type.endsWith("progress") ? card : null;
    log.scrollTop = log.scrollHeight;
    if (!live) refreshContext();
  }
  return { onEvent };
}
