// The dashboard page: everything it shows comes from the JSON API (docs/dashboard.md), pushed
// by /api/stream as server-sent events, so the page never reloads. Controls POST to the API.
"use strict";

window.dashboardLoadId = Math.random().toString(36).slice(2);

// The longest chart window (charts.js): an hour, what the recorder keeps at a 1 s sync period.
const HISTORY_SECONDS = 3600;
const LOG_ROWS = 400;
const KINDS = {
  filter: "extender filter",
  prioritize: "extender scores",
  schedule: "scheduler",
  label: "labels",
  event: "controller Events",
  taint: "soft taints",
  eviction: "evictions",
  breaker: "circuit breaker",
  metric: "health changes",
  control: "controls",
  policy: "policies",
};
const HIDDEN_BY_DEFAULT = new Set(["prioritize"]);
// What a load-aware signal means, where its name appears (descheduler/signals.py).
const SIGNAL_HELP = {
  cpu_combined: "cpu_combined: a node's CPU utilization while the fleet averages under 80%; " +
    "from 80% on, its CPU pressure (PSI), counted only where the node is over 70% busy (0..100).",
};
const MOVING_THRESHOLDS = "The thresholds move: they are the fleet's average usage minus / plus " +
  "fixed margins (deviation thresholds), recomputed every descheduling cycle.";

const view = { state: null, points: [], log: [], nodes: [], charts: {}, chartNodes: "" };
const hiddenKinds = new Set(HIDDEN_BY_DEFAULT);

// ------------------------------------------------------------------------------ helpers

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// One unit per metric on the page: a share (0..1: utilization, pressure) and a load-aware usage
// (0..100) both read as a percent, rounded alike: at most one decimal, none when it is whole.
function percent(value) {
  return value === undefined || value === null ? "–" : `${Math.round(value * 10) / 10}%`;
}

function pct(share) {
  return share === undefined || share === null ? "–" : percent(share * 100);
}

// The metrics the components read as a share of 0..1 (the node's CPU or memory busy, PSI).
const SHARE_METRIC = /_(utilization|pressure)$/;

function metricValue(name, value) {
  return SHARE_METRIC.test(name) ? pct(value) : fmt(value);
}

// A policy rule in the page's units (`cpu_pressure GreaterThan 60%`); as written in its title.
function ruleText(rule) {
  return `${rule.metricname} ${rule.operator} ${metricValue(rule.metricname, rule.target)}`;
}

// The components' sentences carry the load-aware usage (0..100), PSI and a rule on a share
// (0..1) as bare numbers ("cpu_utilization 85.34 > high 85", "pressure 1.00 -> 0.40 on",
// "cpu_pressure GreaterThan 0.6 (value 0.81)"): on the page they read in percent, as
// everywhere else on it.
const SHARE_RULE = new RegExp("\\b([a-z_]+_(?:utilization|pressure)) " +
  "(GreaterThan|LessThan|Equals|NotEquals|GreaterOrEqual|LessOrEqual) (-?\\d+(?:\\.\\d+)?)" +
  "(?: \\(value (-?\\d+(?:\\.\\d+)?)\\))?", "g");

function withPercents(text) {
  return String(text)
    .replace(SHARE_RULE, (all, metric, operator, target, value) =>
      `${metric} ${operator} ${pct(Number(target))}` + (value === undefined ? "" : ` (value ${pct(Number(value))})`))
    .replace(/\b([a-z_]+) (-?\d+(?:\.\d+)?) > high (-?\d+(?:\.\d+)?)/g,
      (all, signal, value, high) => `${signal} ${percent(Number(value))} > high ${percent(Number(high))}`)
    .replace(/\bpressure \d[^;:]*/g, (clause) => clause.replace(/(\d+(?:\.\d+)?) -> (\d+(?:\.\d+)?) on\b/g,
      (all, before, after) => `${pct(Number(before))} -> ${pct(Number(after))} on`));
}

