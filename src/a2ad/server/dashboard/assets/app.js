// The a2ad dashboard: an A2A 1.0 HTTP+JSON client of the server that serves it.
// No framework and no build step. Views: the task list (its filters in the URL's
// query), a task's page (BASE/tasks/<id>) and the server's agents (BASE/agents,
// drawn by agents.js). Every request carries the caller's credential, kept in
// sessionStorage (this tab only), so the server decides what the page may see.

import { agentsView } from "./agents.js";

const SETTINGS = JSON.parse(document.querySelector('meta[name="a2ad-settings"]').content);
const BASE = SETTINGS.base;
const TOKEN_KEY = "a2ad.token";
const PAGE_SIZE = 50;
const STATES = [
  ["TASK_STATE_SUBMITTED", "submitted", "○"],
  ["TASK_STATE_WORKING", "working", "◐"],
  ["TASK_STATE_INPUT_REQUIRED", "input required", "?"],
  ["TASK_STATE_AUTH_REQUIRED", "auth required", "!"],
  ["TASK_STATE_COMPLETED", "completed", "✓"],
  ["TASK_STATE_FAILED", "failed", "✕"],
  ["TASK_STATE_CANCELED", "canceled", "⊘"],
  ["TASK_STATE_REJECTED", "rejected", "⊗"],
];
const STATE = Object.fromEntries(STATES.map(([key, label, icon]) => [key, { label, icon }]));
const ACTIVE = new Set(STATES.slice(0, 4).map(([key]) => key));
const main = document.getElementById("main");
let stopLive = () => {};
// Bumped by each route(): a view's awaits that return after it was left draw nothing.
let view = 0;

// --- talking to the server ---

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
async function api(method, path, body, prefix = agentPrefix()) {
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

function askForToken() {
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
async function stream(path, onEvent, signal, method = "POST", onOpen = () => {}) {
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

// --- small helpers ---

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) {
      node.append(child instanceof Node ? child : String(child));
    }
  }
  return node;
}

function badge(state) {
  const known = STATE[state] || { label: state || "unknown", icon: "·" };
  return el(
    "span",
    { class: `badge s-${(state || "").replace("TASK_STATE_", "").toLowerCase()}` },
    el("span", { "aria-hidden": "true" }, known.icon),
    ` ${known.label}`,
  );
}

function ago(timestamp) {
  if (!timestamp) return "";
  const delta = (Date.now() - Date.parse(timestamp)) / 1000;
  const seconds = Math.abs(delta);
  let span;
  if (seconds < 60) span = `${Math.floor(seconds)} s`;
  else if (seconds < 3600) span = `${Math.floor(seconds / 60)} min`;
  else if (seconds < 86400) span = `${Math.floor(seconds / 3600)} h`;
  else span = `${Math.floor(seconds / 86400)} d`;
  return delta >= -1 ? `${span} ago` : `in ${span}`;
}

// When the task was made: a2ad's task ids are version 7 UUIDs, whose first 48 bits
// are Unix milliseconds ("" for other ids).
function createdAt(id) {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7/.test(id)) return "";
  return new Date(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toISOString();
}

// An id as the table shows it: a2ad's ids are version 7 UUIDs, whose first
// characters are the time (the same for every task of a minute), so a long id shows
// its random end, the whole of it in the tooltip.
function idCode(id) {
  const text = id || "";
  return el("code", { title: text }, text.length > 12 ? `…${text.slice(-8)}` : text);
}

function age(id) {
  const made = createdAt(id);
  if (!made) return "";
  return el("time", { datetime: made, title: `created ${made}` }, ago(made).replace(" ago", ""));
}

function timeEl(timestamp) {
  if (!timestamp) return "";
  return el("time", { datetime: timestamp, title: timestamp }, ago(timestamp));
}

function textOf(message) {
  if (!message || !message.parts) return "";
  return message.parts
    .filter((p) => typeof p.text === "string")
    .map((p) => p.text)
    .join(" ");
}

function requestText(task) {
  const asked = (task.history || []).filter((m) => m.role === "ROLE_USER");
  return textOf(asked[asked.length - 1]);
}

function firstWords(text, words = 12) {
  const all = text.trim().split(/\s+/);
  return all.length > words ? `${all.slice(0, words).join(" ")} …` : all.join(" ");
}

// A task is overdue while it is active and past its deadline (metadata.deadline),
// or when its status has not changed for longer than "stale after" (the toolbar's,
// kept in the URL; as `a2ad tasks cancel-overdue --stale-after` reads it).
const DEFAULT_STALE = "10m";

function parseDuration(text) {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec((text || "").trim());
  if (!match) return null;
  const unit = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 }[match[2]];
  return Number(match[1]) * unit;
}

