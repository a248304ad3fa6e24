"""A node card's load average per CPU (`cpu_load`) as a reader sees it, in a real headless
Chromium against the real dashboard server (the `Harness`: real uvicorn, recorder and textfile
metric view over the node files the demo world writes).

Covered:
- every card says its node's load per CPU under the pressure bar ("load 0.82 of its CPUs"),
  the figure the state the recorder served carries, in two decimals (never a value below 1
  rounded up to 1; 1, where the metric stops, said to be at least that);
- a node that reports no `cpu_load` shows it missing ("load – of its CPUs", its title saying
  why), never 0, as the state leaves it out;
- a node whose load is below LoadAware's `atRiskLoad` while its pressure reaches
  `atRiskPressure` says that its tasks wait but are served and the bar a move off it must
  clear (`servedGain` times its cost); a node at load 1, or one under little pressure, does not.
Screenshot: `test-artifacts/dashboard-load.png`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver

from tas.adapters.metrics.textfile import node_file, write_node_series
from tas.metrics.textformat import series_name_of
from tas_dashboard.recorder import ServedDemand, Tick
from tests.tas_dashboard.browser import js, patient, screenshot
from tests.tas_dashboard.harness import Harness

#: LoadAware's shipped rule (`atRiskLoad` 1, `servedGain` 16, `atRiskPressure` 0.25).
SHIPPED = ServedDemand(at_risk_load=1.0, served_gain=16.0, at_risk_pressure=0.25)
SERVED = (
    "its tasks wait but are served: LoadAware moves a pod off it only if the move gains 16x "
    "its cost"
)

#: The rows of node-a's card that show a figure, top to bottom: a meter's label, or "load".
ORDER = """
const card = document.querySelector('#nodes [data-node="node-a"]');
return [...card.children].map((e) => e.matches("[data-cpu-load]") ? "load"
  : e.classList.contains("meter") ? e.firstChild.textContent : null).filter(Boolean);
"""

#: Each card's load lines and the state's `metrics` they were rendered from, in one render.
CARDS = """
if (!view.state) return [];
return view.state.nodes.flatMap((node) => {
  const card = document.querySelector(`#nodes [data-node="${node.name}"]`);
  if (!card) return [];
  const load = card.querySelector("[data-cpu-load]");
  const served = card.querySelector("[data-served]");
  return [{ name: node.name, metrics: node.metrics, text: load.textContent, title: load.title,
            served: served.hidden ? null : served.textContent }];
});
"""


def load_words(load: float | None) -> str:
    """The line a card shows for a node's `cpu_load` (docs/dashboard.md, "Nodes")."""
    if load is None:
        return "load – of its CPUs"
    if load >= 1:
        return "load 1.00 of its CPUs (or more)"
    hundredths = min(math.floor(load * 100 + 0.5), 99)  # JavaScript's Math.round
    return f"load {hundredths / 100:.2f} of its CPUs"


def cards(browser: webdriver.Chrome) -> dict[str, dict[str, Any]]:
    return {card["name"]: card for card in js(browser, CARDS)}


def drop_series(directory: Path, node: str, series: str) -> None:
    """`series` gone from the node's file (a node-exporter without that collector), replaced
    whole as the one writer replaces it."""
    path = node_file(directory, node)
    kept = [
        line for line in path.read_text(encoding="utf-8").splitlines()
        if series_name_of(line) != series
    ]  # fmt: skip
    temp = path.with_name(f".{node}.test.tmp")
    temp.write_text("\n".join(kept) + "\n", encoding="utf-8")
    os.replace(temp, path)


def observe_files(harness: Harness) -> None:
    """A sync period over the node files as they are now (no telemetry step rewriting them)."""
    harness.view.refresh_once()
    harness.recorder.observe(Tick(now=time.time(), columns=harness.view.columns()))


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    with Harness(tmp_path, served=SHIPPED) as running:
        yield running