function fmt(value) {
  if (value === undefined || value === null) return "–";
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

// Every time on the page is on one clock, the world's: the wall clock for the health demo, the
// scenario's own with `tas run --scenario`, shown as the time into the scenario (mm:ss).
function clockTime(seconds) {
  const scenario = view.state && view.state.scenario;
  if (scenario) return scenarioTime(seconds - scenario.start);
  // 24-hour, whatever the reader's locale ("h23": midnight is 00, never 24).
  return new Date(seconds * 1000).toLocaleTimeString([], { hourCycle: "h23" });
}

function scenarioTime(elapsed) {
  const total = Math.max(0, Math.round(elapsed));
  const pad = (n) => String(n).padStart(2, "0");
  const hours = Math.floor(total / 3600);
  const rest = `${pad(Math.floor((total % 3600) / 60))}:${pad(total % 60)}`;
  return hours ? `${hours}:${rest}` : rest;
}

// "Now" on the page's clock: a scenario's clock runs at --speed, not with the wall's.
function pageNow() {
  const state = view.state;
  return state && state.scenario && state.time ? state.time : Date.now() / 1000;
}

// The controls this world offers (`state.controls`; all of them when the state does not say).
function offers(control) {
  const controls = view.state && view.state.controls;
  return !controls || controls.offered.includes(control);
}

function toast(message, error) {
  const box = document.getElementById("toast");
  box.textContent = message;
  box.className = error ? "toast error" : "toast";
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, error ? 6000 : 2500);
}

async function send(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  try {
    const response = await fetch(path, options);
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) toast(`${response.status}: ${answer.error || response.statusText}`, true);
    else toast(`done: ${method} ${path}`);
    return answer;
  } catch (error) {
    toast(`request failed: ${error}`, true);
    return null;
  }
}

// ------------------------------------------------------------------------------ nodes

function podChip(pod) {
  const demo = pod.policy !== null && pod.policy !== undefined;
  const classes = ["chip", "pod"];
  if (demo) classes.push("demo");
  if (pod.violates) classes.push("violates");
  if (pod.app === "stress") classes.push("stress");
  if (pod.app === "node-agent") classes.push("agent");
  const title = `${pod.namespace}/${pod.name}\nCPU ${fmt(pod.cpu)} cores` +
    (pod.violates ? `\nviolate=${pod.violates}` : "");
  const short = pod.app === "stress" ? `stress ${pod.name.split("-").pop()}` : pod.name.replace(/-[0-9a-f]{8,10}-/, "-");
  return el("span", { class: classes.join(" "), title, "data-pod": `${pod.namespace}/${pod.name}` }, short);
}

// Cards are built once per node and updated in place: a control clicked while an update
// arrives must still be the element under the pointer, or the click would be lost.
const cards = new Map();

function meter(label, kind) {
  const fill = el("span");
  const value = el("span");
  const bar = el("div", { class: `bar ${kind || ""}` }, fill);
  const row = el("div", { class: "meter" }, el("span", { class: "muted" }, label), bar, value);
  row.set = (ratio) => {
    const known = ratio !== undefined && ratio !== null;
    fill.style.width = `${known ? Math.min(100, ratio * 100) : 0}%`;
    bar.classList.toggle("hot", known && ratio > 0.8);
    value.textContent = pct(ratio);
  };
  return row;
}

function setChildren(box, key, children) {
  // Replace a list of chips only when what it shows changed.
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  box.replaceChildren(...children);
}

function buildCard(name) {
  const card = {
    root: el("div", { class: "node", "data-node": name }),
    badge: el("span", { class: "class-badge" }),
    classNote: el("div", { class: "class-note muted small", "data-class-note": "" }),
    health: el("b", { "data-health": "" }),
    demand: el("div", { class: "muted small" }),
    cpu: meter("CPU"),
    pressure: meter("pressure", "pressure"),
    // The node's load average per CPU, and whether it serves its demand (loadLines).
    cpuLoad: el("div", { class: "muted small", "data-cpu-load": "" }),
    served: el("div", { class: "muted small", "data-served": "", hidden: true }),
    memory: meter("memory"),
    // The load-aware usage the descheduler judged at its last cycle (its signal: cpu_utilization,
    // cpu_combined...): the number the overutilized note quotes, which the CPU bar (now) need
    // not show.
    usage: Object.assign(meter("load-aware", "usage"), { hidden: true }),
    // The node's pressure curve as LoadAware learned it, and what it predicts now (curveLines).
    curve: el("div", { class: "curve muted small", "data-curve": "", hidden: true }),
    curvePredicts: el("div", { class: "curve muted small", "data-curve-predicts": "", hidden: true }),
    marks: el("div", { class: "chips marks" }),
    pods: el("div", { class: "chips pods" }),
    buttons: [0, 1, 2].map((value) => el("button", {
      "data-action": "health",
      "data-value": value,
      title: `set ${name} health_metric to ${value}`,
      onclick: () => send("POST", `/api/nodes/${name}/health`, { value }),
    }, String(value))),
    clear: el("button", {
      "data-action": "clear-load",
      title: `remove the stress pods from ${name}`,
      onclick: () => send("DELETE", `/api/nodes/${name}/load`),
    }),
    load: el("button", {
      "data-action": "load",
      title: `pin a stress pod burning 2 cores to ${name}`,
      onclick: () => send("POST", `/api/nodes/${name}/load`, { cores: 2 }),
    }, "+2 cores"),
    healthLabel: el("span", { class: "muted" }, "health"),
  };
  // The controls sit right under the node's name, above everything that grows while pods land
  // (notes, chips), so a button stays where the cursor is; "clear N" appears left of "+2 cores",
  // which keeps its place at the right edge.
  card.root.append(
    el("div", { class: "node-head" }, el("span", { class: "node-name" }, name), card.badge),
    el("div", { class: "node-controls" },
      card.healthLabel, card.buttons,
      el("span", { class: "spacer" }),
      card.clear,
      card.load),
    card.classNote,
    el("div", { class: "health" }, "health_metric ", card.health),
    card.demand, card.cpu, card.pressure, card.cpuLoad, card.served, card.memory, card.usage,
    card.curve, card.curvePredicts, card.marks, card.pods);
  return card;
}