function staleMs() {
  const given = new URLSearchParams(location.search).get("stale");
  return parseDuration(given || DEFAULT_STALE);
}

function overdueReason(task) {
  if (!ACTIVE.has(task.status.state)) return "";
  const deadline = task.metadata && task.metadata.deadline;
  if (deadline && Date.parse(deadline) < Date.now()) return "past its deadline";
  const stale = staleMs();
  const updated = Date.parse(task.status.timestamp || "");
  if (stale !== null && updated && Date.now() - updated > stale) return `no change for ${seconds(Date.now() - updated)}`;
  return "";
}

function isOverdue(task) {
  return overdueReason(task) !== "";
}

function taskLink(task) {
  const query = new URLSearchParams();
  const agent = new URLSearchParams(location.search).get("agent");
  if (agent) query.set("agent", agent);
  const suffix = query.toString() ? `?${query}` : "";
  return `${BASE}/tasks/${encodeURIComponent(task.id)}${suffix}`;
}

function navigate(url) {
  history.pushState(null, "", url);
  route();
}

function showError(where, error) {
  where.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
}

function say(text) {
  document.getElementById("live").textContent = text;
}

// --- charts (inline SVG, drawn from GET /a2ad/activity) ---

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  for (const child of children.flat()) if (child) node.append(child);
  return node;
}

function barChart(title, columns, { width = 360, height = 120, label = (c) => c.label } = {}) {
  // columns: [{label, parts: [{key, value, name}]}]; parts stack bottom-up.
  const top = Math.max(1, ...columns.map((c) => c.parts.reduce((sum, p) => sum + p.value, 0)));
  const slot = width / columns.length;
  const bars = columns.map((column, i) => {
    let y = height - 16;
    const x = i * slot + 2;
    const segments = column.parts
      .filter((p) => p.value > 0)
      .map((p) => {
        const h = Math.max(1, ((height - 32) * p.value) / top);
        y -= h;
        return svg("rect", { x, y, width: Math.max(1, slot - 4), height: h, class: `bar k-${p.key}` }, svg("title", {}, `${label(column)}: ${p.value} ${p.name}`));
      });
    return svg("g", {}, segments);
  });
  const ticks = columns
    .map((column, i) => (i % Math.ceil(columns.length / 6) === 0 ? svg("text", { x: i * slot + 2, y: height - 3, class: "tick" }, label(column)) : null))
    .filter(Boolean);
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title, class: "chart" }, svg("title", {}, title), bars, ticks, svg("text", { x: 2, y: 9, class: "tick" }, `max ${top}`));
}

// A count and its noun, as a2ad/wording.py words it: "1 task", "3 tasks".
function plural(count, noun) {
  return `${count.toLocaleString()} ${noun}${count === 1 ? "" : "s"}`;
}

function rate(count, minutes) {
  const perMinute = count / minutes;
  if (perMinute >= 10) return `${Math.round(perMinute)} a minute`;
  if (perMinute >= 0.5) return `${perMinute.toFixed(1)} a minute`;
  return `${((count * 60) / minutes).toFixed(count ? 1 : 0)} an hour`;
}

function stateKey(state) {
  return state.replace("TASK_STATE_", "").toLowerCase();
}

async function fillActivity(into) {
  const activity = await api("GET", "/a2ad/activity?minutes=60");
  const minuteOf = (c) => new Date(c.start).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const columns = activity.buckets.map((bucket) => ({
    start: bucket.start,
    parts: STATES.map(([key, label]) => ({ key: stateKey(key), value: bucket.counts[key] || 0, name: label })),
  }));
  const present = STATES.filter(([key]) => activity.buckets.some((b) => b.counts[key]));
  const legend = el("ul", { class: "legend" }, present.map(([key, label]) => el("li", {}, el("span", { class: `swatch k-${stateKey(key)}`, "aria-hidden": "true" }), label)));
  const d = activity.durations;
  const SHORT = { 1: "≤1s", 10: "≤10s", 60: "≤1m", 600: "≤10m", 3600: "≤1h" };
  const binLabel = (b) => (b.le === null ? ">1h" : SHORT[b.le] || `≤${b.le}s`);
  const durationColumns = d.bins.map((b) => ({ label: binLabel(b), parts: [{ key: "duration", value: b.count, name: "tasks" }] }));
  into.replaceChildren(
    el(
      "figure",
      { class: "figure", id: "chart-states" },
      el("figcaption", {}, "Tasks by state, last hour (by last change)"),
      barChart("Tasks by state over the last hour", columns, { label: minuteOf }),
      legend,
    ),
    el(
      "figure",
      { class: "figure", id: "chart-durations" },
      el("figcaption", {}, "How long finished tasks took"),
      barChart("Task durations", durationColumns, { width: 300 }),
      el("p", { class: "muted" }, d.count ? `p50 ${seconds(d.p50 * 1000)} · p90 ${seconds(d.p90 * 1000)} · max ${seconds(d.max * 1000)}` : "No finished tasks in the last hour."),
    ),
    el(
      "figure",
      { class: "figure", id: "throughput" },
      el("figcaption", {}, "Throughput, last hour"),
      el("p", { class: "big" }, activity.finished.toLocaleString(), el("span", { class: "muted" }, " finished")),
      el("p", { class: "muted" }, `${rate(activity.finished, activity.minutes)} · ${activity.changed.toLocaleString()} changed${activity.sampled ? " (charts from the newest 2,000)" : ""}`),
    ),
  );
}

