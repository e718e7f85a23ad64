// Settings tab: the hive's models (as configured, never keys) and this agent's overrides.
import { api } from "./api.js";
import { h, field, options } from "./dom.js";
import { credentialsSection } from "./credentials.js";

export async function settingsView(panel, agent) {
  const [hive, mine] = await Promise.all([api("/settings"), api(`/agents/${agent.id}/settings`)]);
  const model = h("input", { value: mine.model || "", maxlength: 200, placeholder: "hive default" });
  // the models of upkeep: empty means the hive's COMPACTING_MODEL / MEMORY_EXTRACTION_MODEL, else the chat model
  const upkeep = Object.fromEntries(["compacting_model", "extraction_model"].map((name) => [name,
    h("input", { value: mine[name] || "", maxlength: 200, placeholder: hive.llm[name] || "the chat model", name })]));
  // the chat model's window, for a model hivekeep does not know: empty means HIVEKEEP_CONTEXT_WINDOW, else the known one
  const window_ = h("input", { type: "number", min: 1, step: 1, name: "context_window",
    value: mine.context_window_setting ?? "", placeholder: "default" });
  // what its writes do with a credential (empty: the hive's HIVEKEEP_SECRETS), and which wait for a person
  const secrets = h("select", { name: "secrets" },
    options(["redact", "refuse", "allow"], mine.secrets ?? "", `hive default (${mine.secrets_in_force})`));
  const review = h("select", { name: "review" }, options(["off", "shared", "all"], mine.review));
  const inForce = h("small", {});
  const showInForce = (s) => {
    inForce.textContent = `In force: ${s.model_id || "none"}` +
      (s.context_window ? ` · window ${s.context_window.toLocaleString("en")} tokens` : "") +
      (s.llm_error ? ` · ${s.llm_error}` : "");
  };
  showInForce(mine);
  const inputs = Object.entries(mine.effective).map(([name, value]) => [name, h("input", {
    type: "number", step: "any", value: String(value), name,
  })]);
  const message = h("p", { role: "status", class: "result" });
  const show = (ok, text) => {
    message.className = `result ${ok ? "ok" : "error"}`;
    message.textContent = text;
  };

  async function save(body) {
    try {
      const saved = await api(`/agents/${agent.id}/settings`, { method: "PUT", body });
      for (const [name, input] of inputs) input.value = String(saved.effective[name]);
      showInForce(saved);
      show(true, `Saved. Model in force: ${saved.model_id || saved.llm_error}.`);
      return true;
    } catch (error) {
      show(false, error.message);
      return false;
    }
  }
  const form = h("form", { class: "stack settings", onsubmit: (event) => {
    event.preventDefault();
    const compaction = {};
    for (const [name, input] of inputs) {
      const value = Number(input.value);
      if (value !== hive.compaction_defaults[name]) compaction[name] = value;
    }
    const body = { compaction };
    const spec = model.value.trim() || null;
    if (spec !== mine.model) body.model = spec;
    for (const [name, input] of Object.entries(upkeep)) {
      const value = input.value.trim() || null;
      if (value !== mine[name]) body[name] = value;
    }
    const tokens = window_.value.trim() === "" ? null : Number(window_.value);
    if (tokens !== mine.context_window_setting) body.context_window = tokens;
    if ((secrets.value || null) !== mine.secrets) body.secrets = secrets.value || null;
    if (review.value !== mine.review) body.review = review.value;
    save(body).then((ok) => {
      if (!ok) return;
      const { context_window: setting, ...rest } = body;
      Object.assign(mine, rest);
      if ("context_window" in body) mine.context_window_setting = setting;
    });
  } },
  h("h3", {}, `${agent.name}'s settings`),
  ...field("Chat model (provider:model)", model),
  ...field("Context window (tokens, for a model hivekeep does not know)", window_),
  h("p", {}, inForce),
  ...field("Compaction model (provider:model)", upkeep.compacting_model),
  ...field("Extraction model (provider:model)", upkeep.extraction_model),
  ...field("Credentials in its writes", secrets),
  ...field("Hold its own writes for review (the Inbox)", review),
  h("fieldset", {}, h("legend", {}, "Compaction"),
    h("div", { class: "grid" }, inputs.map(([name, input]) => h("div", { class: "stack" }, ...field(name.replaceAll("_", " "), input))))),
  h("div", { class: "row" }, h("button", { type: "submit" }, "Save settings"),
    h("button", { type: "button", class: "secondary", onclick: () => save({ compaction: {} }).then(() => {}) }, "Reset compaction")),
  message);

  const llm = hive.llm;
  const llmState = h("dd", {}, llm.spec || (llm.configured ? "set in code" : "not configured (set HIVEKEEP_LLM)"),
    llm.error ? h("span", { class: "error" }, ` — cannot be used: ${llm.error}`) : null);
  const credentials = credentialsSection(llm, (settings) => {
    llmState.querySelector(".error")?.remove();
    if (settings.llm.error) llmState.append(h("span", { class: "error" }, ` — cannot be used: ${settings.llm.error}`));
  });
  panel.append(h("section", { class: "hive-settings" }, h("h3", {}, "Hive"),
    h("dl", {},
      h("dt", {}, "LLM"), llmState,
      h("dt", {}, "Compaction model"), h("dd", {}, llm.compacting_model || "the agent's model"),
      h("dt", {}, "Extraction model"), h("dd", {}, llm.extraction_model || "the agent's model"),
      h("dt", {}, "Embedder"), h("dd", {}, `${hive.embedder.spec} (${hive.embedder.model_id}, ${hive.embedder.dimension}-d)`),
      h("dt", {}, "Profile budget"), h("dd", {}, `${hive.profile_max_tokens} tokens`)), credentials), form,
    deleteSection(agent));
}

// Deleting an agent says what goes and what stays, before (the dialog) and after (the counts).
export const deleteQuestion = (name) => `Delete agent ${name}? Its profile, private memories and ` +
  "conversations (with their messages and summaries) are deleted. Its shared memories stay, " +
  `recallable by every agent as shared by ${name} (deleted).`;

function deleteSection(agent) {
  const message = h("p", { role: "status", class: "result" });
  const button = h("button", { type: "button", class: "danger", onclick: async () => {
    if (!confirm(deleteQuestion(agent.name))) return;
    button.disabled = true;
    try {
      const gone = await api(`/agents/${agent.id}`, { method: "DELETE" });
      document.getElementById("status").textContent = gone.message;
      location.hash = "#/";
    } catch (error) {
      message.className = "result error";
      message.textContent = error.message;
      button.disabled = false;
    }
  } }, "Delete agent");
  return h("section", { class: "delete-agent" }, h("h3", {}, "Delete agent"),
    h("p", {}, h("small", {}, "Deletes the profile, private memories and conversations. " +
      "Shared memories stay for the other agents.")), button, message);
}