function updateCard(card, node, pods, on) {
  const health = node.metrics.health_metric;
  // Coloured by what the policies do to it now (the header's and the policy card's source).
  const moved = on.deschedule.has(node.name);
  card.root.className = ["node",
    on.dontschedule.has(node.name) && !moved ? "health-1" : "",
    moved ? "health-2" : "",
    node.violating.length ? "violating" : ""].join(" ").trim();
  card.badge.textContent = node.classification || "";
  card.badge.className = `class-badge ${node.classification || ""}`;
  card.badge.hidden = !node.classification;
  const note = classNote(node);
  card.classNote.textContent = note;
  card.classNote.hidden = !note;
  card.health.textContent = fmt(health);
  card.demand.textContent = node.model ? `CPU demand ${fmt(node.model.cpuDemand)} of ${fmt(node.allocatable.cpu)} cores` : "";
  card.cpu.set(node.metrics.cpu_utilization);
  card.pressure.set(node.metrics.cpu_pressure);
  const load = loadLines(node, view.state && view.state.descheduler.servedDemand);
  card.cpuLoad.textContent = load.text;
  card.cpuLoad.title = load.title;
  card.served.hidden = !load.served;
  card.served.textContent = load.served;
  card.served.title = load.title;
  card.memory.set(node.metrics.memory_utilization);
  const t = view.state && view.state.descheduler.thresholds;
  const signal = t ? Object.keys(t.high)[0] : undefined;
  const found = signal === undefined ? undefined : (node.usage || {})[signal];
  // No value yet (before the first cycle, or a node the cycle did not judge): no meter, rather
  // than an empty one.
  const usage = found === null ? undefined : found;
  card.usage.hidden = usage === undefined;
  card.usage.dataset.signal = signal || "";
  if (usage !== undefined) {
    card.usage.set(usage / 100);
    const cycle = view.state.descheduler.lastCycle;
    card.usage.title = `${signal} ${percent(usage)} at the last descheduling cycle` +
      (cycle ? ` (${clockTime(cycle)})` : "") + `: what the load-aware classification judged ` +
      `(low ${percent(t.low[signal])}, high ${percent(t.high[signal])})` +
      (SIGNAL_HELP[signal] ? `\n${SIGNAL_HELP[signal]}` : "");
  }
  const curve = curveLines(node.curve);
  card.curve.hidden = !curve;
  card.curvePredicts.hidden = !curve || !curve.predicts;
  card.curve.textContent = curve ? curve.curve : "";
  card.curvePredicts.textContent = curve ? curve.predicts : "";
  card.curve.title = curve ? curve.title : "";
  card.curvePredicts.title = curve ? curve.title : "";
  card.buttons.forEach((button, value) => button.classList.toggle("current", health === value));
  const labels = Object.entries(node.labels)
    .filter(([key, value]) => value === "violating" || key.startsWith("telemetry.aware.scheduling"));
  setChildren(card.marks, JSON.stringify([labels, node.taints]), [
    ...labels.map(([key, value]) => el("span", {
      class: `chip label ${value === "violating" ? "violating" : ""}`,
      "data-label": `${key}=${value}`,
      title: `${key}=${value}`,
    }, `${key}=${value}`)),
    // A taint's key without its domain (telemetry.aware.scheduling/): the whole key did not
    // fit a card and was cut; the title holds it whole.
    ...node.taints.map((t) => {
      const rest = `${t.value ? "=" + t.value : ""}:${t.effect}`;
      const short = `${t.key.split("/").pop()}${rest}`;
      return el("span", { class: "chip taint", "data-taint": t.key, title: `${t.key}${rest}` }, short);
    }),
  ]);
  const nodePods = node.pods.map((key) => pods.get(key)).filter(Boolean)
    .sort((a, b) => (b.policy ? 1 : 0) - (a.policy ? 1 : 0));
  setChildren(card.pods, JSON.stringify(nodePods.map((p) => [p.name, p.violates])), nodePods.map(podChip));
  const stress = nodePods.filter((p) => p.app === "stress").length;
  card.clear.textContent = `clear ${stress}`;
  card.clear.hidden = stress === 0 || !offers("load");
  card.load.hidden = !offers("load");
  card.healthLabel.hidden = !offers("health");
  card.buttons.forEach((button) => { button.hidden = !offers("health"); });
}

