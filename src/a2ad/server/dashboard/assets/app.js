// The a2ad dashboard: an A2A 1.0 HTTP+JSON client of the server that serves it.
// No framework and no build step. Views: the task list (list.js; its filters in the
// URL's query), a task's page (task.js; BASE/tasks/<id>) and the server's agents
// (agents.js; BASE/agents). This module routes between them and sets the page up;
// page.js holds what they share, api.js talks to the server with the caller's
// credential, so the server decides what the page may see.

import { agentsView } from "./agents.js";
import { TOKEN_KEY, api, askForToken } from "./api.js";
import { showList } from "./list.js";
import { BASE, SETTINGS, el, enterView, main, navigate, plural, say, setRouter, showError, view } from "./page.js";
import { showTask } from "./task.js";

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

// Draws the view the URL names (page.js's route() and navigate() call it).
function route() {
  enterView();
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
  setRouter(route);
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
