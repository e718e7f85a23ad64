// Settings: a provider's API key and base URL for the running server (kept in its memory only:
// never stored in the hive, exported, logged or shown back; the form only says a key is set).
import { api } from "./api.js";
import { h, field, options } from "./dom.js";

const PROVIDERS = ["openai", "anthropic", "openrouter", "groq", "ollama", "vllm", "lmstudio"];

export function credentialsSection(llm, onChanged) {
  const spec = llm.spec || "";
  const provider = h("select", { name: "provider" },
    options(PROVIDERS, spec.split(":")[0] || "openai"));
  const key = h("input", { type: "password", autocomplete: "off", maxlength: 1000, name: "api_key" });
  const baseUrl = h("input", { type: "url", maxlength: 2000, name: "base_url",
    placeholder: "the provider's default" });
  const message = h("p", { role: "status", class: "result" });
  const current = () => Object.entries(llm.credentials || {}).map(([name, set]) =>
    `${name}: ${set.api_key_set ? "key set" : "no key"}${set.base_url ? ` · ${set.base_url}` : ""}`)
    .join("; ") || "none given here";
  const given = h("small", {}, `Given to this server: ${current()}`);
  const form = h("form", { class: "stack credentials", onsubmit: async (event) => {
    event.preventDefault();
    try {
      const settings = await api("/settings/llm-credentials", { method: "PUT", body: {
        provider: provider.value, api_key: key.value.trim() || null,
        base_url: baseUrl.value.trim() || null,
      } });
      key.value = "";
      llm = settings.llm;
      given.textContent = `Given to this server: ${current()}`;
      message.className = `result ${llm.error ? "error" : "ok"}`;
      message.textContent = llm.error ? `Saved, but the hive's model still cannot be used: ${llm.error}`
        : "Saved for this server (in memory only: gone when it stops).";
      onChanged(settings);
    } catch (error) {
      message.className = "result error";
      message.textContent = error.message;
    }
  } },
  h("h3", {}, "Model credentials for this server"),
  h("p", {}, h("small", {}, "Kept in the server's memory only: never saved in the hive, exported, " +
    "logged or shown here again. Leave both empty to forget a provider's.")),
  ...field("Provider", provider), ...field("API key", key), ...field("Base URL", baseUrl),
  given, h("div", { class: "row" }, h("button", { type: "submit" }, "Use for this server")), message);
  return form;
}