// Why a node is overutilized, with the hysteresis that keeps it so (descheduler/classify.py,
// hold_overutilized): once above its high threshold it stays overutilized until every signal
// is at or below its low one, or holdSeconds after it was last above the high one.
function classNote(node) {
  const over = node.overutilized;
  const t = view.state && view.state.descheduler.thresholds;
  if (!over || !t) return "";
  const signals = Object.keys(t.high);
  const below = signals.map((s) => percent(t.low[s])).join(" and ");
  const until = over.holdUntil === null ? "" : ` or until ${clockTime(over.holdUntil)}`;
  const since = `overutilized since ${clockTime(over.since)}`;
  if (over.held) {
    const now = signals.map((s) => `${s} ${percent(node.usage[s])}`).join(", ");
    return `${since}, until below ${below}${until}: held (${now} at the last cycle, not above ` +
      `high ${signals.map((s) => percent(t.high[s])).join(" and ")})`;
  }
  const above = signals.filter((s) => node.usage[s] > t.high[s])
    .map((s) => `${s} ${percent(node.usage[s])} > high ${percent(t.high[s])}`).join(", ");
  const hold = over.holdSeconds > 0 ? ` or for ${fmt(over.holdSeconds)}s` : "";
  // Why none of its pods left in the last cycle, as the cycle recorded it.
  const kept = over.keptBy ? `; not relieved in the last cycle: ${over.keptBy}` : "";
  return `${since}: ${above}; once not above high, held until below ${below}${hold}${kept}`;
}

// A node's pressure curve (the state's `node.curve`, null where no LoadAware learns curves):
// how its CPU pressure (PSI) answers its utilization, as LoadAware learned it from the node's
// own samples (tas/calibration/curve.py), and the PSI it predicts at the utilization now beside
// the shared model's. "Acts like 3 of 4 cores": the node stalls as a queue with 3 servers
// does at the same utilization; fewer than its cores, it stalls sooner than the shared model
// says. Until it has minSamples usable samples, the shared model predicts for it.
function curveLines(curve) {
  if (!curve) return null;
  const cores = Number.isInteger(curve.cores) ? String(curve.cores) : fmt(curve.cores);
  const samples = `${curve.samples} sample${curve.samples === 1 ? "" : "s"}`;
  let text;
  if (curve.learned) {
    const shape = curve.servers < curve.sharedServers ? "stalls sooner than the shared model"
      : curve.servers > curve.sharedServers ? "stalls later than the shared model"
        : "as the shared model";
    text = `pressure curve: learned, acts like ${curve.servers} of ${cores} cores (${samples}): ${shape}`;
  } else {
    const have = curve.samples ? samples : "no usable samples yet";
    text = `pressure curve: shared model (${have}, needs ${curve.minSamples})`;
  }
  let predicts = "";
  if (curve.utilization !== null && curve.utilization !== undefined) {
    const measured = curve.measured === null || curve.measured === undefined
      ? "" : `; measured ${pct(curve.measured)}`;
    predicts = curve.learned
      ? `at ${pct(curve.utilization)} busy it predicts pressure ${pct(curve.predicted)} ` +
        `(shared model ${pct(curve.shared)})${measured}`
      : `at ${pct(curve.utilization)} busy the shared model predicts pressure ` +
        `${pct(curve.shared)}${measured}`;
  }
  const title = "How this node's CPU pressure (PSI) rises with its CPU utilization. LoadAware " +
    "learns each node's own curve from its (utilization, pressure) samples and predicts " +
    "what a move relieves on it. \"Acts like N of C cores\": the node stalls as N cores " +
    "would at the same utilization (fewer: burstier, it stalls sooner; more: smoother). " +
    `The shared model (Erlang C on the node's ${curve.sharedServers} cores) predicts for ` +
    `a node until it has ${curve.minSamples} usable samples (utilization 5-98%, pressure ` +
    `1-99%; its last ${curve.window} kept).` +
    (curve.cycle ? ` As of the descheduling cycle at ${clockTime(curve.cycle)}.` : "");
  return { curve: text, predicts, title };
}

