// The dashboard's charts (uPlot), loaded before app.js: app.js owns the stream and the view
// (view.points, view.nodes) and calls updateCharts() after each update.
"use strict";

const PALETTE = ["#2f6fdb", "#e0822f", "#2ca05a", "#c0398b", "#7a52c7", "#1b9aaa", "#8c6d31", "#d64545"];

function chartSize(target) {
  const width = Math.max(320, target.clientWidth || 420);
  return { width, height: 190 };
}

function nodeSeries(names, extra) {
  return [{}, ...names.map((name, i) => ({ label: name, stroke: PALETTE[i % PALETTE.length], width: 1.5, ...extra }))];
}

function makeChart(id, series, axes, scales) {
  const target = document.getElementById(id);
  target.replaceChildren();
  const options = {
    ...chartSize(target),
    series,
    axes: [{ values: (u, ticks) => ticks.map((t) => clockTime(t)), space: 70 }, ...(axes || [{}, {}]).slice(1)],
    scales: { x: { time: true }, ...(scales || {}) },
    legend: { live: false },
    cursor: { drag: { x: false, y: false } },
  };
  return new uPlot(options, series.map(() => []), target);
}

function buildCharts(names) {
  const percentAxis = [{}, { values: (u, ticks) => ticks.map((t) => `${Math.round(t * 100)}%`), size: 46 }];
  const fleet = { label: "fleet avg", stroke: "#1d2433", width: 2, dash: [6, 4] };
  view.charts.util = makeChart("chart-util", [...nodeSeries(names), fleet], percentAxis, { y: { range: [0, 1] } });
  view.charts.pressure = makeChart("chart-pressure", [...nodeSeries(names), fleet], percentAxis, { y: { range: [0, 1] } });
  view.charts.usage = makeChart("chart-usage", [
    ...nodeSeries(names),
    { label: "low", stroke: "#2d5fb3", width: 1.5, dash: [3, 3] },
    { label: "high", stroke: "#d64545", width: 2, dash: [8, 4] },
  ], [{}, { size: 40 }], { y: { range: [0, 100] } });
  const offsets = names.map((_, i) => (i - (names.length - 1) / 2) * 0.07);
  view.classOffsets = offsets;
  view.charts.cls = makeChart("chart-class", nodeSeries(names, { paths: uPlot.paths.stepped({ align: 1 }) }), [{}, {
    size: 64,
    splits: () => [-1, 0, 1],
    values: (u, ticks) => ticks.map((t) => ({ "-1": "under", 0: "ok", 1: "over" })[t] || ""),
  }], { y: { range: [-1.4, 1.4] } });
  view.charts.evictions = makeChart("chart-evictions", [{}, {
    label: "evictions", stroke: "#d64545", fill: "rgba(214,69,69,0.35)",
    paths: uPlot.paths.bars({ size: [0.9, 12] }), points: { show: false },
  }], [{}, { size: 30 }], { y: { range: (u, min, max) => [0, Math.max(3, max)] } });
}

function updateCharts() {
  const names = view.nodes;
  const key = names.join(",");
  if (key !== view.chartNodes) {
    buildCharts(names);
    view.chartNodes = key;
  }
  const cutoff = Date.now() / 1000 - HISTORY_SECONDS;
  const points = view.points.filter((p) => p.time >= cutoff);
  const xs = points.map((p) => p.time);
  const column = (metric, name) => points.map((p) => (p[metric] && p[metric][name] !== undefined ? p[metric][name] : null));
  view.charts.util.setData([xs, ...names.map((n) => column("cpu_utilization", n)), column("cpu_utilization", "fleet")]);
  view.charts.pressure.setData([xs, ...names.map((n) => column("cpu_pressure", n)), column("cpu_pressure", "fleet")]);
  view.charts.usage.setData([xs, ...names.map((n) => column("usage", n)),
    points.map((p) => (p.low === undefined ? null : p.low)), points.map((p) => (p.high === undefined ? null : p.high))]);
  view.charts.cls.setData([xs, ...names.map((n, i) => points.map((p) => (p.classification && p.classification[n] !== undefined ? p.classification[n] + view.classOffsets[i] : null)))]);
  view.charts.evictions.setData([xs, points.map((p) => p.evictions)]);
  const signal = [...points].reverse().find((p) => p.signal);
  if (signal) document.getElementById("usage-caption").textContent = `Load-aware usage (${signal.signal}, 0..100) with low / high thresholds`;
}
