// The task list (the page at BASE): the counts by state, the charts, the filters
// (kept in the URL's query), the table of tasks kept live from GET /a2ad/changes,
// cancelling the overdue ones and sending a new task.

import { api, stream } from "./api.js";
import { fillActivity } from "./charts.js";
import {
  ACTIVE,
  DEFAULT_STALE,
  STATES,
  age,
  badge,
  firstWords,
  idCode,
  isOverdue,
  overdueReason,
  parseDuration,
  requestText,
  taskLink,
  textOf,
  timeEl,
} from "./facts.js";
import { BASE, confirmDialog, el, main, navigate, onLeave, plural, route, say, showError, view } from "./page.js";

const PAGE_SIZE = 50;

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
// onChange, at most every 150 ms; reconnects until stopped (what it returns).
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
  return () => {
    controller.abort();
    clearTimeout(timer);
  };
}

export async function showList() {
  const mine = view;
  const filters = filtersFromUrl();
  const counts = el("div", { class: "counts", role: "group", "aria-label": "Tasks by state" });
  const body = el("tbody");
  const pager = el("nav", { class: "pager", "aria-label": "Pages" });
  const charts = el("div", { class: "charts", role: "group", "aria-label": "Activity" });
  main.replaceChildren(
    el("h1", {}, "Tasks"),
    counts,
    charts,
    filterForm(filters),
    overdueToolbar(filters),
    tasksTable(body),
    pager,
    newTaskForm(),
  );
  const { refresh, stop } = refresher(mine, filters, { counts, charts, body, pager });
  if ((await refresh()) && mine === view) {
    const stopWatching = watchChanges(refresh);
    onLeave(() => {
      stopWatching();
      stop();
    });
  }
}

function tasksTable(body) {
  return el(
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
}

// "Overdue when unchanged for" (kept in the URL) and the button that cancels the
// view's overdue tasks.
function overdueToolbar(filters) {
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
  return el(
    "div",
    { class: "toolbar" },
    el("label", { for: "stale" }, "Overdue when unchanged for"),
    staleInput,
    el("span", { id: "stale-help", class: "muted" }, "or past its deadline"),
    overdueButton,
  );
}

// The list view's refresh (the view `mine`'s, drawing into its parts): the table's
// page each time, the counts and the charts less often. stop: drops a pending count.
function refresher(mine, filters, { counts, charts, body, pager }) {
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
  return { refresh, stop: () => clearTimeout(countsLater) };
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