// A node's load average per CPU (the state's `metrics.cpu_load`: node-exporter's node_load1
// over the node's CPUs, at most 1) as a card says it, in two decimals: a value below 1 never
// rounded up to 1, and 1 said to be at least that (the metric stops there).
function loadText(load) {
  if (load === undefined || load === null) return "load – of its CPUs";
  if (load >= 1) return "load 1.00 of its CPUs (or more)";
  return `load ${(Math.min(Math.round(load * 100), 99) / 100).toFixed(2)} of its CPUs`;
}

// What a card says of its node's load average per CPU. Below 1 every runnable task runs: what
// the node's CPU pressure counts is tasks that wait and are served, not work lost, and where
// LoadAware applies that rule (the state's `descheduler.servedDemand`) a move off the node must
// be predicted to gain servedGain times its cost (docs/descheduler.md, "Waiting is not loss").
// The card says so where the pressure reaches LoadAware's atRiskPressure (below it LoadAware
// moves nothing off any node). A node without the metric shows "–", never 0.
function loadLines(node, rule) {
  const load = node.metrics.cpu_load;
  const known = load !== undefined && load !== null;
  const pressure = node.metrics.cpu_pressure;
  const served = Boolean(known && rule && load < rule.atRiskLoad &&
    pressure !== undefined && pressure !== null && pressure >= rule.atRiskPressure);
  const title = "cpu_load: the node's one-minute load average (node_load1) over its CPUs, at " +
    "most 1. At 1, at least as many tasks are runnable as it has CPUs (its demand reaches " +
    "beyond them); below 1, every runnable task runs, so the waiting its CPU pressure counts " +
    "is served, not work lost." +
    (rule ? ` LoadAware moves a pod off a node below ${rule.atRiskLoad} only if the move is ` +
      `predicted to gain ${rule.servedGain}x its cost (its tasks wait, and are served).` : "") +
    (known ? "" : " This node reports none (no loadavg collector, or its series is missing " +
      "or stale): LoadAware judges it without that rule.");
  return {
    text: loadText(load),
    served: served
      ? `its tasks wait but are served: LoadAware moves a pod off it only if the move ` +
        `gains ${rule.servedGain}x its cost`
      : "",
    title,
  };
}

function renderNodes(state) {
  const pods = new Map(state.pods.map((p) => [`${p.namespace}/${p.name}`, p]));
  const box = document.getElementById("nodes");
  const names = state.nodes.map((n) => n.name);
  for (const name of [...cards.keys()]) {
    if (!names.includes(name)) cards.delete(name);
  }
  const on = acted(state);
  for (const node of state.nodes) {
    if (!cards.has(node.name)) cards.set(node.name, buildCard(node.name));
    updateCard(cards.get(node.name), node, pods, on);
  }
  const order = names.map((n) => cards.get(n).root);
  if (order.length !== box.children.length || order.some((root, i) => box.children[i] !== root)) {
    box.replaceChildren(...order);
  }
}

// ------------------------------------------------------------------------------ policies, workloads

// TAS users read "violating" as the deschedule label (`<policy>=violating`, pods evicted), so
// a policy whose only problem is dontschedule (new pods kept off, nothing moved) says that.
function policyBadges(policy) {
  const status = policy.status;
  if (!status) return [];
  const listed = status.violatingNodes || {};
  const count = (n) => `${n} node${n === 1 ? "" : "s"}`;
  const badges = [];
  const deschedule = policy.labelledNodes.length || (listed.deschedule || []).length;
  if (deschedule) {
    badges.push(el("span", {
      class: "compliance deschedule", "data-badge": "deschedule",
      title: `the controller labels these nodes ${policy.name}=violating and the descheduler evicts the policy's pods from them`,
    }, `deschedule: violating on ${count(deschedule)}`));
  }
  const dontschedule = (listed.dontschedule || []).length;
  if (dontschedule) {
    badges.push(el("span", {
      class: "compliance dontschedule", "data-badge": "dontschedule",
      title: "the extender keeps new pods of this policy off these nodes; nothing is evicted for it",
    }, `dontschedule on ${count(dontschedule)}`));
  }
  if (!badges.length && status.compliance) {
    badges.push(el("span", { class: `compliance ${status.compliance}`, "data-badge": "compliant" }, status.compliance));
  }
  return badges;
}

