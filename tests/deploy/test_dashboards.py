"""The Grafana dashboard and its Perses twin (deploy/grafana).

Covered:
- the Grafana JSON is a dashboard Grafana imports: unique panel ids, every panel under a row,
  on the 24-column grid without overlaps, every query on the `$datasource` variable;
- it has the PSI evaluation's panels (utilization and pressure per node with the fleet
  average, the usage value with its high and low thresholds, classification over time,
  evictions) plus extender latency and decisions and TASPolicy violations;
- every query, with Grafana's variables filled in, parses and evaluates on the real
  Prometheus of the shipped pipeline (tests/deploy/pipeline.py), and names only metrics that
  exist: the project's own (found in its source), node-exporter's (served by the real
  node-exporter started with the shipped flags), and the shipped recording rules;
- the variables' `label_values(METRIC, LABEL)` read metrics that exist too;
- deploy/grafana/perses-dashboard.json is what scripts/perses-dashboard.py makes of the Grafana
  board: a `perses.dev/v1alpha2` PersesDashboard with the same queries, panel for panel;
- every Counter is declared by its exported name, with `_total` (one naming rule);
- the PromQL name finder the checks rely on, on its own table.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.pipeline import DEPLOY, RULES_YML, Pipeline
from tests.deploy.promql import (
    exported_metric_names,
    grafana_variables,
    metric_definitions,
    metric_names,
)

GRAFANA = DEPLOY / "grafana" / "tas-dashboard.json"
PERSES = DEPLOY / "grafana" / "perses-dashboard.json"
PERSES_SCRIPT = DEPLOY.parent / "scripts" / "perses-dashboard.py"
_LABEL_VALUES = re.compile(r"label_values\(\s*([^,\s]+)\s*,\s*(\w+)\s*\)")

Dashboard = dict[str, Any]


def dashboard() -> Dashboard:
    loaded: Dashboard = json.loads(GRAFANA.read_text(encoding="utf-8"))
    return loaded


def panels() -> list[Dashboard]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def queries() -> list[tuple[str, str]]:
    """(panel title, expression) for every target."""
    return [(p["title"], t["expr"]) for p in panels() for t in p["targets"]]


def variable_queries() -> list[tuple[str, str, str]]:
    """(variable, metric, label) of every `label_values` variable."""
    found = []
    for variable in dashboard()["templating"]["list"]:
        if variable["type"] != "query":
            continue
        match = _LABEL_VALUES.fullmatch(variable["query"]["query"])
        assert match is not None, variable["name"]
        found.append((variable["name"], match[1], match[2]))
    return found


def recorded_names() -> set[str]:
    groups = yaml.safe_load(RULES_YML.read_text(encoding="utf-8"))["groups"]
    return {rule["record"] for group in groups for rule in group["rules"]}


# --- the dashboard as Grafana reads it ---------------------------------------------------------


def test_panels_have_unique_ids_sit_under_rows_and_do_not_overlap() -> None:
    board = dashboard()
    assert board["uid"]
    assert board["title"]
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    assert board["panels"][0]["type"] == "row"
    cells: set[tuple[int, int]] = set()
    for panel in board["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0, panel["title"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        covered = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not covered & cells, f"{panel['title']} overlaps another panel"
        cells |= covered


def test_every_query_uses_the_data_source_variable() -> None:
    (datasource,) = [v for v in dashboard()["templating"]["list"] if v["type"] == "datasource"]
    uid = f"${{{datasource['name']}}}"
    for panel in panels():
        assert panel["datasource"]["uid"] == uid, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == uid, panel["title"]
            assert target["expr"].strip(), panel["title"]


@pytest.mark.parametrize(
    ("words", "metric"),
    [
        pytest.param("cpu utilization", "node_cpu_utilization", id="CPU utilization"),
        pytest.param("memory utilization", "node_memory_utilization", id="memory utilization"),
        pytest.param("cpu pressure", "node_cpu_pressure", id="CPU pressure"),
        pytest.param("memory pressure", "node_memory_pressure", id="memory pressure"),
        pytest.param("thresholds", "tas_descheduler_threshold", id="usage with thresholds"),
        pytest.param("classification", "tas_descheduler_node_classification", id="classes"),
        pytest.param("evictions", "tas_descheduler_evictions_total", id="evictions"),
        pytest.param("extender latency", "tas_extender_request_duration_seconds_bucket", id="lat"),
        pytest.param("extender decisions", "tas_extender_decisions_total", id="decisions"),
        pytest.param("violating", "tas_controller_violating_nodes", id="policy violations"),
    ],
)
def test_the_dashboard_has_the_seed_panels_and_the_extender_and_policy_panels(
    words: str, metric: str
) -> None:
    matching = [p for p in panels() if all(w in p["title"].lower() for w in words.split())]
    assert matching, f"no panel titled with {words!r}"
    assert any(metric in metric_names(t["expr"]) for p in matching for t in p["targets"])


def test_per_node_panels_draw_the_fleet_average_too() -> None:
    for panel in panels():
        title = panel["title"].lower()
        if ("utilization" in title or "pressure" in title) and "per node" in title:
            legends = {t["legendFormat"] for t in panel["targets"]}
            assert "fleet average" in legends, panel["title"]


# --- the queries against real metric names and a real Prometheus --------------------------------


@pytest.fixture(scope="module")
def existing_metrics(pipeline: Pipeline) -> set[str]:
    """The project's series, node-exporter's (as the shipped flags run it) and the rules'."""
    exporter = next(iter(pipeline.exporters.values()))
    text = pipeline.client.get(f"{exporter.url}/metrics").text
    served = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    return set(exported_metric_names()) | served | recorded_names()