// --- the task list ---

function filtersFromUrl() {
  const q = new URLSearchParams(location.search);
  return {
    state: q.get("state") || "",
    context: q.get("context") || "",
    text: q.get("text") || "",
    overdue: q.get("overdue") === "1",
    after: q.get("after") || "",
    before: q.get("before") || "",
    page: q.get("page") || "",
  };
}

function listQuery(filters, extra = {}) {
  // The newest few messages: enough to find the latest request of a task the
  // agent has answered since, without loading whole conversations.
  const q = new URLSearchParams({ pageSize: String(PAGE_SIZE), historyLength: "4" });
  if (filters.state) q.set("status", filters.state);
  if (filters.context) q.set("contextId", filters.context);
  if (filters.overdue) q.set("overdue", "true");
  if (filters.after) q.set("statusTimestampAfter", new Date(filters.after).toISOString());
  // a2ad's extension of ListTasks: the window's end (other servers ignore it).
  if (filters.before) q.set("statusTimestampBefore", new Date(filters.before).toISOString());
  if (filters.page) q.set("pageToken", filters.page);
  for (const [key, value] of Object.entries(extra)) q.set(key, value);
  return q;
}

function setFilters(changes) {
  const q = new URLSearchParams(location.search);
  for (const [key, value] of Object.entries(changes)) {
    if (value) q.set(key, value === true ? "1" : value);
    else q.delete(key);
  }
  if (!("page" in changes)) q.delete("page");
  navigate(`${BASE}${q.toString() ? `?${q}` : ""}`);
}

function filterForm(filters) {
  const stateSelect = el(
    "select",
    { id: "f-state", name: "state" },
    el("option", { value: "" }, "any state"),
    STATES.map(([key, label]) => el("option", { value: key, selected: key === filters.state }, label)),
  );
  const form = el(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter tasks" },
    el("label", { for: "f-state" }, "State"),
    stateSelect,
    el("label", { for: "f-context" }, "Context"),
    el("input", { id: "f-context", name: "context", value: filters.context, placeholder: "context id" }),
    el("label", { for: "f-text" }, "Text"),
    el("input", { id: "f-text", name: "text", value: filters.text, placeholder: "words in the request" }),
    el("label", { for: "f-after" }, "Updated after"),
    el("input", { id: "f-after", name: "after", type: "datetime-local", value: filters.after }),
    el("label", { for: "f-before" }, "and before"),
    el("input", { id: "f-before", name: "before", type: "datetime-local", value: filters.before }),
    el(
      "label",
      { class: "check" },
      el("input", { id: "f-overdue", name: "overdue", type: "checkbox", checked: filters.overdue }),
      " past deadline only",
    ),
    el("button", { type: "submit" }, "Apply"),
    el("button", { type: "button", onclick: () => navigate(BASE) }, "Clear"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    setFilters({
      state: data.get("state"),
      context: data.get("context").trim(),
      text: data.get("text").trim(),
      after: data.get("after"),
      before: data.get("before"),
      overdue: data.get("overdue") === "on",
    });
  });
  return form;
}

async function stateCounts(filters, into) {
  const counts = await Promise.all(
    STATES.map(async ([key]) => {
      const page = await api("GET", `/tasks?${listQuery({ ...filters, state: key, page: "" }, { pageSize: "1", historyLength: "0" })}`);
      return [key, page.totalSize || 0];
    }),
  );
  into.replaceChildren(
    ...counts.map(([key, count]) =>
      el(
        "button",
        {
          type: "button",
          class: `count${filters.state === key ? " on" : ""}`,
          "aria-pressed": String(filters.state === key),
          onclick: () => setFilters({ state: filters.state === key ? "" : key }),
        },
        badge(key),
        el("strong", {}, count.toLocaleString()),
      ),
    ),
  );
}

