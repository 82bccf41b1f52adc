// A task's page (BASE/tasks/<id>): its facts, conversation, timeline, artifacts and
// metadata, followed live while it is active; cancel it, copy it, answer it.

import { api, stream } from "./api.js";
import { ACTIVE, badge, createdAt, isOverdue, seconds, taskLink, timeEl } from "./facts.js";
import { BASE, confirmDialog, el, main, navigate, onLeave, plural, say, showError, view } from "./page.js";

// Parts an agent keeps for itself (tool calls, reasoning: protocol/internal.py);
// the server sends them to operators only, and the page marks them.
function isInternalPart(part) {
  const m = part.metadata || {};
  return Boolean((m.a2ad && m.a2ad.internal) || m.adk_type || m.kagent_type || m.adk_thought || m.kagent_thought);
}

function partView(part) {
  const drawn = plainPartView(part);
  if (!isInternalPart(part)) return drawn;
  return el("div", { class: "internal" }, el("span", { class: "tag" }, "internal (operators only)"), drawn);
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

export async function showTask(id) {
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
  onLeave(() => controller.abort());
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