def test_each_card_says_its_nodes_load_per_cpu_as_the_state_has_it(
    browser: webdriver.Chrome, harness: Harness
) -> None:
    # The demo world writes node_cpu_load, the view reads it as cpu_load: every node has one.
    served = {n["name"]: n["metrics"] for n in harness.client.get("/api/state").json()["nodes"]}
    assert len(served) == 5
    assert all(0 <= m["cpu_load"] <= 1 for m in served.values()), served
    wait = patient(browser)
    browser.get(f"{harness.url}/")
    wait.until(lambda d: len(cards(d)) == 5)
    shown = cards(browser)
    for name, card in shown.items():
        # The page rendered the state the recorder served (nothing ticks meanwhile).
        assert card["metrics"] == served[name], card
        assert card["text"] == load_words(served[name]["cpu_load"]), card
        figure = float(card["text"].split()[1])
        assert abs(figure - served[name]["cpu_load"]) <= 0.005 + 1e-9, card
        assert card["title"].startswith("cpu_load: the node's one-minute load average"), card
    # Where the figure is on the card: right under the pressure bar, above memory.
    order = js(browser, ORDER)
    assert order[:4] == ["CPU", "pressure", "load", "memory"], order

    # Values near the edges, written to the node files as a node-exporter would report them.
    for node, load in (("node-a", 0.8249), ("node-b", 0.999), ("node-c", 1.0), ("node-d", 0.0)):
        write_node_series(harness.metrics, node, {"node_cpu_load": load})
    observe_files(harness)
    wait.until(lambda d: cards(d)["node-a"]["metrics"]["cpu_load"] == 0.8249)
    texts = {name: card["text"] for name, card in cards(browser).items()}
    assert texts["node-a"] == "load 0.82 of its CPUs"
    assert texts["node-b"] == "load 0.99 of its CPUs"  # below 1: never rounded up to it
    assert texts["node-c"] == "load 1.00 of its CPUs (or more)"
    assert texts["node-d"] == "load 0.00 of its CPUs"


def test_a_node_without_its_load_per_cpu_shows_it_missing_not_zero(
    browser: webdriver.Chrome, harness: Harness
) -> None:
    drop_series(harness.metrics, "node-e", "node_cpu_load")
    write_node_series(harness.metrics, "node-e", {"node_cpu_pressure": 0.6})
    observe_files(harness)
    served = {n["name"]: n["metrics"] for n in harness.client.get("/api/state").json()["nodes"]}
    assert "cpu_load" not in served["node-e"], served["node-e"]
    assert "cpu_load" in served["node-d"]
    wait = patient(browser)
    browser.get(f"{harness.url}/")
    wait.until(lambda d: "node-e" in cards(d))
    card = cards(browser)["node-e"]
    assert card["metrics"] == served["node-e"]
    assert card["text"] == "load – of its CPUs"
    assert "0" not in card["text"]
    assert "This node reports none" in card["title"], card["title"]
    # Pressure is high, but without a load nothing says the node serves its demand.
    assert card["served"] is None


def test_a_node_that_serves_its_demand_under_pressure_says_its_tasks_wait_but_are_served(
    browser: webdriver.Chrome, harness: Harness
) -> None:
    for node, load, pressure in (
        ("node-a", 0.82, 0.6),  # below 1, pressure past atRiskPressure: served
        ("node-b", 1.0, 0.7),  # its demand reaches beyond its CPUs: work is lost
        ("node-c", 0.5, 0.05),  # below 1, but too little pressure for LoadAware to weigh
        ("node-d", 0.9, 0.25),  # at atRiskPressure: served
    ):
        write_node_series(
            harness.metrics, node, {"node_cpu_load": load, "node_cpu_pressure": pressure}
        )
    observe_files(harness)
    rule = harness.client.get("/api/state").json()["descheduler"]["servedDemand"]
    assert rule == {"atRiskLoad": 1.0, "servedGain": 16.0, "atRiskPressure": 0.25}
    wait = patient(browser)
    browser.get(f"{harness.url}/")
    wait.until(lambda d: len(cards(d)) == 5)
    shown = cards(browser)
    assert shown["node-a"]["text"] == "load 0.82 of its CPUs"
    assert shown["node-a"]["served"] == SERVED
    assert shown["node-d"]["served"] == SERVED
    assert shown["node-b"]["served"] is None
    assert shown["node-c"]["served"] is None
    assert "only if the move is predicted to gain 16x its cost" in shown["node-a"]["title"]
    browser.execute_script("window.scrollTo(0, 0)")
    screenshot(browser, "dashboard-load.png")
