// The dashboard's charts (uPlot), loaded before app.js: app.js owns the stream and the view
// (view.points, view.nodes, view.state) and calls updateCharts() after each update; the charts
// redraw at most every CHART_REDRAW_MS, whatever the update rate.
//
// What a reader needs after an hour of `make run`:
// - nodes in one order (sorted by name, numbers as numbers) and one colour each, kept while
//   other nodes join or leave; thresholds in colours no node uses, each labelled;
// - up to MAX_LINE_NODES nodes, one line per node; beyond, one heatmap row per node (lines of
//   more nodes than there are distinct colours cannot be told apart);
// - the load-aware class as a state timeline, one row per node (a heatmap beyond
//   MAX_LINE_NODES), not step lines stacked on top of each other;
// - evictions per time bucket, stacked by strategy, and per node over the window;
// - each node's metric age against the age past which its values are stale;
// - no chart twice: the load-aware usage chart only where its signal is not the CPU chart's.
// uPlot's line paths draw one min/max segment per pixel column, so an hour of points (3600 at a
// one-second sync period) costs no more to draw than the pixels it spans.
"use strict";

// Eight colours told apart by most readers (after Okabe & Ito's palette), none of them a
// threshold's red or near-black, nor the fleet average's grey.
const NODE_COLOURS = ["#2f6fdb", "#e69f00", "#009e73", "#cc79a7", "#7a52c7", "#56b4e9", "#8c6d31", "#1b9aaa"];
const THRESHOLD_HIGH = "#d1001f";
const THRESHOLD_LOW = "#1d2433";
const FLEET_COLOUR = "#7d8597";
const MAX_LINE_NODES = 8;
const CHART_REDRAW_MS = 500;
const CHART_HEIGHT = 190;
const AXIS_FONT = "11px system-ui, -apple-system, \"Segoe UI\", Roboto, \"DejaVu Sans\", sans-serif";
const CLASSES = [
  { value: -1, name: "underutilized", colour: "#8fbcef" },
  { value: 0, name: "appropriately utilized", colour: "#dfe3ea" },
  { value: 1, name: "overutilized", colour: "#f28c28" },
];
const STRATEGIES = {
  TASViolations: { label: "TAS violation", colour: "#c0392b" },
  LoadAware: { label: "load-aware", colour: "#e69f00" },
};
const OTHER_STRATEGY_COLOURS = ["#7a52c7", "#1b9aaa", "#8c6d31"];
const WINDOWS = { 600: "10 min", 3600: "1 hour" };
// Right of the plot: each threshold's short tag beside its line's end (never over the data),
// and room for the newest time label, centred on its tick at the plot's right end.
const GUTTER = 48;
const TAG_HEIGHT = 14;
// The time axis's steps: whole seconds, so two ticks never read as the same time.
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200];

const chartView = { window: 3600, colours: new Map(), lastDraw: 0, timer: null, drawMs: 0, draws: 0 };

// ------------------------------------------------------------------------------ nodes

function byName(a, b) {
  return a.localeCompare(b, undefined, { numeric: true });
}

// A node keeps its colour for as long as it is there: a newcomer takes the first colour no
// present node holds (its own earlier one if that is free), so nobody else's changes.
function nodeColour(name, present) {
  const held = new Set(present.filter((n) => n !== name && chartView.colours.has(n)).map((n) => chartView.colours.get(n)));
  const before = chartView.colours.get(name);
  if (before !== undefined && !held.has(before)) return NODE_COLOURS[before % NODE_COLOURS.length];
  let index = 0;
  while (held.has(index)) index++;
  chartView.colours.set(name, index);
  return NODE_COLOURS[index % NODE_COLOURS.length];
}

function chartNodes(names) {
  const sorted = [...names].sort(byName);
  // Colours are handed out in sorted order, so a fresh page gives the first node the first.
  for (const name of sorted) nodeColour(name, sorted);
  return sorted;
}

// ------------------------------------------------------------------------------ axes

