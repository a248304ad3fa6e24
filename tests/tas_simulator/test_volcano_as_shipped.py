"""Volcano's LoadAware descheduler as volcano-sh/descheduler ships it (tas_simulator.baselines,
tas_simulator.contenders `VOLCANO`, tas_simulator.pipeline `ModelSource.volcano_node_query`).

Covered:
- the installer's policy: the DefaultEvictor with nodeFit, LoadAware without a nodeFit of its
  own (its default, false) and with its default `duration` 2m; a bad `duration` is refused;
- the scheduler as Volcano ships it: `binpack` scores a node by the share of it the pods
  request, pod included (0 where the pod does not fit); beside kube-scheduler's least-allocated
  score at the same weight (`nodeorder`) it cancels the spreading by requests, so with fresh
  metrics `usage` decides, and without them the scores are the same for equal nodes;
- the plugin reads node usage with Volcano's own queries, answered by the simulated Prometheus
  from its scrapes: the mean over a 30s-step subquery of 2m of a 30 s irate. With 15 s scrapes
  that is the busy share; with 30 s scrapes no 30 s range holds two scrapes, so the CPU query
  answers nothing (memory still does), nor does the per-pod query, and Volcano, which reads
  such a node as idle, evicts nothing from nodes that are 90% busy;
- Volcano reading the Prometheus its monitoring installer ships (5 s scrapes,
  `volcano-loadaware-5s-scrape`) relieves those nodes in a cluster that scrapes every 30 s, and
  on psi-taint-release with 30 s scrapes it evicts where the cluster's Prometheus gives it
  nothing to act on.
"""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from descheduler.args import FieldReader
from descheduler.config import parse_config
from tas.cluster.model import Node, Pod
from tas.types import Namespace, NodeName
from tas_simulator.baselines import (
    PLUGIN,
    VOLCANO_DURATION,
    VolcanoScheduler,
    VolcanoUsage,
    parse_args,
    read_volcano_query,
    registry_for,
    volcano_binpack,
    volcano_cpu_query,
    volcano_memory_query,
)
from tas_simulator.contenders import VOLCANO, Contender, resolve
from tas_simulator.pipeline import VOLCANO_HISTORY, ModelSource
from tas_simulator.runner import run_contender
from tas_simulator.scenario import SCENARIOS, load_scenario, load_scenario_text
from tests.tas_simulator import worlds

# One 8-core node running 6.4 cores of steady work: 80% busy.
STEADY = """
name: steady-80
duration: 5m
step: 5s
seed: 1
warmup: 1m
startupDelay: 0s
metrics: {{scrapeInterval: {scrape}, window: 1m, delay: {delay}}}
nodes:
  - {{name: only, cpu: 8, memory: 32Gi}}
workloads:
  - name: load
    replicas: 8
    requests: {{cpu: 500m, memory: 1Gi}}
    usage: {{cpu: {{profile: steady, value: 800m}}, memory: {{profile: steady, value: 2Gi}}}}
"""


def _scraped(scrape: str, *, until: float, delay: str = "0s") -> ModelSource:
    scenario = load_scenario_text(STEADY.format(scrape=scrape, delay=delay))
    return worlds.scraped(scenario, until=until, history=VOLCANO_HISTORY)


# -------------------------------------------------------------------------- the policy


def test_loadaware_has_no_node_fit_of_its_own_the_default_evictor_has_one() -> None:
    document = yaml.safe_load(VOLCANO)
    (profile,) = document["profiles"]
    loadaware = next(c["args"] for c in profile["pluginConfig"] if c["name"] == "LoadAware")
    assert "nodeFit" not in loadaware
    (parsed,) = parse_config(document, registry=registry_for("volcano-loadaware")).profiles
    assert parsed.args_of(PLUGIN).node_fit is False
    assert parsed.args_of(PLUGIN).duration == VOLCANO_DURATION == "2m"
    assert parsed.evictor.node_fit is True


def test_a_duration_that_is_no_duration_is_refused() -> None:
    problems: list[str] = []
    parse_args(
        FieldReader(
            {"duration": "soon", "thresholds": {"cpu": 30}, "targetThresholds": {"cpu": 80}},
            "args",
            problems,
        )
    )
    assert [p for p in problems if p.startswith("args.duration")], problems


def test_volcano_s_queries_read_back_to_their_resource_and_range() -> None:
    assert read_volcano_query(volcano_cpu_query("2m")) == ("cpu", 120.0)
    assert read_volcano_query(volcano_memory_query("90s")) == ("memory", 90.0)
    assert read_volcano_query("cpu_utilization") is None
    assert 'irate(node_cpu_seconds_total{mode="idle"}[30s])' in volcano_cpu_query("2m")
    assert volcano_cpu_query("2m").endswith("[2m:30s])")


# ----------------------------------------------------------------------- the scheduler


def _node(name: str) -> Node:
    return Node(name=NodeName(name), allocatable={"cpu": 8.0, "memory": 32.0 * 2**30})


def _pod(cpu: float, memory: float) -> Pod:
    return Pod(namespace=Namespace("default"), name="p", requests={"cpu": cpu, "memory": memory})


