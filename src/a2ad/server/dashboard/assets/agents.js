// The agents view of the a2ad dashboard (BASE/agents): the agents this server hosts,
// as GET /agents lists them (a2ad's index, server/reads/agents.py): each one's name,
// description, card, where it is served and its skills. app.js reads the index with
// the caller's credential and draws it through agentsView. It shows only what the
// index says, which is what each agent's public card says: a fronted agent's
// upstream and the credentials a2ad calls it with stay on the server.

// Only web addresses become links (as for files in app.js's parts).
function webLink(el, url, text = url) {
  return /^https?:\/\//i.test(url || "") ? el("a", { href: url }, text) : el("code", {}, url || "");
}

// The dashboard's table of this agent's tasks: the default agent's is the page itself.
function tasksHref(agent, base) {
  return agent.default ? base : `${base}?agent=${encodeURIComponent(agent.name)}`;
}

function skillItem(el, skill) {
  const tags = (skill.tags || []).filter((tag) => typeof tag === "string" && tag);
  return el(
    "li",
    { class: "skill", dataset: { skillId: skill.id || "" } },
    el("strong", {}, skill.name || skill.id || "unnamed skill"),
    skill.id && skill.id !== skill.name ? el("code", { class: "muted" }, ` ${skill.id}`) : "",
    skill.description ? el("div", {}, skill.description) : "",
    tags.length ? el("ul", { class: "chips", "aria-label": "Tags" }, tags.map((tag) => el("li", { class: "chip" }, tag))) : "",
  );
}

function agentCard(el, agent, index, { base, many }) {
  const skills = agent.skills || [];
  const heading = `agent-${index}`; // a name may hold spaces, which an id can't
  return el(
    "article",
    { class: "agent", "aria-labelledby": heading, dataset: { agent: agent.name } },
    el(
      "h2",
      { id: heading },
      agent.name,
      agent.default && many ? el("span", { class: "badge", title: "also served at /" }, "default") : "",
    ),
    agent.description ? el("p", { class: "description" }, agent.description) : "",
    el(
      "dl",
      { class: "facts" },
      el("dt", {}, "Card"),
      el("dd", { class: "url" }, webLink(el, agent.card)),
      el("dt", {}, "Served at"),
      el("dd", { class: "url" }, el("code", {}, agent.url || "")),
      el("dt", {}, "Tasks"),
      el("dd", {}, el("a", { href: tasksHref(agent, base), dataset: { nav: "list" } }, `${agent.name}'s tasks`)),
    ),
    el("h3", {}, "Skills"),
    skills.length ? el("ul", { class: "skills" }, skills.map((skill) => skillItem(el, skill))) : el("p", { class: "muted" }, "No skills declared."),
  );
}

// The index's agents as the view's content. el: app.js's element maker; plural:
// its "1 agent", "2 agents"; base: where the dashboard is served.
export function agentsView(agents, { el, plural, base }) {
  const many = agents.length > 1;
  return [
    el("h1", {}, "Agents"),
    el("p", { class: "muted", id: "agents-summary" }, `${plural(agents.length, "agent")} on this server, each with its A2A card.`),
    agents.length
      ? el("div", { class: "agents" }, agents.map((agent, i) => agentCard(el, agent, i, { base, many })))
      : el("p", { class: "empty" }, "This server hosts no agent."),
  ];
}