// What each rule does to a node, and how many nodes it does it to now (the policy's status).
const STRATEGY_EFFECT = { dontschedule: "don't schedule here", deschedule: "move pods away" };

// The nodes each strategy acts on now, over every policy: the one source (the state's
// `policy.nodes`, judged on the values the cards show) of the header's counts, the policy
// card's and the cards' colours, so they agree on every update.
function acted(state) {
  const on = { dontschedule: new Set(), deschedule: new Set() };
  for (const policy of state.policies) {
    for (const [strategy, nodes] of Object.entries(policy.nodes || {})) {
      if (on[strategy]) nodes.forEach((n) => on[strategy].add(n));
    }
  }
  return on;
}

function affected(policy, strategy, total) {
  if (!(strategy in STRATEGY_EFFECT) || !policy.nodes) return null;
  const nodes = policy.nodes[strategy] || [];
  const which = nodes.length && nodes.length <= 4 ? ` (${nodes.join(", ")})` : "";
  return el("div", { class: "affects", "data-affects": strategy },
    `${nodes.length} of ${total} node${total === 1 ? "" : "s"}: ${STRATEGY_EFFECT[strategy]}${which}`);
}

// The header's count of what the policies do to the nodes now, every node in a bucket: healthy
// (no strategy acts on it), don't schedule here, move pods away (a node in both is in both, as
// the policy card counts it), and no value when a node reports no health_metric.
function renderHealthCounts(state) {
  const box = document.getElementById("health-counts");
  if (!box) return;
  const total = state.nodes.length;
  const on = acted(state);
  const missing = state.nodes.filter((n) => n.metrics.health_metric === undefined).map((n) => n.name);
  const buckets = [
    ["healthy", "h0", state.nodes.map((n) => n.name)
      .filter((n) => !on.dontschedule.has(n) && !on.deschedule.has(n) && !missing.includes(n))],
    ["don't schedule here", "h1", [...on.dontschedule].sort()],
    ["move pods away", "h2", [...on.deschedule].sort()],
  ];
  if (missing.length) buckets.push(["no health_metric", "muted", missing]);
  const counts = buckets.map(([meaning, look, nodes]) => {
    const which = nodes.length && nodes.length < total && nodes.length <= 3 ? ` (${nodes.join(", ")})` : "";
    return el("span", { class: look, "data-health-count": meaning, "data-nodes": nodes.join(",") },
      `${nodes.length} of ${total} nodes: ${meaning}${which}`);
  });
  box.replaceChildren("Now: ", ...counts.flatMap((c, i) => (i ? [", ", c] : [c])), ".");
}

function renderPolicies(state) {
  const box = document.getElementById("policies");
  if (!state.policies.length) {
    box.replaceChildren(el("p", { class: "muted" }, "No valid policy loaded."));
    return;
  }
  box.replaceChildren(...state.policies.map((policy) => {
    const status = policy.status || {};
    const said = (name, rule) => (name === "scheduleonmetric"
      ? `${rule.metricname}: ${rule.operator === "LessThan" ? "lower" : "higher"} value scores higher`
      : ruleText(rule));
    const rows = Object.entries(policy.strategies).flatMap(([name, strategy]) => {
      const rules = name === "scheduleonmetric" ? strategy.rules.slice(0, 1) : strategy.rules;
      return [
        el("dt", {}, name),
        el("dd", { title: rules.map((r) => r.text).join("\n") },
          el("div", {}, rules.map((r) => said(name, r)).join(strategy.logicalOperator === "allOf" ? " and " : " or ")),
          affected(policy, name, state.nodes.length)),
      ];
    });
    return el("div", { class: "policy", "data-policy": `${policy.namespace}/${policy.name}` },
      el("div", { class: "policy-head" },
        el("b", {}, policy.name), el("span", { class: "muted" }, policy.namespace),
        policyBadges(policy),
        el("span", { class: "muted small" }, status.message || "status not written yet")),
      el("dl", { class: "strategies" }, rows,
        el("dt", {}, "labelled nodes"),
        el("dd", {}, policy.labelledNodes.length ? policy.labelledNodes.map((n) => `${n} (${policy.name}=violating)`).join(", ") : "none")));
  }), ...state.policyProblems.map((p) => el("p", { class: "h2" }, p)));
}