@pytest.mark.parametrize(
    ("used", "score"),
    [
        pytest.param((0.0, 0.0), (2 / 8 + 4 / 32) / 2 * 100, id="an empty node"),
        pytest.param((4.0, 12 * 2.0**30), (6 / 8 + 16 / 32) / 2 * 100, id="half requested"),
        pytest.param((7.0, 0.0), 0.0, id="the pod does not fit: 0"),
    ],
)
def test_binpack_scores_the_requested_share_with_the_pod(
    used: tuple[float, float], score: float
) -> None:
    (scored,) = volcano_binpack(_pod(2.0, 4 * 2.0**30), [_node("n")], {NodeName("n"): used})
    assert scored == pytest.approx(score)


def test_binpack_skips_what_the_pod_does_not_request() -> None:
    (scored,) = volcano_binpack(_pod(2.0, 0.0), [_node("n")], {NodeName("n"): (2.0, 0.0)})
    assert scored == pytest.approx(50.0)


def test_the_scheduler_adds_binpack_to_usage_in_tenths() -> None:
    nodes = {NodeName(n): _node(n) for n in ("a", "b")}
    usage = VolcanoUsage(nodes=lambda: nodes, recent=lambda: {}, now=lambda: 0.0)
    requested = {NodeName("a"): (4.0, 0.0)}
    scheduler = VolcanoScheduler(usage, lambda: requested)
    pod = _pod(2.0, 0.0)
    # No metrics yet: binpack alone, 75 and 25 points.
    assert scheduler.prioritize(pod, [NodeName("a"), NodeName("b")]) == {"a": 8, "b": 2}
    usage.refresh({NodeName("a"): (60.0, 0.0), NodeName("b"): (0.0, 0.0)})
    # usage: a (1 - 0.6 + 1) / 2 x 500 = 350, b 500.
    assert scheduler.prioritize(pod, [NodeName("a"), NodeName("b")]) == {"a": 42, "b": 52}


# ------------------------------------------------------------------- the query's value


@pytest.mark.parametrize("delay", ["0s", "15s"])
def test_with_15s_scrapes_volcano_reads_the_busy_share(delay: str) -> None:
    source = _scraped("15s", until=240.0, delay=delay)
    assert source.volcano_node_query("cpu", 120.0) == {"only": pytest.approx(0.8)}
    assert source.volcano_node_query("memory", 120.0) == {"only": pytest.approx(0.5)}


def test_with_30s_scrapes_no_irate_range_holds_two_scrapes_and_the_cpu_query_answers_nothing() -> (
    None
):
    source = _scraped("30s", until=240.0)
    assert source.volcano_node_query("cpu", 120.0) == {}
    assert source.volcano_node_query("memory", 120.0) == {"only": pytest.approx(0.5)}


def test_pods_have_usage_with_15s_scrapes_and_none_with_30s() -> None:
    with_15s = _scraped("15s", until=240.0).volcano_pod_usage()
    assert len(with_15s) == 8
    assert all(cpu == pytest.approx(0.8) for cpu, _ in with_15s.values())
    assert _scraped("30s", until=240.0).volcano_pod_usage() == {}


def test_the_view_serves_volcano_s_queries_by_their_text() -> None:
    source = _scraped("15s", until=240.0)
    fetched = source.fetch(frozenset({volcano_cpu_query("2m")}))
    (column,) = fetched.columns.values()
    assert {node: s.value for node, s in column.items()} == {"only": pytest.approx(0.8)}


# ---------------------------------------------------------------------------- in a run


def _evictions(scrape: str, name: str = "volcano-loadaware") -> int:
    """Volcano's evictions in the hot pair (tests/tas_simulator/worlds.py): worker-1 and worker-2
    hold six 1.2-core pods each (90% of 8 cores, over Volcano's 80% target); four are empty
    once the taint goes at 1m. Volcano runs every 2m here."""
    contenders = ["volcano-loadaware", "volcano-loadaware-5s-scrape"]
    scenario = worlds.scenario(
        worlds.hot_pair(name="volcano-skewed", duration="6m", scrape=scrape, contenders=contenders)
    )
    return len(run_contender(scenario, worlds.contender(name, scenario), seed=1).eviction_times)


def test_volcano_relieves_nodes_over_its_target_with_15s_scrapes() -> None:
    assert _evictions("15s") > 0


def test_with_30s_scrapes_volcano_reads_busy_nodes_as_idle_and_evicts_nothing() -> None:
    assert _evictions("30s") == 0


def test_reading_its_installer_s_5s_prometheus_volcano_relieves_them_in_a_30s_cluster() -> None:
    assert _evictions("30s", "volcano-loadaware-5s-scrape") > 0


def test_on_psi_taint_release_with_30s_scrapes_only_volcano_s_own_prometheus_lets_it_act() -> None:
    named = load_scenario(str(SCENARIOS / "psi-taint-release.yaml"))
    scenario = dataclasses.replace(
        named, pipeline=dataclasses.replace(named.pipeline, scrape_interval=30.0)
    )
    evictions = {}
    for name in ("volcano-loadaware", "volcano-loadaware-5s-scrape"):
        contender = resolve(name)
        assert isinstance(contender, Contender)
        evictions[name] = len(run_contender(scenario, contender, seed=named.seed).eviction_times)
    assert evictions["volcano-loadaware"] == 0
    assert evictions["volcano-loadaware-5s-scrape"] > 0