function taskRow(task) {
  const request = firstWords(requestText(task) || textOf(task.status.message));
  const deadline = task.metadata && task.metadata.deadline;
  const overdue = isOverdue(task);
  return el(
    "tr",
    { dataset: { taskId: task.id, state: task.status.state, updated: task.status.timestamp || "" } },
    el("td", {}, badge(task.status.state)),
    el("td", {}, el("a", { href: taskLink(task), dataset: { nav: "task" } }, idCode(task.id))),
    el("td", { class: "ctx" }, idCode(task.contextId)),
    el("td", { class: "request" }, request),
    el("td", {}, age(task.id)),
    el("td", {}, timeEl(task.status.timestamp)),
    el("td", {}, deadline ? timeEl(deadline) : "", overdue ? el("span", { class: "overdue", title: overdueReason(task) }, " overdue") : ""),
  );
}

// Hear of every change to the caller's tasks (GET /a2ad/changes) and call
// onChange, at most every 150 ms; reconnects until the view is left.
function watchChanges(onChange) {
  const controller = new AbortController();
  let timer = null;
  const changed = () => {
    if (timer === null) timer = setTimeout(() => ((timer = null), onChange()), 150);
  };
  const connect = () => {
    stream("/a2ad/changes", changed, controller.signal, "GET")
      .catch((error) => error)
      .then((error) => {
        if (controller.signal.aborted) return;
        if (error && error.status === 401) return; // the sign-in dialog takes over
        say("live updates: reconnecting");
        setTimeout(connect, 2000);
      });
  };
  connect();
  stopLive = () => {
    controller.abort();
    clearTimeout(timer);
  };
}

async function showList() {
  const mine = view;
  const filters = filtersFromUrl();
  const counts = el("div", { class: "counts", role: "group", "aria-label": "Tasks by state" });
  const body = el("tbody");
  const table = el(
    "table",
    { class: "tasks" },
    el("caption", { class: "visually-hidden" }, "Tasks, newest first"),
    el(
      "thead",
      {},
      el("tr", {}, ["State", "Task", "Context", "Request", "Age", "Updated", "Deadline"].map((h) => el("th", { scope: "col" }, h))),
    ),
    body,
  );
  const pager = el("nav", { class: "pager", "aria-label": "Pages" });
  const overdueButton = el("button", { type: "button", class: "danger", id: "cancel-overdue" }, "Cancel overdue…");
  overdueButton.addEventListener("click", () => cancelOverdue(filters));
  const staleInput = el("input", {
    id: "stale",
    size: "5",
    value: new URLSearchParams(location.search).get("stale") || DEFAULT_STALE,
    "aria-describedby": "stale-help",
  });
  staleInput.addEventListener("change", () => {
    if (parseDuration(staleInput.value) === null) {
      staleInput.setCustomValidity("a duration such as 90s, 10m or 2h");
      staleInput.reportValidity();
      return;
    }
    staleInput.setCustomValidity("");
    const q = new URLSearchParams(location.search);
    q.set("stale", staleInput.value.trim());
    history.replaceState(null, "", `${BASE}?${q}`);
  });
  const charts = el("div", { class: "charts", role: "group", "aria-label": "Activity" });
  main.replaceChildren(
    el("h1", {}, "Tasks"),
    counts,
    charts,
    filterForm(filters),
    el(
      "div",
      { class: "toolbar" },
      el("label", { for: "stale" }, "Overdue when unchanged for"),
      staleInput,
      el("span", { id: "stale-help", class: "muted" }, "or past its deadline"),
      overdueButton,
    ),
    table,
    pager,
    newTaskForm(),
  );
  let chartsDrawn = 0;
  let countsDrawn = 0;
  let countsLater = null;
  const recount = () => {
    countsDrawn = Date.now();
    countsLater = null;
    stateCounts(filters, counts).catch((error) => showError(counts, error));
  };
  let first = true;
  let running = null; // one refresh at a time: a later one waits for it
  const refresh = () => {
    running = (running || Promise.resolve()).then(refreshOnce);
    return running;
  };
  const refreshOnce = async () => {
    if (mine !== view) return false;
    // The counts (eight requests) at most every 3 s, and once more after a burst.
    if (Date.now() - countsDrawn > 3000) recount();
    else if (countsLater === null) countsLater = setTimeout(recount, 3000 - (Date.now() - countsDrawn));
    if (Date.now() - chartsDrawn > 10000) {
      chartsDrawn = Date.now(); // at most every 10 s: each draw reads up to 2,000 tasks
      fillActivity(charts).catch((error) => showError(charts, error));
    }
    let page;
    try {
      page = await loadPage(filters);
    } catch (error) {
      if (mine === view) showError(body, error);
      return false;
    }
    if (mine !== view) return false;
    fillTable(body, pager, filters, page, first);
    first = false;
    return true;
  };
  if ((await refresh()) && mine === view) {
    watchChanges(refresh);
    const stopWatching = stopLive;
    stopLive = () => {
      stopWatching();
      clearTimeout(countsLater);
    };
  }
}

