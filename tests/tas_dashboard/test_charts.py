"""The page's charts after an hour, in a real headless Chromium at 1600 px against the real
dashboard server (the `Harness`: real uvicorn, recorder and textfile metric view) whose recorder
was first given an hour of sync periods (one a second), then live ticks.

Covered, as a reader sees it: the load-aware class is a timeline with one labelled row per node
(sorted), each row coloured by the node's class; the policy's own threshold
(`cpu_pressure GreaterThan 0.6`, psi-aware's dontschedule) is a labelled line at 0.6 in a colour
no node uses; evictions are stacked by strategy (TAS violation, load-aware) and listed per node;
the metric-age chart shows the age past which values are stale; the charts span the hour (or
the last 10 minutes, from the buttons) and redraw in under 250 ms; no y-axis label is cut at a
chart's left edge ("L00%"), no label runs out of its chart, and time labels stay dark after
redraws; the soft tainter's taint chip stays inside its card; a node keeps its colour when
another leaves or joins; above 8 nodes the per-node charts are heatmaps with a row per node.
Screenshots: `test-artifacts/dashboard-charts.png`, `test-artifacts/dashboard-heatmap.png`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from descheduler.classify import ThresholdSpec, classify
from descheduler.cycle import CycleReport
from descheduler.evictor import EvictionDecision
from descheduler.tainter import soft_taint
from tas.cluster.model import Node
from tas.policies.files import load_policy_path
from tas.types import MetricName, Namespace, NodeName
from tas.vocabulary import DEFAULT_TAINT_PREFIX
from tas_dashboard.recorder import Tick
from tas_inmemory.demo import NODE_CORES, NODE_MEMORY
from tests.tas_dashboard.browser import js, patient, screenshot
from tests.tas_dashboard.harness import POLICY, REPO, Harness

PSI_POLICY = REPO / "scenarios" / "policies" / "psi-aware.yaml"
NAMESPACE = Namespace("health-metric-demo")
HOUR = 3600
SPEC = ThresholdSpec({"cpu_utilization": 35.0}, {"cpu_utilization": 80.0})
#: The page's class colours (charts.js CLASSES), as the canvas holds them.
OVERUTILIZED = (0xF2, 0x8C, 0x28)
APPROPRIATE = (0xDF, 0xE3, 0xEA)
UNDERUTILIZED = (0x8F, 0xBC, 0xEF)
#: The soft tainter's taint: one word of 60 characters, wider than a card at 1600 px.
TAINT = soft_taint(f"{DEFAULT_TAINT_PREFIX}/overutilized")


def _usage(node: str, t: float, end: float) -> float:
    """node-a underutilized for the first half hour, overutilized for the second."""
    if node == "node-a":
        return 10.0 if t < end - HOUR / 2 else 90.0
    return 50.0


def _fill_history(harness: Harness, names: list[str], points: int) -> None:
    """`points` sync periods, one a second, ending a second ago."""
    harness.view.refresh_once()  # the metric files' ages
    end = time.time() - 1
    for i in range(points):
        t = end - points + 1 + i
        hot = t >= end - 1200  # node-b's CPU pressure past psi-aware's 0.6 for 20 minutes
        columns = {
            MetricName("cpu_utilization"): {NodeName(n): _usage(n, t, end) / 100 for n in names},
            MetricName("cpu_pressure"): {
                NodeName(n): 0.8 if n == "node-b" and hot else 0.1 for n in names
            },
        }
        cycle = None
        if i % 60 == 0 or i == points - 1:
            usages = {NodeName(n): {"cpu_utilization": _usage(n, t, end)} for n in names}
            cycle = CycleReport(
                classifications={"relieve": classify(usages, SPEC)},
                decisions=_evictions(t, end),
            )
        harness.recorder.observe(Tick(now=t, columns=columns, cycle=cycle))


def _evictions(t: float, end: float) -> list[EvictionDecision]:
    def evicted(pod: str, node: str, strategy: str) -> EvictionDecision:
        return EvictionDecision(NAMESPACE, pod, NodeName(node), strategy, "why", "evicted")

    if end - 660 < t <= end - 600:
        return [evicted("a", "node-c", "TASViolations"), evicted("b", "node-c", "TASViolations")]
    if end - 360 < t <= end - 300:
        return [evicted("c", "node-d", "LoadAware")]
    return []


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    running = Harness(tmp_path)
    policies = load_policy_path(POLICY).policies + load_policy_path(PSI_POLICY).policies
    running.store.replace(policies)
    return running


def _open(browser: webdriver.Chrome, harness: Harness) -> WebDriverWait[webdriver.Chrome]:
    wait = patient(browser, 30)
    browser.get(f"{harness.url}/")
    wait.until(lambda d: d.execute_script("return window.chartView && window.chartView.draws > 0"))
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#chart-class .row-label"))
    return wait


#: The colour of the canvas pixel at a chart's (time, value), or (x share, row) for row charts.
PIXEL = """
const [id, x, y] = arguments;
const u = view.charts[id].plot;
const px = Math.round(u.valToPos(x, "x", true)), py = Math.round(u.valToPos(y, "y", true));
return Array.from(u.ctx.getImageData(px, py, 1, 1).data.slice(0, 3));
"""

#: Every label box that leaves its chart, and every canvas with ink in its two leftmost
#: pixel columns (a y-axis label cut at the chart's edge).
CLIPPED = """
const out = [];
for (const root of document.querySelectorAll(".charts .uplot")) {
  const box = root.getBoundingClientRect();
  for (const label of root.querySelectorAll(".threshold-label, .row-label")) {
    const r = label.getBoundingClientRect();
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5
        || r.bottom > box.bottom + 0.5 || label.scrollWidth > label.clientWidth + 1) {
      out.push(`${root.dataset.chart}: ${label.textContent}`);
    }
  }
  const canvas = root.querySelector("canvas");
  const data = canvas.getContext("2d").getImageData(0, 0, 2, canvas.height).data;
  for (let i = 3; i < data.length; i += 4) {
    if (data[i] > 40) { out.push(`${root.dataset.chart}: ink at the left edge`); break; }
  }
}
return out;
"""

#: The darkest ink under each chart's plot (its time axis labels).
AXIS_INK = """
const out = {};
for (const [key, chart] of Object.entries(view.charts)) {
  const u = chart.plot;
  const top = u.bbox.top + u.bbox.height + 2;
  const data = u.ctx.getImageData(u.bbox.left, top, u.bbox.width, u.ctx.canvas.height - top).data;
  let darkest = 255;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] > 200) darkest = Math.min(darkest, Math.max(data[i], data[i + 1], data[i + 2]));
  }
  out[key] = darkest;
}
return out;
"""

LEGEND = """
const u = view.charts[arguments[0]].plot;
return u.series.slice(1).map((s) => [s.label, s._stroke || s.stroke]);
"""


def _legend(browser: webdriver.Chrome, chart: str) -> dict[str, str]:
    """The chart's series, in the legend's order: label -> line colour."""
    return dict(js(browser, LEGEND, chart))


def _near(colour: list[int], wanted: tuple[int, int, int], slack: int = 6) -> bool:
    return all(abs(a - b) <= slack for a, b in zip(colour, wanted, strict=True))


def test_an_hour_of_charts_reads_at_1600_px(browser: webdriver.Chrome, harness: Harness) -> None:
    names = [f"node-{c}" for c in "abcde"]
    _fill_history(harness, names, HOUR)
    harness.cluster.set_node_taints(NodeName("node-d"), [TAINT])
    with harness:
        wait = _open(browser, harness)
        now = js(browser, "return view.points[view.points.length - 1].time")

        # The class: one labelled row per node, sorted, each coloured by its class over time.
        rows = js(browser, "return [...document.querySelectorAll('#chart-class .row-label')]"
                            ".map((e) => e.textContent)")  # fmt: skip
        assert rows == names
        row_of = {name: len(names) - 0.5 - i for i, name in enumerate(names)}
        assert _near(js(browser, PIXEL, "cls", now - 300, row_of["node-a"]), OVERUTILIZED)
        assert _near(js(browser, PIXEL, "cls", now - 3000, row_of["node-a"]), UNDERUTILIZED)
        assert _near(js(browser, PIXEL, "cls", now - 300, row_of["node-c"]), APPROPRIATE)

        # The policy's threshold: a labelled line at 0.6, in a colour no node uses, in the
        # page's unit (percent); its tag beside the line's end, its words in the key below.
        threshold = '.threshold-label[data-threshold="cpu_pressure GreaterThan 0.6"]'
        label = browser.find_element(By.CSS_SELECTOR, f"#chart-pressure {threshold}")
        assert label.text == "60%"
        described = "cpu_pressure GreaterThan 60% (psi-aware dontschedule)"
        assert label.get_attribute("title") == described
        key = browser.find_element(
            By.CSS_SELECTOR,
            '#chart-pressure + .threshold-keys [data-threshold="cpu_pressure GreaterThan 0.6"]',
        )
        assert key.text == described
        legend = _legend(browser, "pressure")
        assert list(legend)[:5] == names
        node_colours = {legend[n].lower() for n in names}
        line = [js(browser, PIXEL, "pressure", now - s, 0.6) for s in (3400, 3000, 2500)]
        assert any(_near(c, (0xD1, 0x00, 0x1F), 30) for c in line), line
        assert "#d1001f" not in node_colours
        label_y = label.rect["y"] + label.rect["height"] / 2
        plot = js(browser, "return view.charts.pressure.plot.over.getBoundingClientRect()")
        line_y = plot["top"] + js(browser, "return view.charts.pressure.plot.valToPos(0.6, 'y')")
        assert abs(label_y - line_y) < 4, "the tag sits beside its line"
        assert label.rect["x"] >= plot["right"], "the tag is right of the plot, not over the data"

        # Evictions: stacked by strategy, and per node.
        labels = browser.find_elements(By.CSS_SELECTOR, "#chart-evictions .u-label")
        assert [e.text for e in labels] == ["TAS violation (2)", "load-aware (1)"]
        by_node = {
            row.get_attribute("data-node"): row.text
            for row in browser.find_elements(By.CSS_SELECTOR, "#evictions-by-node .ebn-row")
        }
        assert by_node == {"node-c": "node-c\n2 TAS violation", "node-d": "node-d\n1 load-aware"}

        # Metric age: every node's line, and the age past which the components lose a value.
        stale = browser.find_element(By.CSS_SELECTOR, "#chart-age .threshold-label")
        assert stale.text == "30s"
        assert (stale.get_attribute("title") or "").startswith("stale after 30s")
        ages = js(browser, "return view.charts.age.plot.data.slice(1).map((s) => s[1800])")
        assert len(ages) == 5
        assert all(0 <= age < 30 for age in ages), ages
        assert list(_legend(browser, "age")) == names

        # The hour, legible and quick.
        span = js(browser, "const s = view.charts.util.plot.scales.x; return s.max - s.min")
        assert span == pytest.approx(HOUR, abs=5)
        browser.find_element(By.CSS_SELECTOR, '#chart-window [data-window="600"]').click()
        span = js(browser, "const s = view.charts.util.plot.scales.x; return s.max - s.min")
        assert span == pytest.approx(600, abs=5)
        browser.find_element(By.CSS_SELECTOR, '#chart-window [data-window="3600"]').click()
        assert js(browser, "return chartView.drawMs") < 250
        for _ in range(2):  # uPlot draws a frame after setData: let two more redraws happen
            js(browser, "drawCharts()")
            time.sleep(0.3)
        # Judged on the settled frame (what a reader sees), not one caught mid-redraw.
        assert not js(browser, CLIPPED)
        ink = js(browser, AXIS_INK)
        assert all(darkest < 110 for darkest in ink.values()), f"faint time labels: {ink}"
        card = browser.find_element(By.CSS_SELECTOR, '[data-node="node-d"]').rect
        chip = browser.find_element(
            By.CSS_SELECTOR, f'[data-node="node-d"] [data-taint="{TAINT.key}"]'
        )
        assert chip.rect["x"] + chip.rect["width"] <= card["x"] + card["width"]

        browser.execute_script("document.getElementById('charts-panel').scrollIntoView()")
        screenshot(browser, "dashboard-charts.png")

        # A node leaves, another joins: the others keep their colours.
        before = _legend(browser, "util")
        harness.cluster.remove_node(NodeName("node-b"))
        harness.cluster.add_node(_node("node-0"))
        harness.tick()
        wait.until(lambda d: "node-0" in _legend(d, "util"))
        after = _legend(browser, "util")
        assert list(after)[:5] == ["node-0", "node-a", "node-c", "node-d", "node-e"]
        assert {n: after[n] for n in ("node-a", "node-c", "node-d", "node-e")} == {
            n: before[n] for n in ("node-a", "node-c", "node-d", "node-e")
        }
        assert after["node-0"] == before["node-b"], "the colour the leaver freed"


def _node(name: str) -> Node:
    return Node(
        name=NodeName(name),
        labels={"kubernetes.io/hostname": name},
        allocatable={"cpu": NODE_CORES, "memory": float(NODE_MEMORY), "pods": 110.0},
    )


def test_above_8_nodes_the_per_node_charts_are_heatmaps(
    browser: webdriver.Chrome, harness: Harness
) -> None:
    extra = [f"node-{i}" for i in range(1, 8)]
    for name in extra:
        harness.cluster.add_node(_node(name))
    names = sorted([f"node-{c}" for c in "abcde"] + extra)  # 12 nodes
    _fill_history(harness, names, 900)
    with harness:
        _open(browser, harness)
        for chart in ("util", "pressure", "class", "age"):
            rows = browser.find_elements(By.CSS_SELECTOR, f"#chart-{chart} .row-label")
            assert [r.text for r in rows] == names, chart
        # The load-aware signal is cpu_utilization on fixed thresholds: the CPU chart's data.
        assert not browser.find_element(By.ID, "chart-usage").is_displayed()
        assert not browser.find_elements(By.CSS_SELECTOR, "#chart-util .u-legend .u-series")
        now = js(browser, "return view.points[view.points.length - 1].time")
        row = {name: len(names) - 0.5 - i for i, name in enumerate(names)}
        hot = js(browser, PIXEL, "pressure", now - 60, row["node-b"])
        calm = js(browser, PIXEL, "pressure", now - 60, row["node-c"])
        assert hot[0] > hot[2] + 60, f"node-b past psi-aware's 0.6 is red: {hot}"
        assert calm[2] > calm[0], f"node-c at 0.1 is blue: {calm}"
        assert not js(browser, CLIPPED)
        browser.execute_script("document.getElementById('charts-panel').scrollIntoView()")
        screenshot(browser, "dashboard-heatmap.png")


#: Draw the charts with their time range moved `arguments[0]` seconds back: where the time
#: axis's ticks fall depends on the clock, so a test at one moment sees one layout only.
SHIFTED = """
const orig = window.__timeRange || (window.__timeRange = timeRange);
window.timeRange = () => { const [a, b] = orig(); return [a - arguments[0], b - arguments[0]]; };
drawCharts();
drawCharts();
"""


def test_no_label_runs_off_a_chart_wherever_the_time_ticks_fall(
    browser: webdriver.Chrome, harness: Harness
) -> None:
    """A time label is centred on its tick: one at the plot's left end reaches half its width
    into the y axis, and past the chart's edge where the y axis is narrower (the evictions
    chart's "3"). It happened only at some times of day, so every offset of one tick interval
    is drawn."""
    _fill_history(harness, [f"node-{c}" for c in "abcde"], HOUR)
    with harness:
        _open(browser, harness)
        clipped = {}
        for offset in range(0, 600, 7):
            js(browser, SHIFTED, offset)
            if found := js(browser, CLIPPED):
                clipped[offset] = found
        assert not clipped