// The y axis is as wide as its widest label (measured in the axis font), so no label is cut
// at the chart's left edge ("L00%" for 100%). After uPlot's own demo of the same idea
// (leeoniya/uPlot, demos/axis-autosize.html, `size`).
function fittedAxis(extra) {
  return {
    font: AXIS_FONT,
    gap: 4,
    ticks: { size: 4 },
    size(u, values, axisIdx, cycleNum) {
      const axis = u.axes[axisIdx];
      const widest = Math.max(0, ...(values || []).filter(Boolean).map(textWidth));
      // At least half a time label wide, too: the time axis centres its labels on their
      // ticks, and a tick at the plot's left end would push half its label past the chart's
      // edge (when that happens depends on the clock, so a narrow axis clipped now and then).
      const timeLabel = textWidth(clockTime(u.scales.x.max ?? Date.now() / 1000));
      const wanted = Math.ceil(Math.max(widest + axis.ticks.size + axis.gap + 6, timeLabel / 2 + 3));
      // Never narrower than the labels: a size settled before the labels were known (no
      // values yet in the first layout cycle) would let them run off the chart's left edge.
      // Growing only, so uPlot's layout cycles still converge.
      return cycleNum > 1 && axis._size ? Math.max(axis._size, wanted) : wanted;
    },
    ...extra,
  };
}

// Measured on a canvas of its own: uPlot keeps track of the font it set on the chart's.
const probe = document.createElement("canvas").getContext("2d");

function textWidth(text) {
  probe.font = AXIS_FONT;
  return probe.measureText(String(text)).width;
}

function timeAxis() {
  return { font: AXIS_FONT, values: (u, ticks) => timeLabels(ticks), space: 70, size: 30, incrs: TIME_STEPS };
}

// Each tick's time, and none twice: a label equal to the one before it is left out.
function timeLabels(ticks) {
  let last = null;
  return ticks.map((t) => {
    const label = clockTime(t);
    if (label === last) return "";
    last = label;
    return label;
  });
}

// A share (0..1) axis, in percent as everywhere on the page.
function percentAxis() {
  return fittedAxis({ values: (u, ticks) => ticks.map((t) => `${Math.round(t * 100)}%`) });
}

// A load-aware usage (0..100) axis.
function usageAxis() {
  return fittedAxis({ values: (u, ticks) => ticks.map((t) => `${Math.round(t)}%`) });
}

// ------------------------------------------------------------------------------ building

function chartWidth(target) {
  return Math.max(320, target.clientWidth || 420);
}

// One time range for every chart: the window up to the newest point (or since the first).
function timeRange() {
  const points = view.points;
  if (!points.length) return [0, 1];
  const last = points[points.length - 1].time;
  const first = Math.max(points[0].time, last - chartView.window);
  return last > first ? [first, last] : [last - 1, last];
}

function makeChart(id, { series, axes, scales, height, legend, thresholds, rows }) {
  const target = document.getElementById(id);
  target.replaceChildren();
  // The key of the thresholds the chart it replaces drew (a heatmap draws none).
  target.closest("figure")?.querySelector(".threshold-keys")?.remove();
  const chart = {};
  const options = {
    width: chartWidth(target),
    height: height || CHART_HEIGHT,
    padding: [8, GUTTER, 0, 0],
    series,
    axes: [timeAxis(), ...(axes || [fittedAxis()])],
    scales: { x: { time: true, range: () => timeRange() }, ...(scales || {}) },
    legend: legend || { live: false },
    cursor: { drag: { x: false, y: false } },
    hooks: {
      draw: [(u) => {
        // uPlot remembers the fill and font it last set on its canvas and does not set them
        // again: leave them as found, or the next redraw's axis labels take a row's colour.
        u.ctx.save();
        if (rows) drawRows(u, rows());
        if (thresholds) drawThresholds(u, thresholds());
        u.ctx.restore();
      }],
    },
  };
  chart.plot = new uPlot(options, series.map(() => []), target);
  chart.plot.root.dataset.chart = id;
  return chart;
}

function nodeSeries(names, extra) {
  return names.map((name) => ({ label: name, stroke: nodeColour(name, names), width: 1.5, points: { show: false }, ...extra }));
}