// The text filter is the page's own (A2A lists have none): it reads the view's
// pages, newest first, until it has a page of matches or has read SEARCH_LIMIT
// tasks, and says how far it looked; "Next page" searches on from there.
const SEARCH_LIMIT = 2000;

async function loadPage(filters) {
  if (!filters.text) return api("GET", `/tasks?${listQuery(filters)}`);
  const words = filters.text.toLowerCase();
  const found = [];
  let token = filters.page;
  let searched = 0;
  let total = 0;
  do {
    const page = await api("GET", `/tasks?${listQuery({ ...filters, page: token }, { pageSize: "100" })}`);
    total = page.totalSize || 0;
    searched += (page.tasks || []).length;
    for (const task of page.tasks || []) {
      if (requestText(task).toLowerCase().includes(words)) found.push(task);
    }
    token = page.nextPageToken;
  } while (token && found.length < PAGE_SIZE && searched < SEARCH_LIMIT);
  return { tasks: found, totalSize: total, nextPageToken: token || "", searched };
}

function fillTable(body, pager, filters, page, first = false) {
  const tasks = page.tasks || [];
  const shown = new Map([...body.querySelectorAll("tr[data-task-id]")].map((r) => [r.dataset.taskId, r]));
  const rows = tasks.map((task) => {
    const old = shown.get(task.id);
    if (old && old.dataset.updated === (task.status.timestamp || "")) return old;
    const row = taskRow(task);
    if (shown.size) row.classList.add("fresh"); // changed or new since the last look
    return row;
  });
  body.replaceChildren(
    ...(rows.length ? rows : [el("tr", {}, el("td", { colspan: "7", class: "empty" }, "No tasks match."))]),
  );
  const searched = page.searched === undefined ? "" : ` · "${filters.text}" in ${tasks.length} of the ${page.searched.toLocaleString()} searched`;
  pager.replaceChildren(
    el("span", { id: "page-summary" }, `${plural(page.totalSize || 0, "task")}${searched}`),
    filters.page ? el("button", { type: "button", onclick: () => setFilters({ page: "" }) }, "First page") : "",
    page.nextPageToken
      ? el("button", { type: "button", onclick: () => setFilters({ page: page.nextPageToken }) }, "Next page")
      : "",
  );
  if (first) say(`${plural(tasks.length, "task")} shown`);
}

async function cancelOverdue(filters) {
  // The active tasks of the filtered view (its newest 100 in each active state),
  // then those overdue among them.
  const states = filters.state ? [filters.state].filter((s) => ACTIVE.has(s)) : [...ACTIVE];
  let tasks;
  try {
    const pages = await Promise.all(
      states.map((state) => api("GET", `/tasks?${listQuery({ ...filters, state, overdue: false, page: "" }, { pageSize: "100" })}`)),
    );
    tasks = pages.flatMap((p) => p.tasks || []).filter(isOverdue);
  } catch (error) {
    say(error.message);
    return;
  }
  const confirmed = await confirmDialog(
    tasks.length === 1 ? "Cancel this overdue task?" : tasks.length ? `Cancel these ${tasks.length} overdue tasks?` : "No task of this view is overdue.",
    tasks.map((t) => el("li", { dataset: { taskId: t.id } }, idCode(t.id), ` ${overdueReason(t)}: `, firstWords(requestText(t), 8))),
    tasks.length > 0,
    tasks.length === 1 ? "Cancel task" : "Cancel tasks",
  );
  if (!confirmed) return;
  const outcomes = await Promise.allSettled(tasks.map((t) => api("POST", `/tasks/${encodeURIComponent(t.id)}:cancel`, {})));
  const failed = outcomes.filter((o) => o.status === "rejected").length;
  say(`${tasks.length - failed} canceled${failed ? `, ${failed} could not be` : ""}`);
  route();
}

function confirmDialog(title, items, canConfirm = true, confirm = "Cancel task") {
  const dialog = document.getElementById("confirm-dialog");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-body").replaceChildren(items.length ? el("ul", {}, items) : "");
  document.getElementById("confirm-ok").hidden = !canConfirm;
  document.getElementById("confirm-ok").textContent = confirm;
  dialog.returnValue = ""; // Escape closes without setting it: not the last one's "ok"
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

// A new task for the agent of this view: sent, then followed on its own page.
function newTaskForm() {
  const form = el(
    "form",
    { class: "reply", id: "new-task" },
    el("label", { for: "new-text" }, "Send a new task"),
    el("textarea", { id: "new-text", name: "text", rows: "2", required: true }),
    el("button", { type: "submit", class: "primary" }, "Send"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = new FormData(form).get("text").trim();
    if (!text) return;
    const message = { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] };
    try {
      const answer = await api("POST", "/message:send", { message, configuration: { returnImmediately: true } });
      if (answer.task) navigate(taskLink(answer.task));
      else say(`the agent answered: ${firstWords(textOf(answer.message), 20)}`);
    } catch (error) {
      say(error.message);
    }
  });
  return form;
}

