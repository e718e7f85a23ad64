// The page: agents in the sidebar, and per agent the Chat, Memory and Settings tabs.
import { api, subscribe, token, whenUnauthorized } from "./api.js";
import { h } from "./dom.js";
import { chatView } from "./chat.js";
import { inboxView, pendingCount } from "./inbox.js";
import { memoryView } from "./memory.js";
import { settingsView } from "./settings.js";

const TABS = { chat: ["Chat", chatView], memory: ["Memory", memoryView], settings: ["Settings", settingsView] };
const listeners = new Set(); // the open view's handlers of live events
let current = { agent: null, tab: "chat", dispose: null };
// The hash the page shows or is loading, and which navigation is the newest: a hash reached twice at
// once (the first load still starting when a link is followed) renders once, and a slower, older
// navigation never replaces a newer one's view under the user's hands.
let routed = null;
let navigation = 0;

export function status(text, error = false) {
  const line = document.getElementById("status");
  line.textContent = text;
  line.classList.toggle("error", error);
}

// Asked for at start, and again when the server refuses the token in use (401): then it says so.
function showTokenForm() {
  const form = document.getElementById("token-form");
  const rejected = token.get() !== "";
  form.hidden = false;
  form.classList.toggle("rejected", rejected);
  status(rejected ? "The server rejected this API token (401): enter its HIVEKEEP_API_TOKEN, or a scoped one from `hivekeep tokens create`."
    : "This server needs a token: its API token, or a scoped one from `hivekeep tokens create`.", rejected);
  const input = document.getElementById("token-input");
  input.setAttribute("aria-invalid", String(rejected));
  input.focus();
}

async function loadAgents() {
  const list = document.getElementById("agents");
  const { agents } = await api("/agents");
  list.replaceChildren(...agents.map((agent) => h("li", {},
    h("a", {
      href: `#/agents/${agent.id}/${current.tab}`,
      "aria-current": current.agent?.id === agent.id ? "page" : null,
    }, agent.name))));
  return agents;
}

// The Inbox badge: how many writes wait for review (hidden at none, or for a token that may not review).
function showCount(count) {
  const badge = document.getElementById("inbox-count");
  badge.hidden = !count;
  badge.textContent = count ? String(count) : "";
  document.getElementById("inbox-link").setAttribute("aria-label", `Inbox, ${count || "nothing"} waiting`);
}

async function route() {
  const [, section, id, tab = "chat"] = location.hash.split("/");
  const main = document.getElementById("main");
  const mine = ++navigation;
  const stale = () => mine !== navigation;
  current.dispose?.();
  current.dispose = null;
  listeners.clear();
  document.getElementById("inbox-link").toggleAttribute("aria-current", section === "inbox");
  if (section === "inbox") {
    current.agent = null;
    await loadAgents();
    if (stale()) return;
    const handle = await inboxView(main, showCount);
    if (!stale()) listeners.add(handle.onEvent);
    return;
  }
  if (!id) {
    current.agent = null;
    main.replaceChildren(h("p", { class: "hint" }, "Create or pick an agent."));
    return loadAgents();
  }
  let agent;
  try {
    agent = await api(`/agents/${id}`);
  } catch (error) {
    if (!stale()) main.replaceChildren(h("p", { class: "error", role: "alert" }, error.message));
    return;
  }
  if (stale()) return;
  current.agent = agent;
  current.tab = TABS[tab] ? tab : "chat";
  await loadAgents();
  if (stale()) return;
  const panel = h("section", { class: "panel", id: "panel", role: "tabpanel" });
  const tabs = h("div", { role: "tablist", class: "tabs", "aria-label": "Agent views" },
    Object.entries(TABS).map(([key, [label]]) => h("a", {
      role: "tab", href: `#/agents/${id}/${key}`, "aria-selected": String(key === current.tab),
    }, label)));
  main.replaceChildren(
    h("h2", {}, current.agent.name, h("small", {}, current.agent.role ? ` — ${current.agent.role}` : "")),
    tabs, panel);
  const view = TABS[current.tab][1];
  const handle = await view(panel, current.agent);
  if (stale()) return handle?.dispose?.();
  current.dispose = handle?.dispose;
  if (handle?.onEvent) listeners.add(handle.onEvent);
}

// A view that cannot load (the server is gone, say) says why in the status line.
async function show() {
  if (location.hash === routed) return;
  routed = location.hash;
  try {
    await route();
  } catch (error) {
    status(error.message, true);
  }
}

// The server's name rule, written once in the page (#new-agent-rule), is the browser's message too.
const nameInput = document.getElementById("new-agent-name");
nameInput.addEventListener("input", () => nameInput.setCustomValidity(nameInput.validity.patternMismatch
  ? `Not a valid name: ${document.getElementById("new-agent-rule").textContent}` : ""));

document.getElementById("new-agent").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("new-agent-error");
  error.textContent = "";
  try {
    const agent = await api("/agents", { method: "POST", body: {
      name: document.getElementById("new-agent-name").value,
      role: document.getElementById("new-agent-role").value,
    } });
    event.target.reset();
    location.hash = `#/agents/${agent.id}/chat`;
  } catch (failure) {
    error.textContent = failure.message;
  }
});

document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  token.set(document.getElementById("token-input").value.trim());
  event.target.hidden = true;
  routed = null; // the view the refused token could not load is loaded again
  status("");
  start();
});

// Agents created, renamed or deleted elsewhere: refresh the list, and leave a deleted agent's page.
function onAgentEvent(type, event) {
  const mine = current.agent && event.agent_id === current.agent.id;
  if (mine && type === "agent:deleted") {
    status(`Agent ${event.data.name} was deleted.`);
    location.hash = "#/";
  } else if (mine && type === "agent:updated") { // renamed: new heading, the open view stays
    const { name, role } = event.data;
    current.agent = { ...current.agent, name, role };
    document.querySelector("#main h2")?.replaceChildren(name, h("small", {}, role ? ` — ${role}` : ""));
    loadAgents();
  } else {
    loadAgents();
  }
}

let unsubscribe = null;
async function start() {
  unsubscribe?.();
  try {
    await loadAgents();
  } catch { return; } // 401: the token form is shown
  showCount(await pendingCount());
  document.getElementById("sign-out").hidden = !token.get();
  unsubscribe = subscribe((type, event) => {
    if (type.startsWith("agent:")) return onAgentEvent(type, event); // another tab, CLI or API
    if (type === "hive:changed") loadAgents(); // another process wrote: the open view refreshes too
    if (type === "review:changed" || type === "hive:changed") pendingCount().then(showCount);
    if (type === "review:changed" && !current.agent) {
      for (const listener of listeners) listener(type, event); // the Inbox itself
    }
    if (current.agent && (event.agent_id === current.agent.id || type === "hive:changed")) {
      for (const listener of listeners) listener(type, event);
    }
  });
  await show();
}

// Sign out: the token leaves this browser's storage, the live stream closes, the page empties.
const signOut = document.getElementById("sign-out");
signOut.addEventListener("click", () => {
  token.forget();
  unsubscribe?.();
  unsubscribe = null;
  current.dispose?.();
  current = { agent: null, tab: "chat", dispose: null };
  document.getElementById("agents").replaceChildren();
  document.getElementById("main").replaceChildren();
  history.replaceState(null, "", "/");
  routed = null;
  signOut.hidden = true;
  showTokenForm();
  status("Signed out: the token is no longer kept in this browser.");
});

whenUnauthorized(showTokenForm);
window.addEventListener("hashchange", show);
const health = await fetch("/api/health").then((r) => r.json());
if (health.auth && !token.get()) showTokenForm();
else start();
