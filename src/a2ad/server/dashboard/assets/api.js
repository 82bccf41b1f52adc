// Talking to the server: the A2A HTTP+JSON calls of the page (api), its SSE streams
// (stream) and signing in. Every request carries the caller's credential, kept in
// sessionStorage (this tab only), so the server decides what the page may see.

import { SETTINGS, route } from "./page.js";

export const TOKEN_KEY = "a2ad.token";

class ApiError extends Error {
  constructor(status, body) {
    const detail = body && body.error ? body.error : {};
    super(detail.message || `HTTP ${status}`);
    this.status = status;
    this.reason = (detail.details || []).map((d) => d.reason).find(Boolean) || detail.status || "";
  }
}

function agentPrefix() {
  const agent = new URLSearchParams(location.search).get("agent") || SETTINGS.agents[0] || "";
  return agent && agent !== SETTINGS.agents[0] ? `/agents/${encodeURIComponent(agent)}` : "";
}

function headers(extra = {}) {
  const h = { "A2A-Version": "1.0", ...extra };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

// prefix: the picked agent's path by default; "" for the server's own reads (/agents).
export async function api(method, path, body, prefix = agentPrefix()) {
  const init = { method, headers: headers(body ? { "Content-Type": "application/json" } : {}) };
  if (body) init.body = JSON.stringify(body);
  const response = await fetch(prefix + path, init);
  const data = jsonOrNull(await response.text());
  if (response.status === 401) {
    await askForToken();
    throw new ApiError(401, data);
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// A response body's JSON, or null for an empty or unparsable one.
function jsonOrNull(text) {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

export function askForToken() {
  const dialog = document.getElementById("token-dialog");
  if (dialog.open) return Promise.resolve();
  document.getElementById("token").value = "";
  dialog.returnValue = ""; // Escape closes without setting it: not the last one's "ok"
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => {
        if (dialog.returnValue === "ok") {
          sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
          route();
        }
        resolve();
      },
      { once: true },
    );
  });
}

// An SSE stream over fetch (EventSource can't send a credential): calls onOpen
// once the server has accepted it, then onEvent with each event's parsed data
// until the stream ends or the signal aborts.
export async function stream(path, onEvent, signal, method = "POST", onOpen = () => {}) {
  const init = { method, headers: headers({ Accept: "text/event-stream" }), signal };
  if (method === "POST") {
    init.headers["Content-Type"] = "application/json";
    init.body = "{}";
  }
  const response = await fetch(agentPrefix() + path, init);
  if (!response.ok || !response.body) {
    throw new ApiError(response.status, jsonOrNull(await response.text().catch(() => "")));
  }
  onOpen();
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
      const data = block
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trimStart())
        .join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}