// ------------------------------------------------------------------------------ thresholds

// The policies' own rules on a metric (dontschedule and deschedule: the ones with a line a
// value crosses; scheduleonmetric only ranks), e.g. "cpu_pressure GreaterThan 0.6".
function policyThresholds(metric) {
  const state = view.state;
  if (!state) return [];
  // One line per rule, naming every policy and strategy that has it.
  const found = new Map();
  for (const policy of state.policies || []) {
    for (const [strategy, spec] of Object.entries(policy.strategies)) {
      if (strategy === "scheduleonmetric") continue;
      for (const rule of spec.rules) {
        if (rule.metricname !== metric || typeof rule.target !== "number") continue;
        const text = `${rule.metricname} ${rule.operator} ${rule.target}`;
        const line = found.get(text) || {
          value: rule.target, colour: THRESHOLD_HIGH, dash: [8, 4], text, notes: [],
          label: ruleText(rule), tag: metricValue(rule.metricname, rule.target),
        };
        line.notes.push(`${policy.name} ${strategy}`);
        found.set(text, line);
      }
    }
  }
  return [...found.values()].map((line) => ({ ...line, note: line.notes.join(", ") }));
}

// The load-aware descheduler's own thresholds where its signal is this metric (0..100 over a
// 0..1 share), fixed ones only: deviation thresholds move with the fleet (the usage chart
// draws those as series).
function loadAwareThresholds(metric) {
  const t = view.state && view.state.descheduler.thresholds;
  if (!t || t.average || !(metric in t.high)) return [];
  return [
    { value: t.high[metric] / 100, colour: THRESHOLD_HIGH, dash: [8, 4], text: `load-aware high ${t.high[metric]}`,
      label: `load-aware high ${percent(t.high[metric])}`, tag: percent(t.high[metric]), note: "overutilized above" },
    { value: t.low[metric] / 100, colour: THRESHOLD_LOW, dash: [3, 3], text: `load-aware low ${t.low[metric]}`,
      label: `load-aware low ${percent(t.low[metric])}`, tag: percent(t.low[metric]), note: "underutilized at or below" },
  ];
}

function metricThresholds(metric) {
  return [...policyThresholds(metric), ...loadAwareThresholds(metric)];
}

// Threshold lines on the canvas; beside each line's right end, in the gutter right of the plot,
// its short tag ("85%") as text (never over the data; tags pushed apart, never over each
// other), its whole description in the tag's title and in the key under the chart.
function drawThresholds(u, thresholds) {
  const ctx = u.ctx;
  const { left, width } = u.bbox;
  const [min, max] = [u.scales.y.min, u.scales.y.max];
  const shown = new Map();
  for (const t of thresholds) {
    if (t.value === null || t.value === undefined || t.value < min || t.value > max) continue;
    const key = `${t.text}|${t.note}`;
    if (shown.has(key)) continue;
    shown.set(key, t);
    const y = Math.round(u.valToPos(t.value, "y", true));
    if (t.line !== false) {
      ctx.save();
      ctx.strokeStyle = t.colour;
      ctx.lineWidth = 2 * uPlot.pxRatio;
      ctx.setLineDash(t.dash.map((d) => d * uPlot.pxRatio));
      ctx.beginPath();
      ctx.moveTo(left, y);
      ctx.lineTo(left + width, y);
      ctx.stroke();
      ctx.restore();
    }
  }
  const plotTop = u.bbox.top / uPlot.pxRatio;
  const plotBottom = plotTop + u.bbox.height / uPlot.pxRatio;
  const tagLeft = (left + width) / uPlot.pxRatio + 4;
  const placed = [...shown.values()]
    .map((t) => ({ t, y: plotTop + u.valToPos(t.value, "y") }))
    .sort((a, b) => a.y - b.y);
  // Top down, each tag centred on its line unless that would overlap the one above it; then
  // bottom up, back inside the plot's height.
  let next = -Infinity;
  for (const p of placed) {
    p.top = Math.max(p.y - TAG_HEIGHT / 2, next);
    next = p.top + TAG_HEIGHT;
  }
  let limit = plotBottom + TAG_HEIGHT / 2;
  for (const p of [...placed].reverse()) {
    p.top = Math.min(p.top, limit - TAG_HEIGHT);
    limit = p.top;
  }
  const wrap = u.root.querySelector(".u-wrap");
  let box = wrap.querySelector(".threshold-labels");
  if (!box) {
    box = el("div", { class: "threshold-labels" });
    wrap.append(box);
  }
  const describe = (t) => (t.note ? `${t.label || t.text} (${t.note})` : t.label || t.text);
  box.replaceChildren(...placed.map(({ t, top }) => el("span", {
    class: "threshold-label",
    "data-threshold": t.text,
    "data-value": t.value,
    title: describe(t),
    style: `top: ${Math.round(top)}px; left: ${Math.round(tagLeft)}px; color: ${t.colour}`,
  }, t.tag || t.label || t.text)));
  renderThresholdKey(u, [...shown.values()].map((t) => [t, describe(t)]));
}

