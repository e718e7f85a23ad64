// The API client: JSON calls with the bearer token, and SSE read from fetch (so the token is
// sent too, which EventSource cannot do).
const TOKEN_KEY = "hivekeep.token";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const token = {
  get: () => localStorage.getItem(TOKEN_KEY) || "",
  set: (value) => localStorage.setItem(TOKEN_KEY, value),
  forget: () => localStorage.removeItem(TOKEN_KEY),
};

let onUnauthorized = () => {};
export function whenUnauthorized(callback) { onUnauthorized = callback; }

function headers(json) {
  const out = json ? { "Content-Type": "application/json" } : {};
  if (token.get()) out.Authorization = `Bearer ${token.get()}`;
  return out;
}

async function fail(response) {
  let code = "http_error";
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    ({ code, message } = body.error);
  } catch { /* not JSON: keep the status line */ }
  if (response.status === 401) onUnauthorized();
  throw new ApiError(response.status, code, message);
}

// fetch, with the browser's "Failed to fetch" (a TypeError) said in words
export const UNREACHABLE = "The hivekeep server cannot be reached: is `hivekeep serve` still running? " +
  "Start it again, then retry.";
async function reach(url, options) {
  try {
    return await fetch(url, options);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "unreachable", UNREACHABLE);
  }
}

export async function api(path, { method = "GET", body, signal } = {}) {
  const response = await reach(`/api${path}`, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (!response.ok) await fail(response);
  return response.status === 204 ? null : response.json();
}

// Calls onEvent(type, data, id) for each SSE message of the response body.
export async function readSSE(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const message = { event: "message", data: "", id: null };
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const key = line.slice(0, colon);
        const val = line.slice(colon + 1).replace(/^ /, "");
        if (key === "event") message.event = val;
        else if (key === "data") message.data += val;
        else if (key === "id") message.id = Number(val);
      }
      if (message.data) onEvent(message.event, JSON.parse(message.data), message.id);
    }
  }
}

export async function streamPost(path, body, onEvent) {
  const response = await reach(`/api${path}`, {
    method: "POST", headers: headers(true), body: JSON.stringify(body),
  });
  if (!response.ok) await fail(response);
  await readSSE(response, onEvent);
}

// The hive's live events; reconnects after a drop, resuming after the last id seen.
export function subscribe(onEvent) {
  let last = null;
  let stopped = false;
  const controller = new AbortController();
  (async () => {
    while (!stopped) {
      try {
        const query = last === null ? "" : `?after=${last}`;
        const response = await fetch(`/api/events${query}`, {
          headers: headers(false), signal: controller.signal,
        });
        if (!response.ok) await fail(response);
        await readSSE(response, (type, data, id) => {
          if (id !== null) last = id;
          onEvent(type, data);
        });
      } catch (error) {
        if (stopped) return;
      }
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  })();
  return () => { stopped = true; controller.abort(); };
}
