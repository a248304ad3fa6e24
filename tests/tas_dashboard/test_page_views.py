"""The page as a newcomer reads it, in a real headless Chromium against a real `tas run`.

Covered:
- `tas run --scenario`: the page is the scenario's own view (its name, description, clock
  and progress; no health-demo hint; only the controls that act: no "+2 cores"), every time
  on the scenario's clock with the log newest first in time too, the load-aware signal
  `cpu_combined` and its moving thresholds explained; a page opened late, and one reloaded
  after the end, draw the whole history (from its first point), metric ages in scenario
  seconds, and as many evictions in the chart as the descheduler box counts; at the end the
  status says the scenario ended (not "live") and the page shows the table `tas simulate`
  prints for `ours`, the same text `/api/state` carries;
- the health demo's words: a policy whose only problem is dontschedule carries an amber
  "dontschedule on 1 node" badge, never a red "Violating"; a node set to 2 adds the red
  "deschedule: violating" badge; `scheduleonmetric` reads "lower value scores higher";
  repeated log entries collapse into one row with a count (the API keeps each); the
  extender's link opens its index of endpoints, not a 404; on every update of the run the
  header's counts, the policy card's and the node cards' colours agree, every node in one of
  the header's buckets (also a node set to 5, a value the demo's rules do not name: healthy
  to its policy, and so on the page);
- beyond loopback (where every control is a 403) the page offers no control and says why;
- docs/dashboard.md documents exactly the keys `/api/state` (and its `scenario`) has.

Screenshots are saved in `test-artifacts/` (gitignored): dashboard-scenario.png (running),
dashboard-scenario-ended.png, dashboard-words.png.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests import demo_process
from tests.demo_process import start_demo
from tests.processes import free_port
from tests.tas_dashboard.browser import patient, read, screenshot

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "dashboard.md"
POLICY = '[data-policy="health-metric-demo/demo-policy"]'


def documented_keys(after: str) -> set[str]:
    """The top-level keys of the first JSON example after the line `after` in
    docs/dashboard.md (keys of nested objects, which sit deeper, are not counted)."""
    text = DOCS.read_text(encoding="utf-8").split(after, 1)[1]
    block = text.split("```json\n", 1)[1].split("```", 1)[0]
    keys: set[str] = set()
    depth = 0
    for match in re.finditer(r'"([A-Za-z]+)"\s*:|[{}\[\]]', block):
        token = match.group(0)
        if token in "{[":
            depth += 1
        elif token in "}]":
            depth -= 1
        elif depth == 1:
            keys.add(match.group(1))
    return keys


def log_times(driver: webdriver.Chrome) -> list[float]:
    times: list[float] = driver.execute_script(
        "return [...document.querySelectorAll('#log tr')].map(r => Number(r.dataset.time))"
    )
    return times


def shown(driver: webdriver.Chrome, selector: str) -> list[Any]:
    return [e for e in driver.find_elements(By.CSS_SELECTOR, selector) if e.is_displayed()]


def chart_evictions(driver: webdriver.Chrome) -> int:
    """The evictions the "Evictions per ..." chart counts over its window (its per-node key)."""
    counts: list[str] = driver.execute_script(
        "return [...document.querySelectorAll('#evictions-by-node .ebn-count')]"
        ".map(e => e.textContent)"
    )
    return sum(int(n) for text in counts for n in re.findall(r"(\d+) [a-zA-Z]", text))


def assert_the_whole_history_is_drawn(
    driver: webdriver.Chrome, wait: WebDriverWait[webdriver.Chrome], demo: Any
) -> None:
    """A page opened after the run began draws every point `/api/history` has, metric ages in
    scenario seconds, and as many evictions in the chart as the descheduler box counts."""
    history = demo.get("/api/history")
    first = history[0]["time"]
    wait.until(lambda d: d.execute_script("return view.points.length") >= len(history))
    assert driver.execute_script("return view.points[0].time") == first
    wait.until(lambda d: d.execute_script("return chartView.draws") > 0)
    drawn = driver.execute_script("return chartView.columns.metric_age.flat()")
    ages = [a for a in drawn if a is not None]
    assert ages, "no metric age drawn"
    duration = demo.get("/api/state")["scenario"]["duration"]
    assert max(ages) <= duration, f"metric age {max(ages)}s in a {duration}s scenario"
    assert all(age <= duration for point in history for age in point.get("metric_age", {}).values())
    box = re.compile(r"evictions so far: (\d+)")

    def agreeing(d: webdriver.Chrome) -> int | None:
        said = box.search(d.find_element(By.ID, "descheduler").text)
        return int(said.group(1)) if said and int(said.group(1)) == chart_evictions(d) else None

    wait.until(agreeing)


def test_a_scenario_is_its_own_view_on_its_own_clock_and_ends_with_the_simulate_table(
    browser: webdriver.Chrome,
    tmp_path: Path,
) -> None:
    wait = patient(browser)
    with start_demo(tmp_path, "--scenario", "health-demo", "--speed", "40") as demo:
        browser.get(f"{demo.dashboard}/")
        wait.until(lambda d: d.find_element(By.ID, "scenario-name").text == "health-demo")
        assert browser.find_element(By.ID, "scenario-panel").is_displayed()
        assert not browser.find_element(By.ID, "demo-hint").is_displayed()
        assert "scenario health-demo" in browser.find_element(By.ID, "page-sub").text
        description = browser.find_element(By.ID, "scenario-description").text
        assert description.startswith("A node turns unhealthy, then violating")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "[data-node]")) == 3)
        # Only the controls that act on a scenario: health and scaling, no load.
        assert shown(browser, 'button[data-action="health"]')
        assert not shown(browser, 'button[data-action="load"]')
        assert shown(browser, 'button[data-action="scale-up"]')

        # The load-aware signal (ours: cpu_combined, deviation thresholds) explained.
        # Read through the wait: the box is redrawn on every update, so an element found a
        # moment ago may be gone (a stale element reference) when its text is read.
        def text(selector: str) -> str:
            return str(browser.find_element(By.CSS_SELECTOR, selector).text)

        wait.until(lambda d: shown(d, '[data-help="cpu_combined"]'))
        wait.until(lambda d: "pressure" in text('[data-help="cpu_combined"]'))
        wait.until(lambda d: "move" in text('[data-help="deviation"]'))
        # tas run's --descheduling-interval 0.6 (wall seconds) at 40x, on the scenario's clock.
        wait.until(lambda d: "every 24s of scenario time" in text("#descheduler"))
        # cpu_combined is not the CPU chart's data: its own chart is shown.
        wait.until(lambda d: d.find_element(By.ID, "chart-usage").is_displayed())
        caption = browser.find_element(By.ID, "usage-caption").get_attribute("title") or ""
        assert caption.startswith("cpu_combined: ")
        assert "thresholds move" in caption

        # Scenario time, and "newest first" true in time: node-c turns violating at 3m7s.
        wait.until(lambda d: "TASPolicyViolated" in d.find_element(By.ID, "log").text)
        clock = browser.find_element(By.ID, "scenario-clock").text
        assert re.match(r"\d\d:\d\d of 15:00 scenario time \(\d+%\)", clock), clock
        times = log_times(browser)
        assert times
        assert times == sorted(times, reverse=True)
        first_cells = browser.execute_script(
            "return [...document.querySelectorAll('#log tr td:first-child')]"
            ".map(c => c.textContent)"
        )
        assert all(re.fullmatch(r"\d\d:\d\d", cell) for cell in first_cells), first_cells[:5]
        browser.execute_script("window.scrollTo(0, 0)")
        screenshot(browser, "dashboard-scenario.png")
        # A page opened late, once evictions were made: the whole history, from its first point.
        demo.wait_for(
            "an eviction", lambda: demo.get("/api/state")["descheduler"]["evictions"] or None
        )
        browser.switch_to.new_window("tab")
        browser.get(f"{demo.dashboard}/")
        assert_the_whole_history_is_drawn(browser, wait, demo)

        # The end: not "live", and the simulator's table for this run.
        wait.until(lambda d: d.find_element(By.ID, "connection").text == "scenario ended")
        wait.until(lambda d: d.find_element(By.ID, "scenario-table").text)
        table = browser.find_element(By.ID, "scenario-table").text
        title, header, _, ours, *_ = table.splitlines()
        assert title == "health-demo (seed 1, 15 min)"
        assert header.split()[:3] == ["contender", "viol.place", "evac"]
        assert ours.split()[0] == "ours"
        assert "15:00 of 15:00" in browser.find_element(By.ID, "scenario-clock").text
        state = demo.get("/api/state")
        assert state["scenario"]["finished"] is True
        assert state["scenario"]["summary"] == table
        assert set(state["scenario"]) == documented_keys("with `tas run --scenario` it is")
        times = log_times(browser)
        assert times == sorted(times, reverse=True)
        browser.execute_script("window.scrollTo(0, 0)")
        screenshot(browser, "dashboard-scenario-ended.png")
        # After a reload: the whole history again, not only what came after it.
        browser.refresh()
        wait.until(lambda d: d.find_element(By.ID, "connection").text == "scenario ended")
        assert_the_whole_history_is_drawn(browser, wait, demo)


#: Installed on the page: after every update the stream applies, whether the header's counts,
#: the policy card's "N of M nodes" and the node cards' colours say the same of every node,
#: that the header puts every node in a bucket, and (when the newest point is the state's tick)
#: that the charts' CPU per node is the cards' and their evictions the descheduler box's count.
#: What disagrees is kept in `window.disagreements`.
AGREEMENT = r"""
window.disagreements = [];
window.checkedUpdates = 0;
const applied = window.apply;
window.apply = function (update) {
  applied(update);
  const state = view.state;
  if (!state || !state.nodes.length || !state.policies.length) return;
  const header = {};
  for (const e of document.querySelectorAll("#health-counts [data-health-count]")) {
    header[e.dataset.healthCount] = e.dataset.nodes ? e.dataset.nodes.split(",") : [];
  }
  const says = (text) => disagreements.push(`at ${state.time}: ${text}`);
  const effects = { dontschedule: "don't schedule here", deschedule: "move pods away" };
  for (const [strategy, meaning] of Object.entries(effects)) {
    const card = document.querySelector(`[data-policy] [data-affects="${strategy}"]`);
    const counted = card ? Number(card.textContent.split(" ")[0]) : NaN;
    if (!header[meaning] || counted !== header[meaning].length) {
      says(`${strategy}: policy card ${counted}, header ${JSON.stringify(header[meaning])}`);
    }
  }
  for (const name of view.nodes) {
    const root = document.querySelector(`#nodes [data-node="${name}"]`);
    const moved = (header["move pods away"] || []).includes(name);
    const kept = !moved && (header["don't schedule here"] || []).includes(name);
    if (root.classList.contains("health-2") !== moved) says(`${name}: red card, header ${moved}`);
    if (root.classList.contains("health-1") !== kept) says(`${name}: amber card, header ${kept}`);
    if (!Object.values(header).some((nodes) => nodes.includes(name))) says(`${name}: no bucket`);
  }
  // The charts read the same tick: its point's CPU per node is the card's, and the points'
  // evictions add up to the descheduler box's count.
  const last = view.points[view.points.length - 1];
  if (last && last.time === state.time) {
    for (const node of state.nodes) {
      const drawn = (last.cpu_utilization || {})[node.name];
      const card = document.querySelector(`#nodes [data-node="${node.name}"]`);
      const meter = card.querySelector(".meter > span:last-child");
      const value = node.metrics.cpu_utilization;
      // The point keeps 4 decimals of the value the card shows.
      const apart = drawn !== undefined && Math.abs(drawn - value) > 1e-4;
      if (apart || meter.textContent !== pct(value)) {
        says(`${node.name}: chart CPU ${drawn}, state ${value}, card ${meter.textContent}`);
      }
    }
    const charted = view.points.reduce((sum, p) => sum + p.evictions, 0);
    const said = document.getElementById("descheduler").textContent;
    const box = said.match(/evictions so far: (\d+)/);
    if (!box || Number(box[1]) !== charted) says(`evictions: chart ${charted}, box: ${said}`);
  }
  window.checkedUpdates += 1;
};
"""


def test_the_demo_page_says_dontschedule_and_deschedule_apart_and_collapses_repeats(
    browser: webdriver.Chrome,
    tmp_path: Path,
) -> None:
    wait = patient(browser)
    with start_demo(tmp_path) as demo:
        state = demo.get("/api/state")
        assert set(state) == documented_keys("### `GET /api/state`")
        assert state["scenario"] is None

        browser.get(f"{demo.dashboard}/")
        browser.execute_script(AGREEMENT)
        # node-b starts at health 1: dontschedule only, so no red "Violating".
        badge = f'{POLICY} [data-badge="dontschedule"]'
        # The policy box is redrawn on every update: each read goes through the wait, which
        # retries a read that caught an element on its way out (a stale element reference).
        wait.until(
            lambda d: d.find_element(By.CSS_SELECTOR, badge).text == "dontschedule on 1 node"
        )
        head = read(wait, f"{POLICY} .policy-head")
        assert "Violating" not in head
        assert not browser.find_elements(By.CSS_SELECTOR, f'{POLICY} [data-badge="deschedule"]')
        rules = read(wait, f"{POLICY} .strategies")
        assert "health_metric: lower value scores higher" in rules
        assert "scores better" not in rules

        # The extender's link opens its index, not {"Error": "Not Found"}.
        link = wait.until(
            lambda d: d.find_element(By.CSS_SELECTOR, "#descheduler a").get_attribute("href")
        )
        opened = httpx.get(link, timeout=5)
        assert opened.status_code == 200
        assert "POST /scheduler/filter" in opened.json()["endpoints"]

        # The same control three times in a row: one row, counted.
        browser.execute_script(
            "const b = document.querySelector("
            '\'[data-node="node-a"] button[data-action="health"][data-value="0"]\');'
            "b.click(); b.click(); b.click();"
        )
        counted = '#log tr[data-kind="control"] .repeat[data-count="3"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, counted))
        rows = wait.until(
            lambda d: [
                row.text
                for row in d.find_elements(By.CSS_SELECTOR, '#log tr[data-kind="control"]')
                if "set node-a health_metric to 0" in row.text
            ]
        )
        assert len(rows) == 1, rows
        assert rows[0].endswith("×3")
        controls = demo.get("/api/decisions?kind=control")
        assert sum(e["summary"] == "set node-a health_metric to 0" for e in controls) == 3

        # A node set to 2: now the deschedule label, in red, beside the dontschedule badge.
        to_two = '[data-node="node-c"] button[data-action="health"][data-value="2"]'
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, to_two).click() or True)
        red = f'{POLICY} [data-badge="deschedule"]'
        wait.until(
            lambda d: d.find_element(By.CSS_SELECTOR, red).text == "deschedule: violating on 1 node"
        )
        wait.until(
            lambda d: d.find_element(By.CSS_SELECTOR, badge).text == "dontschedule on 2 nodes"
        )
        wait.until(
            lambda d: "1 of 5 nodes: move pods away (node-c)" in read(wait, "#health-counts")
        )
        assert "2 of 5 nodes: don't schedule here (node-b, node-c)" in read(wait, "#health-counts")
        # A value the demo's rules do not name (they say Equals 1, Equals 2): the policy passes
        # the node, so the header counts it healthy and its card is not red.
        demo.set_health("node-d", "5")
        wait.until(lambda d: read(wait, '#nodes [data-node="node-d"] [data-health]') == "5")
        healthy = '#health-counts [data-health-count="healthy"]'
        wait.until(
            lambda d: (
                "node-d"
                in (d.find_element(By.CSS_SELECTOR, healthy).get_attribute("data-nodes") or "")
            )
        )
        card = browser.find_element(By.CSS_SELECTOR, '#nodes [data-node="node-d"]')
        assert "health-2" not in (card.get_attribute("class") or "")
        browser.execute_script("window.scrollTo(0, 0)")
        screenshot(browser, "dashboard-words.png")
        # On every update of the run, the header, the policy card and the cards agreed.
        assert browser.execute_script("return window.checkedUpdates") >= 5
        assert browser.execute_script("return window.disagreements") == []


def test_beyond_loopback_the_page_offers_no_control_and_says_why(
    browser: webdriver.Chrome,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every control would answer 403 there: the page shows none of them, and the reason."""
    wait = patient(browser)
    ports = [free_port(), free_port()]  # the dashboard's, the extender's
    dashboard = ports[0]
    monkeypatch.setattr(demo_process, "free_port", lambda: ports.pop(0))
    # The last --dashboard wins: every interface (loopback included, where the test reads).
    with start_demo(tmp_path, "--dashboard", f"0.0.0.0:{dashboard}") as demo:
        controls = demo.get("/api/state")["controls"]
        assert controls["offered"] == []
        assert "beyond loopback" in controls["reason"]
        browser.get(f"{demo.dashboard}/")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "[data-node]")) == 5)
        wait.until(lambda d: shown(d, '[data-help="controls"]'))
        assert "--allow-remote-controls" in read(wait, '[data-help="controls"]')
        for action in ("health", "load", "scale-up", "scale-down"):
            assert not shown(browser, f'button[data-action="{action}"]'), action