// Under the chart: each threshold drawn, as a dashed swatch in its colour and its words.
function renderThresholdKey(u, items) {
  const figure = u.root.closest("figure");
  if (!figure) return;
  let box = figure.querySelector(".threshold-keys");
  if (!box) {
    box = el("div", { class: "threshold-keys swatches" });
    figure.append(box);
  }
  const key = JSON.stringify(items.map(([t, text]) => [t.colour, text]));
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  box.replaceChildren(...items.map(([t, text]) => el("span", { class: "swatch-item threshold-key", "data-threshold": t.text },
    el("span", { class: "dash-swatch", style: `border-top-color: ${t.colour}` }), text)));
}

// ------------------------------------------------------------------------------ rows: timeline, heatmap

// One row per node, coloured by a value per point: runs of one colour are drawn as one
// rectangle, so the cost is the number of changes, not of points.
function drawRows(u, { names, columns, colourOf, labelled }) {
  const ctx = u.ctx;
  const xs = u.data[0];
  const { left, top, width, height } = u.bbox;
  const gap = labelled && names.length <= MAX_LINE_NODES ? 3 * uPlot.pxRatio : 0;
  const rowHeight = height / Math.max(1, names.length);
  const right = left + width;
  names.forEach((name, row) => {
    const values = columns[row];
    const y = top + row * rowHeight;
    let start = null;
    let colour = null;
    const flush = (end) => {
      if (colour !== null && start !== null && end > start) {
        ctx.fillStyle = colour;
        ctx.fillRect(start, y + gap / 2, end - start, Math.max(1, rowHeight - gap));
      }
    };
    for (let i = 0; i < xs.length; i++) {
      const x = Math.max(left, Math.min(right, u.valToPos(xs[i], "x", true)));
      const c = values[i] === null || values[i] === undefined ? null : colourOf(values[i]);
      if (c !== colour) {
        flush(x);
        colour = c;
        start = x;
      }
    }
    flush(right);
  });
  placeRowLabels(u, names, rowHeight / uPlot.pxRatio, top / uPlot.pxRatio);
}

// Node names left of their rows, as text: every row up to a height where they still fit, then
// every k-th.
function placeRowLabels(u, names, rowHeight, top) {
  const wrap = u.root.querySelector(".u-wrap");
  let box = wrap.querySelector(".row-labels");
  if (!box) {
    box = el("div", { class: "row-labels" });
    wrap.append(box);
  }
  const every = Math.max(1, Math.ceil(12 / Math.max(rowHeight, 0.01)));
  const width = u.bbox.left / uPlot.pxRatio - 6;
  box.replaceChildren(...names.map((name, row) => (row % every ? null : el("span", {
    class: "row-label",
    "data-row": name,
    title: name,
    style: `top: ${Math.round(top + (row + 0.5) * rowHeight - 7)}px; width: ${Math.max(0, width)}px`,
  }, name))).filter(Boolean));
}

function rowsAxis(names) {
  // Room for the longest name; the names themselves are placed by placeRowLabels.
  return {
    font: AXIS_FONT,
    splits: () => [],
    values: () => [],
    grid: { show: false },
    ticks: { show: false },
    size: () => Math.ceil(Math.max(40, ...names.map(textWidth)) + 12),
  };
}

