// What the views say of a task: its state (a badge), its times, its words, whether
// it is overdue, and its page's address.

import { BASE, el } from "./page.js";

export const STATES = [
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
export const ACTIVE = new Set(STATES.slice(0, 4).map(([key]) => key));

export function badge(state) {
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
export function createdAt(id) {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7/.test(id)) return "";
  return new Date(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toISOString();
}

// An id as the table shows it: a2ad's ids are version 7 UUIDs, whose first
// characters are the time (the same for every task of a minute), so a long id shows
// its random end, the whole of it in the tooltip.
export function idCode(id) {
  const text = id || "";
  return el("code", { title: text }, text.length > 12 ? `…${text.slice(-8)}` : text);
}

export function age(id) {
  const made = createdAt(id);
  if (!made) return "";
  return el("time", { datetime: made, title: `created ${made}` }, ago(made).replace(" ago", ""));
}

export function timeEl(timestamp) {
  if (!timestamp) return "";
  return el("time", { datetime: timestamp, title: timestamp }, ago(timestamp));
}

export function textOf(message) {
  if (!message || !message.parts) return "";
  return message.parts
    .filter((p) => typeof p.text === "string")
    .map((p) => p.text)
    .join(" ");
}

export function requestText(task) {
  const asked = (task.history || []).filter((m) => m.role === "ROLE_USER");
  return textOf(asked[asked.length - 1]);
}

export function firstWords(text, words = 12) {
  const all = text.trim().split(/\s+/);
  return all.length > words ? `${all.slice(0, words).join(" ")} …` : all.join(" ");
}

// A task is overdue while it is active and past its deadline (metadata.deadline),
// or when its status has not changed for longer than "stale after" (the toolbar's,
// kept in the URL; as `a2ad tasks cancel-overdue --stale-after` reads it).
export const DEFAULT_STALE = "10m";

export function parseDuration(text) {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec((text || "").trim());
  if (!match) return null;
  const unit = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 }[match[2]];
  return Number(match[1]) * unit;
}

function staleMs() {
  const given = new URLSearchParams(location.search).get("stale");
  return parseDuration(given || DEFAULT_STALE);
}

export function overdueReason(task) {
  if (!ACTIVE.has(task.status.state)) return "";
  const deadline = task.metadata && task.metadata.deadline;
  if (deadline && Date.parse(deadline) < Date.now()) return "past its deadline";
  const stale = staleMs();
  const updated = Date.parse(task.status.timestamp || "");
  if (stale !== null && updated && Date.now() - updated > stale) return `no change for ${seconds(Date.now() - updated)}`;
  return "";
}

export function isOverdue(task) {
  return overdueReason(task) !== "";
}

export function taskLink(task) {
  const query = new URLSearchParams();
  const agent = new URLSearchParams(location.search).get("agent");
  if (agent) query.set("agent", agent);
  const suffix = query.toString() ? `?${query}` : "";
  return `${BASE}/tasks/${encodeURIComponent(task.id)}${suffix}`;
}

export function seconds(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 7200000) return `${(ms / 60000).toFixed(1)} min`;
  return `${(ms / 3600000).toFixed(1)} h`;
}