const workloadRows = new Map();

function scaleBy(name, step) {
  const workload = view.state.workloads.find((w) => w.name === name);
  if (workload) send("POST", `/api/workloads/${name}/scale`, { replicas: Math.max(0, workload.pods + step) });
}

function renderWorkloads(state) {
  const box = document.getElementById("workloads");
  if (!box.firstChild) box.append(el("table", { class: "workloads" }, el("tbody")));
  const body = box.querySelector("tbody");
  for (const w of state.workloads) {
    if (!workloadRows.has(w.name)) {
      const scalable = w.scalable && offers("scale");
      const count = el("td");
      const row = el("tr", { "data-workload": w.name },
        el("td", {}, el("b", {}, w.name)),
        el("td", { class: "muted" }, w.namespace),
        count,
        el("td", {}, scalable ? [
          el("button", { "data-action": "scale-down", title: `one ${w.name} pod less`, onclick: () => scaleBy(w.name, -1) }, "−"),
          " ",
          el("button", { "data-action": "scale-up", title: `one ${w.name} pod more`, onclick: () => scaleBy(w.name, 1) }, "+"),
        ] : el("span", { class: "muted small" }, w.scalable ? "" : "one per node")));
      row.count = count;
      workloadRows.set(w.name, row);
      body.append(row);
    }
    workloadRows.get(w.name).count.textContent = `${w.pods} pods`;
  }
  const d = state.descheduler;
  const t = d.thresholds;
  const signals = t ? Object.keys(t.high) : [];
  const thresholds = t
    ? signals.map((s) => `${s}: low ${percent(t.low[s])}, high ${percent(t.high[s])}` +
      (t.average ? ` (fleet average ${percent(t.average[s])})` : "")).join("; ")
    : "no classification yet";
  const notes = [];
  if (signals.some((s) => s in SIGNAL_HELP)) {
    notes.push(...signals.filter((s) => s in SIGNAL_HELP).map((s) => el("div", { class: "small", "data-help": s }, SIGNAL_HELP[s])));
  }
  if (t && t.average) notes.push(el("div", { class: "small", "data-help": "deviation" }, MOVING_THRESHOLDS));
  // The usage chart names the signal too (charts.js writes its text): the same help on hover.
  // On the page's one clock: a scenario's interval in its own seconds (the wall's times --speed).
  const every = state.scenario
    ? `${fmt(state.deschedulingInterval * state.scenario.speed)}s of scenario time`
    : `${state.deschedulingInterval}s`;
  const usageCaption = document.getElementById("usage-caption");
  if (usageCaption) {
    usageCaption.title = [...signals.map((s) => SIGNAL_HELP[s]), t && t.average ? MOVING_THRESHOLDS : null]
      .filter(Boolean).join("\n");
  }
  const controls = state.controls;
  if (controls && controls.reason) notes.push(el("div", { class: "small h2", "data-help": "controls" }, controls.reason));
  document.getElementById("descheduler").replaceChildren(
    el("div", { title: signals.map((s) => SIGNAL_HELP[s]).filter(Boolean).join("\n") || null },
      `mode ${state.mode}, every ${every}; load-aware ${thresholds}`),
    ...notes,
    el("div", {}, `evictions so far: ${d.evictions}; circuit breaker: `,
      d.circuitBreaker ? el("b", { class: "h2" }, `open (${d.circuitBreaker})`) : "closed"),
    el("div", {}, "extender: ", el("a", { href: `${state.extender}/`, title: "what the extender serves" }, state.extender),
      " (", el("a", { href: `${state.extender}/debug/decisions` }, "its last decisions"), ")"));
}

// ------------------------------------------------------------------------------ decision log

function renderFilters() {
  const box = document.getElementById("log-filters");
  box.replaceChildren(...Object.entries(KINDS).map(([kind, label]) => el("label", {},
    el("input", {
      type: "checkbox", checked: !hiddenKinds.has(kind), "data-kind-filter": kind,
      onchange: (event) => { if (event.target.checked) hiddenKinds.delete(kind); else hiddenKinds.add(kind); renderLog(); },
    }), label)));
}

