// The page the dashboard's views draw into (index.html): its settings, its element
// maker, its live region and confirm dialog, and which view is on it. app.js routes;
// the views (list.js, task.js, agents.js) draw into `main` and move on with navigate().

export const SETTINGS = JSON.parse(document.querySelector('meta[name="a2ad-settings"]').content);
export const BASE = SETTINGS.base;
export const main = document.getElementById("main");
// Bumped by each route(): a view's awaits that return after it was left draw nothing.
export let view = 0;
let stopLive = () => {};
let router = () => {};

// --- which view is on the page ---

// A new view (app.js's route): the last one's live updates stop.
export function enterView() {
  view += 1;
  stopLive();
  stopLive = () => {};
}

// What stops the current view's live updates (a stream it follows) when it is left.
export function onLeave(stop) {
  stopLive = stop;
}

// app.js's router, which draws the view the URL names: set once, at start. (The
// views call it through route() and navigate(), so none of them imports app.js.)
export function setRouter(draw) {
  router = draw;
}

export function route() {
  router();
}

export function navigate(url) {
  history.pushState(null, "", url);
  route();
}

// --- small helpers ---

export function el(tag, attrs = {}, ...children) {
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

export function showError(where, error) {
  where.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
}

export function say(text) {
  document.getElementById("live").textContent = text;
}

// A count and its noun, as a2ad/wording.py words it: "1 task", "3 tasks".
export function plural(count, noun) {
  return `${count.toLocaleString()} ${noun}${count === 1 ? "" : "s"}`;
}

export function confirmDialog(title, items, canConfirm = true, confirm = "Cancel task") {
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