// --- a task's page ---

// Parts an agent keeps for itself (tool calls, reasoning: protocol/internal.py);
// the server sends them to operators only, and the page marks them.
function isInternalPart(part) {
  const m = part.metadata || {};
  return Boolean((m.a2ad && m.a2ad.internal) || m.adk_type || m.kagent_type || m.adk_thought || m.kagent_thought);
}

function partView(part) {
  const view = plainPartView(part);
  if (!isInternalPart(part)) return view;
  return el("div", { class: "internal" }, el("span", { class: "tag" }, "internal (operators only)"), view);
}

function plainPartView(part) {
  if (typeof part.text === "string") return el("p", { class: "text" }, part.text);
  if (part.data !== undefined) return el("pre", { class: "data" }, JSON.stringify(part.data, null, 2));
  const name = part.filename || "file";
  if (part.url) {
    // Only web addresses become links: an agent's javascript: or data: URL stays text.
    if (!/^https?:\/\//i.test(part.url)) return el("p", { class: "text" }, `${name}: ${part.url}`);
    return el("a", { href: part.url, rel: "noopener noreferrer", download: name }, `⬇ ${name}`);
  }
  if (part.raw !== undefined) {
    const href = `data:${part.mediaType || "application/octet-stream"};base64,${part.raw}`;
    return el("a", { href, download: name }, `⬇ ${name} (${part.mediaType || "file"})`);
  }
  return el("pre", { class: "data" }, JSON.stringify(part, null, 2));
}

function messageView(message) {
  const who = message.role === "ROLE_USER" ? "user" : "agent";
  return el(
    "article",
    { class: `message ${who}`, "aria-label": `${who} message` },
    el("header", {}, el("strong", {}, who)),
    (message.parts || []).map(partView),
  );
}

function artifactView(artifact) {
  return el(
    "section",
    { class: "artifact" },
    el("h3", {}, artifact.name || artifact.artifactId),
    artifact.description ? el("p", {}, artifact.description) : "",
    (artifact.parts || []).map(partView),
  );
}

async function showTask(id) {
  const mine = view;
  main.replaceChildren(el("p", {}, "Loading…"));
  let task;
  try {
    task = await api("GET", `/tasks/${encodeURIComponent(id)}`);
  } catch (error) {
    if (mine === view) showError(main, error);
    return;
  }
  if (mine !== view) return;
  renderTask(task);
  if (ACTIVE.has(task.status.state) && task.status.state !== "TASK_STATE_INPUT_REQUIRED") follow(task, mine);
}

function seconds(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 7200000) return `${(ms / 60000).toFixed(1)} min`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

async function fillTimeline(task, into) {
  let timeline;
  try {
    timeline = await api("GET", `/a2ad/tasks/${encodeURIComponent(task.id)}/timeline`);
  } catch (error) {
    showError(into, error);
    return;
  }
  const events = timeline.events || [];
  if (!events.length) {
    into.replaceChildren(el("p", {}, "No status changes recorded."));
    return;
  }
  const first = Date.parse(events[0].timestamp);
  const items = events.map((event, i) => {
    const at = Date.parse(event.timestamp);
    const next = i + 1 < events.length ? Date.parse(events[i + 1].timestamp) : null;
    const lasted = next !== null ? `${seconds(next - at)} in this state` : ACTIVE.has(event.state) ? "current" : "final";
    return el(
      "li",
      { dataset: { state: event.state } },
      el("time", { datetime: event.timestamp }, new Date(at).toLocaleTimeString()),
      " ",
      badge(event.state),
      el("span", { class: "muted" }, ` +${seconds(at - first)} · ${lasted}`),
      event.text ? el("div", { class: "muted" }, event.text) : "",
    );
  });
  const total = Date.parse(events[events.length - 1].timestamp) - first;
  into.replaceChildren(
    el("ol", { class: "timeline" }, items),
    el("p", { class: "muted" }, `${plural(events.length, "status change")} over ${seconds(total)}; ${plural(timeline.artifactUpdates, "artifact update")}.`),
  );
}

function renderTask(task) {
  const state = task.status.state;
  const actions = el(
    "div",
    { class: "toolbar" },
    ACTIVE.has(state)
      ? el("button", { type: "button", class: "danger", id: "cancel", onclick: () => cancelOne(task) }, "Cancel task…")
      : "",
    el("button", { type: "button", id: "copy", onclick: () => copyJson(task) }, "Copy as JSON"),
  );
  const reply = el(
    "form",
    { class: "reply", id: "reply" },
    el("label", { for: "reply-text" }, state === "TASK_STATE_INPUT_REQUIRED" ? "Answer the agent" : "Send a message in this context"),
    el("textarea", { id: "reply-text", name: "text", rows: "2", required: true }),
    el("button", { type: "submit", class: "primary" }, "Send"),
  );
  reply.addEventListener("submit", (event) => sendReply(event, task));
  const timelineBody = el("div", {}, "Loading…");
  const timeline = el("section", { id: "timeline" }, el("h2", {}, "Timeline"), timelineBody);
  fillTimeline(task, timelineBody);
  main.replaceChildren(
    el("p", {}, el("a", { href: BASE, dataset: { nav: "list" } }, "← all tasks")),
    el("h1", {}, "Task ", el("code", {}, task.id)),
    el(
      "dl",
      { class: "facts" },
      el("dt", {}, "State"),
      el("dd", { id: "task-state" }, badge(state)),
      el("dt", {}, "Context"),
      el("dd", {}, el("code", {}, task.contextId)),
      createdAt(task.id) ? [el("dt", {}, "Created"), el("dd", {}, timeEl(createdAt(task.id)))] : "",
      el("dt", {}, "Updated"),
      el("dd", {}, timeEl(task.status.timestamp)),
      task.metadata && task.metadata.deadline ? [el("dt", {}, "Deadline"), el("dd", {}, timeEl(task.metadata.deadline), isOverdue(task) ? el("span", { class: "overdue" }, " overdue") : "")] : "",
    ),
    actions,
    task.status.message ? el("section", { class: "status" }, el("h2", {}, "Status message"), messageView(task.status.message)) : "",
    el("section", { id: "history" }, el("h2", {}, "Conversation"), (task.history || []).map(messageView)),
    timeline,
    el("section", { id: "artifacts" }, el("h2", {}, "Artifacts"), task.artifacts && task.artifacts.length ? task.artifacts.map(artifactView) : el("p", {}, "None.")),
    task.metadata && Object.keys(task.metadata).length
      ? el("section", { id: "metadata" }, el("h2", {}, "Metadata"), el("pre", { class: "data" }, JSON.stringify(task.metadata, null, 2)))
      : "",
    reply,
  );
}

// The artifacts with one update applied: a chunk with ``append`` adds its parts to
// the artifact so far, any other replaces it.
function withArtifact(artifacts, update) {
  const artifact = update.artifact;
  const list = [...(artifacts || [])];
  const at = list.findIndex((a) => a.artifactId === artifact.artifactId);
  if (at < 0) list.push(artifact);
  else if (update.append) list[at] = { ...list[at], parts: [...(list[at].parts || []), ...(artifact.parts || [])] };
  else list[at] = artifact;
  return list;
}

function drawArtifacts(task) {
  const section = document.getElementById("artifacts");
  if (!section) return;
  // replaceChildren takes nodes, not a list of them (a list would be its text).
  section.replaceChildren(
    el("h2", {}, "Artifacts"),
    ...(task.artifacts && task.artifacts.length ? task.artifacts.map(artifactView) : [el("p", {}, "None.")]),
  );
}

// A whole redraw (on a state change) keeps what the person was typing, and its focus.
function redrawTask(task) {
  const box = document.getElementById("reply-text");
  const typed = box ? box.value : "";
  const focused = box !== null && document.activeElement === box;
  renderTask(task);
  const again = document.getElementById("reply-text");
  if (again) {
    again.value = typed;
    if (focused) again.focus();
  }
}

function follow(task, mine) {
  const controller = new AbortController();
  stopLive = () => controller.abort();
  say("connecting to the task…");
  stream(
    `/tasks/${encodeURIComponent(task.id)}:subscribe`,
    (event) => {
      if (mine !== view) return;
      if (event.artifactUpdate) {
        task = { ...task, artifacts: withArtifact(task.artifacts, event.artifactUpdate) };
        drawArtifacts(task); // the rest of the page stays as it is
        return;
      }
      const before = task.status.state;
      if (event.task) task = event.task;
      else if (event.statusUpdate) task = { ...task, status: event.statusUpdate.status };
      else return;
      if (!ACTIVE.has(task.status.state)) {
        // Ended: read it whole once, as the store has it, rather than trust the pieces.
        api("GET", `/tasks/${encodeURIComponent(task.id)}`)
          .then((stored) => mine === view && redrawTask(stored))
          .catch(() => mine === view && redrawTask(task));
      } else if (task.status.state !== before || event.task) {
        redrawTask(task);
      }
    },
    controller.signal,
    "POST",
    () => mine === view && say("following the task live"),
  )
    .then(() => mine === view && say("the task's stream ended"))
    .catch((error) => {
      if (error.name !== "AbortError" && mine === view) followRefused(task, mine, error);
    });
}

// The task can end between reading it and subscribing to it, and a subscription
// to an ended task is refused: read it again and show how it ended.
function followRefused(task, mine, error) {
  api("GET", `/tasks/${encodeURIComponent(task.id)}`)
    .then((stored) => {
      if (mine !== view) return;
      if (ACTIVE.has(stored.status.state)) {
        say(`live updates stopped: ${error.message}`);
        return;
      }
      redrawTask(stored);
      say("the task ended");
    })
    .catch(() => mine === view && say(`live updates stopped: ${error.message}`));
}

async function cancelOne(task) {
  if (!(await confirmDialog(`Cancel task ${task.id}?`, []))) return;
  try {
    renderTask(await api("POST", `/tasks/${encodeURIComponent(task.id)}:cancel`, {}));
    say("task canceled");
  } catch (error) {
    say(error.message);
  }
}

async function copyJson(task) {
  const text = JSON.stringify(task, null, 2);
  try {
    await navigator.clipboard.writeText(text);
    say("copied the task as JSON");
  } catch {
    say("the browser did not allow copying");
  }
}

async function sendReply(event, task) {
  event.preventDefault();
  const text = new FormData(event.target).get("text").trim();
  if (!text) return;
  const message = {
    messageId: crypto.randomUUID(),
    role: "ROLE_USER",
    parts: [{ text }],
    contextId: task.contextId,
  };
  if (task.status.state === "TASK_STATE_INPUT_REQUIRED" || task.status.state === "TASK_STATE_AUTH_REQUIRED") {
    message.taskId = task.id;
  }
  try {
    const answer = await api("POST", "/message:send", { message, configuration: { returnImmediately: true } });
    const next = answer.task || task;
    navigate(taskLink(next));
  } catch (error) {
    say(error.message);
  }
}

// --- the server's agents (GET /agents; agents.js draws them) ---

async function showAgents() {
  const mine = view;
  main.replaceChildren(el("h1", {}, "Agents"), el("p", {}, "Loading…"));
  let index;
  try {
    index = await api("GET", "/agents", null, ""); // the server's, whichever agent is picked
  } catch (error) {
    if (mine === view) showError(main, error);
    return;
  }
  if (mine !== view) return;
  const agents = index.agents || [];
  main.replaceChildren(...agentsView(agents, { el, plural, base: BASE }));
  say(`${plural(agents.length, "agent")} shown`);
}

// --- routing ---

function route() {
  view += 1;
  stopLive();
  stopLive = () => {};
  const rest = location.pathname.slice(BASE.length);
  const agents = /^\/agents\/?$/.test(rest);
  // The picker says the URL's agent, also after a link or Back changed it.
  document.getElementById("agent").value = new URLSearchParams(location.search).get("agent") || SETTINGS.agents[0];
  for (const link of document.querySelectorAll(".views a")) {
    const current = (link.dataset.nav === "agents") === agents;
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (SETTINGS.auth && !sessionStorage.getItem(TOKEN_KEY)) {
    main.replaceChildren(el("p", {}, `Sign in to see this server's ${agents ? "agents" : "tasks"}.`));
    askForToken();
    return;
  }
  const match = rest.match(/^\/tasks\/([^/]+)$/);
  if (match) showTask(decodeURIComponent(match[1]));
  else if (agents) showAgents();
  else showList();
}

function setUp() {
  document.querySelector(".brand").setAttribute("href", BASE);
  document.getElementById("nav-tasks").setAttribute("href", BASE);
  document.getElementById("nav-agents").setAttribute("href", `${BASE}/agents`);
  const picker = document.getElementById("agent");
  if (SETTINGS.agents.length > 1) {
    picker.closest("label").hidden = false;
    const current = new URLSearchParams(location.search).get("agent") || SETTINGS.agents[0];
    for (const name of SETTINGS.agents) picker.append(el("option", { value: name, selected: name === current }, name));
    picker.addEventListener("change", () => navigate(`${BASE}?agent=${encodeURIComponent(picker.value)}`));
  }
  const signIn = document.getElementById("sign-in");
  if (SETTINGS.auth) {
    signIn.hidden = false;
    signIn.addEventListener("click", askForToken);
  }
  document.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-nav]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    navigate(link.getAttribute("href") || BASE);
  });
  window.addEventListener("popstate", route);
  route();
}

setUp();