function rowsHeight(count) {
  const perRow = count <= MAX_LINE_NODES ? 22 : Math.max(3, Math.min(14, Math.floor(360 / count)));
  return Math.min(420, Math.max(90, count * perRow + 38));
}

function heatmapLegend(id, items) {
  const box = document.getElementById(id);
  if (!box) return;
  box.replaceChildren(...items.map(([colour, text]) => el("span", { class: "swatch-item" },
    el("span", { class: "swatch", style: `background: ${colour}` }), text)));
}

// A value's colour in a heatmap: light to dark blue, red-orange past the threshold.
function valueColour(value, scale, threshold) {
  const share = Math.max(0, Math.min(1, value / scale));
  const level = Math.round(share * 8) / 8;
  if (threshold !== null && threshold !== undefined && value > threshold) {
    return `hsl(8, 80%, ${Math.round(62 - level * 22)}%)`;
  }
  return `hsl(215, 70%, ${Math.round(94 - level * 56)}%)`;
}

function classColour(value) {
  const found = CLASSES.find((c) => c.value === value);
  return found ? found.colour : null;
}

// ------------------------------------------------------------------------------ evictions

function strategyLook(name, index) {
  return STRATEGIES[name] || { label: name, colour: OTHER_STRATEGY_COLOURS[index % OTHER_STRATEGY_COLOURS.length] };
}

// About 60 buckets over the window, of a round size.
function bucketSeconds(span) {
  for (const size of [5, 10, 15, 30, 60, 120, 300, 600]) {
    if (span / size <= 60) return size;
  }
  return 900;
}

function evictionBuckets(points, range) {
  const size = bucketSeconds(range[1] - range[0]);
  const first = Math.floor(range[0] / size) * size;
  const count = Math.floor((range[1] - first) / size) + 1;
  const strategies = new Set();
  const byNode = new Map();
  const buckets = Array.from({ length: count }, () => new Map());
  for (const p of points) {
    if (!p.evicted) continue;
    const bucket = buckets[Math.floor((p.time - first) / size)];
    if (!bucket) continue;
    for (const [strategy, nodes] of Object.entries(p.evicted)) {
      strategies.add(strategy);
      for (const [node, n] of Object.entries(nodes)) {
        bucket.set(strategy, (bucket.get(strategy) || 0) + n);
        const counts = byNode.get(node) || new Map();
        counts.set(strategy, (counts.get(strategy) || 0) + n);
        byNode.set(node, counts);
      }
    }
  }
  const known = Object.keys(STRATEGIES).filter((s) => strategies.has(s));
  const order = [...known, ...[...strategies].filter((s) => !(s in STRATEGIES)).sort()];
  const xs = buckets.map((_, i) => first + (i + 0.5) * size);
  return { size, xs, buckets, order, byNode };
}

function renderEvictionsByNode(byNode, order) {
  const box = document.getElementById("evictions-by-node");
  if (!box) return;
  const names = [...byNode.keys()].sort(byName);
  if (!names.length) {
    box.replaceChildren(el("span", { class: "muted small" }, "no evictions in this window"));
    return;
  }
  const totals = names.map((n) => [...byNode.get(n).values()].reduce((a, b) => a + b, 0));
  const most = Math.max(...totals);
  box.replaceChildren(...names.map((name, i) => {
    const counts = byNode.get(name);
    const parts = order.filter((s) => counts.has(s));
    return el("div", { class: "ebn-row", "data-node": name },
      el("span", { class: "ebn-name" },
        el("span", { class: "swatch", style: `background: ${nodeColour(name, view.nodes.includes(name) ? view.nodes : [...view.nodes, name])}` }), name),
      el("span", { class: "ebn-bar" }, parts.map((s) => el("span", {
        "data-strategy": s,
        title: `${counts.get(s)} ${strategyLook(s, order.indexOf(s)).label}`,
        style: `width: ${(100 * counts.get(s)) / most}%; background: ${strategyLook(s, order.indexOf(s)).colour}`,
      }))),
      el("span", { class: "ebn-count" }, parts.map((s) => `${counts.get(s)} ${strategyLook(s, order.indexOf(s)).label}`).join(", ")));
  }));
}