def test_the_project_metric_scan_finds_every_component_s_metrics() -> None:
    names = exported_metric_names()
    for expected in (
        "tas_extender_request_duration_seconds_bucket",
        "tas_extender_decisions_total",
        "tas_controller_violating_nodes",
        "tas_descheduler_evictions_total",
        "tas_descheduler_node_usage",
        "tas_metric_age_seconds",
        "tas_metric_fetch_errors_total",
    ):
        assert expected in names


def test_every_counter_is_declared_by_the_name_it_is_exported_as() -> None:
    # prometheus_client appends `_total` to a Counter's name when it is missing, so a counter
    # declared without it is grepped for in vain: one rule, the exported name in the source.
    counters = [
        (n, path) for n, kind, path in metric_definitions() if kind in ("Counter", "counter")
    ]
    assert len(counters) >= 10
    assert [(n, path) for n, path in counters if not n.endswith("_total")] == []


@pytest.mark.integration
@pytest.mark.parametrize(("title", "expr"), queries(), ids=[f"{t}: {e[:40]}" for t, e in queries()])
def test_every_query_parses_on_prometheus_and_names_only_existing_metrics(
    title: str, expr: str, pipeline: Pipeline, existing_metrics: set[str]
) -> None:
    concrete = grafana_variables(expr)
    assert "$" not in concrete
    assert pipeline.parse_error(concrete) is None, pipeline.parse_error(concrete)
    names = metric_names(expr)
    assert names, "a query that reads no metric"
    assert names <= existing_metrics, f"unknown metrics: {sorted(names - existing_metrics)}"


@pytest.mark.integration
@pytest.mark.parametrize(("name", "metric", "label"), variable_queries())
def test_every_variable_reads_an_existing_metric(
    name: str, metric: str, label: str, pipeline: Pipeline, existing_metrics: set[str]
) -> None:
    assert metric in existing_metrics, name
    assert pipeline.parse_error(metric) is None


@pytest.mark.integration
def test_the_node_variable_lists_the_nodes(pipeline: Pipeline) -> None:
    (_, metric, label) = next(v for v in variable_queries() if v[0] == "node")
    result = pipeline.wait_for(metric, len(pipeline.exporters))
    assert sorted(r["metric"][label] for r in result) == sorted(pipeline.exporters)


@pytest.mark.integration
def test_the_query_check_catches_a_misspelt_metric_and_a_parse_error(pipeline: Pipeline) -> None:
    existing = set(exported_metric_names()) | recorded_names()
    assert not metric_names("rate(tas_extender_decision_total[5m])") <= existing
    assert "parse error" in str(pipeline.parse_error("sum(rate(up[5m])"))


# --- Perses -------------------------------------------------------------------------------------


def test_the_perses_dashboard_is_what_the_script_makes_of_the_grafana_one() -> None:
    made = subprocess.run(
        [sys.executable, str(PERSES_SCRIPT)], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    assert json.loads(made) == json.loads(PERSES.read_text(encoding="utf-8")), (
        "regenerate: scripts/perses-dashboard.py > deploy/grafana/perses-dashboard.json"
    )


def test_the_perses_dashboard_has_the_same_queries_panel_for_panel() -> None:
    perses = json.loads(PERSES.read_text(encoding="utf-8"))
    # v1alpha2, the Perses operator's current version (v1alpha1 is deprecated), keeps the
    # dashboard under spec.config (perses/perses-operator, api/v1alpha2).
    assert (perses["apiVersion"], perses["kind"]) == ("perses.dev/v1alpha2", "PersesDashboard")
    config = perses["spec"]["config"]
    perses_queries = [
        (p["spec"]["display"]["name"], q["spec"]["plugin"]["spec"]["query"])
        for p in config["panels"].values()
        for q in p["spec"]["queries"]
    ]
    assert perses_queries == queries()
    refs = {
        item["content"]["$ref"].removeprefix("#/spec/panels/")
        for layout in config["layouts"]
        for item in layout["spec"]["items"]
    }
    assert refs == set(config["panels"])


# --- the name finder itself ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        pytest.param("up", {"up"}, id="bare name"),
        pytest.param('up{job="x", instance=~"a|b"}', {"up"}, id="matchers"),
        pytest.param("rate(a_total[5m])", {"a_total"}, id="function and range"),
        pytest.param("sum by (le, verb) (rate(b_bucket[1m]))", {"b_bucket"}, id="grouping"),
        pytest.param("sum(rate(c[1m])) without (cpu)", {"c"}, id="trailing grouping"),
        pytest.param("histogram_quantile(0.99, d)", {"d"}, id="function names are not metrics"),
        pytest.param("a / on(instance) group_left(node) b", {"a", "b"}, id="vector matching"),
        pytest.param("x > bool 1e3 or y offset 5m unless z", {"x", "y", "z"}, id="keywords"),
        pytest.param('label_replace(q, "dst", "$1", "src", "(.*)")', {"q"}, id="strings"),
        pytest.param("1 - avg(e:rate5m)", {"e:rate5m"}, id="recording rule colons"),
        pytest.param("max_over_time(f[10m:1m])", {"f"}, id="subquery"),
        pytest.param("vector(1) + Inf", set(), id="no metric"),
    ],
)
def test_the_name_finder_finds_metric_names_only(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param('a{instance=~"$node"}', 'a{instance=~".*"}', id="all"),
        pytest.param("rate(a[$__rate_interval])", "rate(a[1m])", id="rate interval"),
        pytest.param("increase(a[${__range}])", "increase(a[1h])", id="braced"),
    ],
)
def test_grafana_variables_are_filled_in(expr: str, expected: str) -> None:
    assert grafana_variables(expr) == expected
