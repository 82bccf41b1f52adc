// The task list's charts (inline SVG, drawn from GET /a2ad/activity): tasks by state
// over the last hour, how long finished tasks took, and the throughput.

import { api } from "./api.js";
import { STATES, seconds } from "./facts.js";
import { el } from "./page.js";

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

function rate(count, minutes) {
  const perMinute = count / minutes;
  if (perMinute >= 10) return `${Math.round(perMinute)} a minute`;
  if (perMinute >= 0.5) return `${perMinute.toFixed(1)} a minute`;
  return `${((count * 60) / minutes).toFixed(count ? 1 : 0)} an hour`;
}

function stateKey(state) {
  return state.replace("TASK_STATE_", "").toLowerCase();
}

export async function fillActivity(into) {
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