// ------------------------------------------------------------------------------ the charts

function buildCharts(names) {
  const lines = names.length <= MAX_LINE_NODES;
  const fleet = { label: "fleet average", stroke: FLEET_COLOUR, width: 2, dash: [6, 4], points: { show: false } };
  const heat = (metric, scale, threshold) => ({
    series: [{}, { label: "", show: false }],
    axes: [rowsAxis(names)],
    scales: { y: { range: [0, Math.max(1, names.length)] } },
    legend: { show: false },
    height: rowsHeight(names.length),
    rows: () => ({ names, columns: chartView.columns[metric], colourOf: (v) => valueColour(v, scale, threshold()), labelled: true }),
  });
  const firstThreshold = (metric) => () => heatThreshold(metric);
  for (const [key, metric] of [["util", "cpu_utilization"], ["pressure", "cpu_pressure"]]) {
    view.charts[key] = makeChart(`chart-${key}`, lines ? {
      series: [{}, ...nodeSeries(names), fleet],
      axes: [percentAxis()],
      scales: { y: { range: [0, 1] } },
      thresholds: () => metricThresholds(metric),
    } : heat(metric, 1, firstThreshold(metric)));
    view.charts[key].lines = lines;
  }
  const usageThresholds = () => {
    const last = chartView.lastClassified;
    if (!last) return [];
    // Labels only: the low and high series draw the lines, which move with deviation thresholds.
    return [
      { value: last.high, colour: THRESHOLD_HIGH, line: false, dash: [8, 4], text: `high ${fmt(last.high)}`,
        label: `high ${percent(last.high)}`, tag: percent(last.high), note: "overutilized above" },
      { value: last.low, colour: THRESHOLD_LOW, line: false, dash: [3, 3], text: `low ${fmt(last.low)}`,
        label: `low ${percent(last.low)}`, tag: percent(last.low), note: "underutilized at or below" },
    ];
  };
  view.charts.usage = makeChart("chart-usage", lines ? {
    series: [{}, ...nodeSeries(names),
      { label: "low", stroke: THRESHOLD_LOW, width: 1.5, dash: [3, 3], points: { show: false } },
      { label: "high", stroke: THRESHOLD_HIGH, width: 2, dash: [8, 4], points: { show: false } }],
    axes: [usageAxis()],
    scales: { y: { range: [0, 100] } },
    thresholds: usageThresholds,
  } : heat("usage", 100, () => (chartView.lastClassified ? chartView.lastClassified.high : null)));
  view.charts.cls = makeChart("chart-class", {
    series: [{}, { label: "", show: false }],
    axes: [rowsAxis(names)],
    scales: { y: { range: [0, Math.max(1, names.length)] } },
    legend: { show: false },
    height: rowsHeight(names.length),
    rows: () => ({ names, columns: chartView.columns.classification, colourOf: classColour, labelled: true }),
  });
  heatmapLegend("class-legend", CLASSES.map((c) => [c.colour, c.name]));
  view.charts.age = makeChart("chart-age", lines ? {
    series: [{}, ...nodeSeries(names)],
    axes: [fittedAxis({ values: (u, ticks) => ticks.map((t) => `${t}s`) })],
    scales: { y: { range: (u, min, max) => [0, Math.max(chartView.maxAge ? chartView.maxAge * 1.25 : 5, max || 0)] } },
    thresholds: () => (chartView.maxAge ? [{
      value: chartView.maxAge, colour: THRESHOLD_HIGH, dash: [8, 4], tag: `${fmt(chartView.maxAge)}s`,
      text: `stale after ${fmt(chartView.maxAge)}s`, note: "the components no longer read it",
    }] : []),
  } : {
    ...heat("metric_age", 1, () => null),
    rows: () => ({
      names,
      columns: chartView.columns.metric_age,
      labelled: true,
      colourOf: (v) => (chartView.maxAge && v >= chartView.maxAge ? THRESHOLD_HIGH : valueColour(v, chartView.maxAge || 30, null)),
    }),
  });
  heatmapLegend("heat-legend", lines ? [] : [
    [valueColour(0.1, 1, null), "low"], [valueColour(0.9, 1, null), "high"],
    [valueColour(0.9, 1, 0), "past the threshold its chart's caption names"],
    [THRESHOLD_HIGH, "metric age: stale"],
  ]);
  buildEvictionChart([], []);
}