function logRow(group) {
  const entry = group.entry;
  const repeated = group.count > 1
    ? el("span", {
      class: "repeat", "data-count": group.count,
      title: `${group.count} times in a row, from ${clockTime(group.first.time)} to ${clockTime(entry.time)}`,
    }, `×${group.count}`)
    : null;
  return el("tr", { class: `kind-${entry.kind}`, "data-kind": entry.kind, "data-id": entry.id, "data-time": entry.time },
    el("td", {}, clockTime(entry.time)),
    el("td", {}, entry.source),
    el("td", { class: "kind" }, entry.kind),
    el("td", {}, withPercents(entry.summary), repeated ? " " : null, repeated));
}

// Newest first; an entry that repeats the one shown above it (same kind, same words: the same
// node and message) is counted in that row, not shown again.
function renderLog() {
  const groups = [];
  let last = null;
  for (let i = view.log.length - 1; i >= 0 && groups.length < LOG_ROWS; i--) {
    const entry = view.log[i];
    if (hiddenKinds.has(entry.kind)) continue;
    if (last && last.entry.kind === entry.kind && last.entry.summary === entry.summary) {
      last.count += 1;
      last.first = entry;
      continue;
    }
    last = { entry, first: entry, count: 1 };
    groups.push(last);
  }
  document.getElementById("log").replaceChildren(...groups.map(logRow));
}

// ------------------------------------------------------------------------------ the scenario

// `tas run --scenario`: its name, description, clock and progress in place of the health
// demo's header, and at its end the table `tas simulate` prints for this run.
function renderScenario(state) {
  const scenario = state.scenario;
  document.body.classList.toggle("scenario-mode", Boolean(scenario));
  const panel = document.getElementById("scenario-panel");
  document.getElementById("demo-hint").hidden = Boolean(scenario);
  panel.hidden = !scenario;
  if (!scenario) return;
  document.getElementById("page-sub").textContent = `scenario ${scenario.name}, in real time at ${fmt(scenario.speed)}x`;
  document.title = `Scenario ${scenario.name}: telemetry-aware scheduling`;
  document.getElementById("scenario-name").textContent = scenario.name;
  document.getElementById("scenario-description").textContent = scenario.description;
  const share = scenario.duration > 0 ? Math.min(1, scenario.elapsed / scenario.duration) : 1;
  document.getElementById("scenario-progress").value = share;
  document.getElementById("scenario-clock").textContent =
    `${scenarioTime(scenario.elapsed)} of ${scenarioTime(scenario.duration)} scenario time (${Math.round(share * 100)}%)` +
    (scenario.finished ? ": ended, the world holds still until Ctrl-C" : "");
  const summary = document.getElementById("scenario-summary");
  summary.hidden = !scenario.summary;
  document.getElementById("scenario-table").textContent = scenario.summary || "";
}

function renderConnection(state) {
  const badge = document.getElementById("connection");
  const scenario = state && state.scenario;
  if (scenario && scenario.finished) {
    badge.textContent = "scenario ended";
    badge.className = "pill ended";
  } else {
    badge.textContent = scenario ? "live: scenario running" : "live";
    badge.className = "pill on";
  }
}

// ------------------------------------------------------------------------------ the stream

function apply(update) {
  if (update.reset) {
    view.points = [];
    view.log = [];
  }
  // The state first: the cut-off is on its clock (a scenario's, years behind the wall's: cut
  // on the wall clock, a page opened late would drop every point the stream first sends).
  const state = update.state;
  if (state && state.nodes) view.state = state;
  view.points.push(...update.points);
  const cutoff = pageNow() - HISTORY_SECONDS - 60;
  while (view.points.length && view.points[0].time < cutoff) view.points.shift();
  view.log.push(...update.decisions);
  if (view.log.length > 3000) view.log.splice(0, view.log.length - 3000);
  if (state && state.nodes) {
    view.nodes = state.nodes.map((n) => n.name);
    renderScenario(state);
    renderNodes(state);
    renderHealthCounts(state);
    renderPolicies(state);
    renderWorkloads(state);
    document.getElementById("clock").textContent = state.time ? clockTime(state.time) : "";
  }
  if (update.decisions.length || update.reset) renderLog();
  if (view.nodes.length) updateCharts();
}

function connect() {
  const badge = document.getElementById("connection");
  const source = new EventSource("/api/stream");
  source.addEventListener("update", (event) => {
    apply(JSON.parse(event.data));
    renderConnection(view.state);
  });
  source.onerror = () => {
    badge.textContent = "disconnected, retrying…";
    badge.className = "pill off";
  };
}

renderFilters();
window.addEventListener("resize", () => { view.chartNodes = ""; if (view.nodes.length) updateCharts(); });
connect();