// Redrawn with the charts: the thresholds a caption names change with the policies.
function renderCaptions(lines) {
  const captions = {
    util: metricCaption("CPU utilization", "cpu_utilization", lines),
    pressure: metricCaption("CPU pressure (PSI some)", "cpu_pressure", lines),
    age: lines
      ? "Metric age per node: seconds since its newest value was measured"
      : `Metric age, a row per node (darker: older; red: stale${chartView.maxAge ? `, past ${fmt(chartView.maxAge)}s` : ""})`,
  };
  for (const [key, text] of Object.entries(captions)) {
    const caption = document.getElementById(`${key}-caption`);
    if (caption && caption.textContent !== text) caption.textContent = text;
  }
}

// A heatmap's red: past the lowest GreaterThan threshold of the policies (or the load-aware
// high threshold on this signal), if any.
function heatThreshold(metric) {
  const found = policyThresholds(metric).filter((t) => t.text.includes("GreaterThan"))
    .concat(loadAwareThresholds(metric).slice(0, 1));
  return found.length ? Math.min(...found.map((t) => t.value)) : null;
}

// A caption says only what its chart draws: the red lines named are the ones there are.
function metricCaption(title, metric, lines) {
  if (!lines) {
    const threshold = heatThreshold(metric);
    return threshold === null
      ? `${title}, a row per node (darker: higher)`
      : `${title}, a row per node (darker: higher; red: past ${pct(threshold)})`;
  }
  const drawn = [];
  if (policyThresholds(metric).length) drawn.push("red: the policies' thresholds");
  if (loadAwareThresholds(metric).length) drawn.push("red / dark: the load-aware high / low thresholds");
  return `${title} per node (dashed grey: fleet average${drawn.length ? `; ${drawn.join("; ")}` : ""})`;
}

// Rebuilt when a strategy appears or a count changes (the legend says each one's count).
function buildEvictionChart(order, totals) {
  view.charts.evictions = makeChart("chart-evictions", {
    series: [{}, ...order.map((s, i) => ({
      label: `${strategyLook(s, i).label} (${totals[i]})`,
      stroke: strategyLook(s, i).colour,
      fill: strategyLook(s, i).colour,
      width: 0,
      paths: uPlot.paths.bars({ size: [0.85, 40] }),
      points: { show: false },
    }))],
    axes: [fittedAxis({ values: (u, ticks) => ticks.map((t) => (Number.isInteger(t) ? String(t) : "")) })],
    scales: { y: { range: (u, min, max) => [0, Math.max(3, max || 0)] } },
  });
  view.charts.evictions.key = `${order.join(",")}|${totals.join(",")}`;
}

// Each node's values over the points shown, in the charts' node order.
function columnsOf(points, names) {
  const column = (get) => names.map((n) => points.map((p) => {
    const value = get(p);
    return value && value[n] !== undefined ? value[n] : null;
  }));
  return {
    cpu_utilization: column((p) => p.cpu_utilization),
    cpu_pressure: column((p) => p.cpu_pressure),
    usage: column((p) => p.usage),
    classification: column((p) => p.classification),
    metric_age: column((p) => p.metric_age),
  };
}

function drawCharts() {
  const started = performance.now();
  chartView.lastDraw = Date.now();
  const names = chartNodes(view.nodes);
  chartView.maxAge = view.state && view.state.metricMaxAge;
  const key = `${names.join(",")}|${chartView.window}`;
  if (key !== view.chartNodes) {
    buildCharts(names);
    view.chartNodes = key;
  }
  renderCaptions(view.charts.util.lines);
  const range = timeRange();
  const points = view.points.filter((p) => p.time >= range[0]);
  const xs = points.map((p) => p.time);
  const columns = columnsOf(points, names);
  chartView.columns = columns;
  chartView.lastClassified = [...points].reverse().find((p) => p.high !== undefined && p.high !== null) || null;
  const fleet = (metric) => points.map((p) => (p[metric] && p[metric].fleet !== undefined ? p[metric].fleet : null));
  const empty = [xs, xs.map(() => null)];
  if (view.charts.util.lines) {
    view.charts.util.plot.setData([xs, ...columns.cpu_utilization, fleet("cpu_utilization")]);
    view.charts.pressure.plot.setData([xs, ...columns.cpu_pressure, fleet("cpu_pressure")]);
    view.charts.usage.plot.setData([xs, ...columns.usage,
      points.map((p) => (p.low === undefined ? null : p.low)), points.map((p) => (p.high === undefined ? null : p.high))]);
    view.charts.age.plot.setData([xs, ...columns.metric_age]);
  } else {
    for (const key of ["util", "pressure", "usage", "age"]) view.charts[key].plot.setData(empty);
  }
  view.charts.cls.plot.setData(empty);
  const evictions = evictionBuckets(points, range);
  const totals = evictions.order.map((s) => evictions.buckets.reduce((sum, b) => sum + (b.get(s) || 0), 0));
  if (`${evictions.order.join(",")}|${totals.join(",")}` !== view.charts.evictions.key) {
    buildEvictionChart(evictions.order, totals);
  }
  // Stacked: each series is its own count plus those of the strategies after it, drawn in
  // order, so each bar shows every strategy's share.
  const stacked = evictions.order.map((_, k) => evictions.buckets.map((b) => evictions.order.slice(k).reduce((sum, s) => sum + (b.get(s) || 0), 0) || null));
  view.charts.evictions.plot.setData([evictions.xs, ...stacked]);
  const caption = document.getElementById("evictions-caption");
  if (caption) caption.textContent = `Evictions per ${evictions.size >= 60 ? `${evictions.size / 60} min` : `${evictions.size} s`}, by strategy`;
  renderEvictionsByNode(evictions.byNode, evictions.order);
  const signal = [...points].reverse().find((p) => p.signal);
  // A load-aware signal that is the CPU utilization, on fixed thresholds: the usage chart would
  // be the CPU chart again (the same data in 0..100), and the CPU chart draws its thresholds.
  const usageFigure = document.getElementById("chart-usage").closest("figure");
  usageFigure.hidden = Boolean(signal && signal.signal === "cpu_utilization" &&
    loadAwareThresholds("cpu_utilization").length);
  if (signal) {
    document.getElementById("usage-caption").textContent = view.charts.util.lines
      ? `Load-aware usage (${signal.signal}, in %) with low / high thresholds`
      : `Load-aware usage (${signal.signal}, in %), a row per node (red: past the high threshold)`;
  }
  chartView.drawMs = performance.now() - started;
  chartView.draws += 1;
}

// Called by app.js after every update: draw now, or once the redraw interval has passed.
function updateCharts() {
  if (chartView.timer !== null) return;
  const wait = Math.max(0, chartView.lastDraw + CHART_REDRAW_MS - Date.now());
  chartView.timer = setTimeout(() => {
    chartView.timer = null;
    if (view.nodes.length) drawCharts();
  }, wait);
}

function renderWindowButtons() {
  const box = document.getElementById("chart-window");
  if (!box) return;
  box.replaceChildren(...Object.entries(WINDOWS).map(([seconds, label]) => el("button", {
    "data-window": seconds,
    class: Number(seconds) === chartView.window ? "current" : "",
    title: `show the last ${label}`,
    onclick: () => {
      chartView.window = Number(seconds);
      renderWindowButtons();
      if (view.nodes.length) drawCharts();
    },
  }, label)));
}

window.chartView = chartView;
// After app.js (el, fmt, clockTime) has loaded.
document.addEventListener("DOMContentLoaded", renderWindowButtons);
