"""Metrics reach the components late, the way Prometheus makes them late (tas_simulator.pipeline).

Covered:
- a gauge change is seen only after the next scrape plus the delay, stamped with the scrape's
  time;
- a rate needs two scrapes in its window;
- during an outage the source fails, and this project's view keeps the last values only until
  they are stale, while TAS's never-stale view keeps them;
- a bogus value replaces every node's value for its period;
- the Prometheus API answers the OpenShift profile's query with one sample per node.
"""

from __future__ import annotations

import httpx

from tas.metrics.refreshing import RefreshingMetricView
from tas.types import MetricName, NodeName
from tas_simulator.clock import VirtualClock
from tas_simulator.pipeline import COMBINED_QUERY, ModelSource, PrometheusApi, ScrapeStore
from tas_simulator.scenario import Event, EventKind, load_scenario_text
from tas_simulator.world import World

SCENARIO = """
name: tiny
duration: 10m
step: 5s
warmup: 1m
metrics: {scrapeInterval: 15s, window: 30s, delay: 10s}
nodes:
  - {name: "n-{i}", count: 2, cpu: 4, memory: 8Gi, metrics: {health_metric: 0}}
workloads:
  - name: app
    replicas: 2
    requests: {cpu: 500m}
    usage: {cpu: {profile: steady, value: 1}}
"""
HEALTH = MetricName("health_metric")
N1 = NodeName("n-1")


class Harness:
    def __init__(self) -> None:
        self.scenario = load_scenario_text(SCENARIO)
        self.clock = VirtualClock()
        self.world = World(self.scenario, clock=self.clock, seed=1)
        self.store = ScrapeStore(self.world, self.scenario.pipeline)
        self.source = ModelSource(self.store, self.clock)

    def run_until(self, end: float) -> None:
        t = self.clock.elapsed
        while t <= end:
            self.clock.advance_to(t)
            state = self.world.model(t)
            self.store.integrate(state, self.scenario.step)
            self.store.maybe_scrape(t)
            t += self.scenario.step

    def values(self, name: MetricName) -> dict[NodeName, float]:
        fetched = self.source.fetch(frozenset({name}))
        return {node: sample.value for node, sample in fetched.columns.get(name, {}).items()}


def test_a_gauge_change_is_seen_after_the_next_scrape_and_the_delay() -> None:
    h = Harness()
    h.run_until(60)
    h.world.apply(Event(62, EventKind.SET_HEALTH, nodes=("n-1",), metric=HEALTH, value=2), 62)
    h.run_until(80)  # scraped at 75, visible from 85
    assert h.values(HEALTH)[N1] == 0
    h.run_until(85)
    assert h.values(HEALTH)[N1] == 2
    sample = h.source.fetch(frozenset({HEALTH})).columns[HEALTH][N1]
    assert sample.timestamp == h.clock.epoch(75)


def test_a_rate_needs_two_scrapes_in_its_window() -> None:
    h = Harness()
    h.run_until(10)  # one scrape visible at most
    assert h.values(MetricName("cpu_utilization")) == {}
    h.run_until(60)
    assert set(h.values(MetricName("cpu_utilization"))) == {N1, NodeName("n-2")}


def test_an_outage_keeps_values_until_stale_in_ours_and_forever_in_tas() -> None:
    h = Harness()
    ours = RefreshingMetricView(h.source, sync_period=10, max_age=30, clock=h.clock)
    tas = RefreshingMetricView(h.source, sync_period=10, max_age=1e15, clock=h.clock)
    for view in (ours, tas):
        view.set_wanted({HEALTH})
    h.run_until(60)
    for view in (ours, tas):
        view.refresh_once()
    h.world.apply(Event(65, EventKind.METRIC_OUTAGE, lasts=300), 65)
    h.run_until(70)
    for view in (ours, tas):
        view.refresh_once()
    assert ours.columns().get(HEALTH)
    h.run_until(200)
    for view in (ours, tas):
        view.refresh_once()
    assert not ours.columns().get(HEALTH)
    assert tas.columns()[HEALTH][N1] == 0


def test_a_bogus_value_replaces_every_nodes_value_for_its_period() -> None:
    h = Harness()
    h.run_until(30)
    h.world.apply(Event(30, EventKind.BOGUS_METRIC, metric=HEALTH, value=2, lasts=60), 30)
    h.run_until(60)
    assert set(h.values(HEALTH).values()) == {2}
    h.run_until(120)
    assert set(h.values(HEALTH).values()) == {0}


def test_the_prometheus_api_answers_the_openshift_profiles_query() -> None:
    h = Harness()
    h.run_until(60)
    client = httpx.Client(transport=PrometheusApi(h.source).transport())
    body = client.get("http://prometheus/api/v1/query", params={"query": COMBINED_QUERY}).json()
    assert body["status"] == "success"
    assert {r["metric"]["instance"] for r in body["data"]["result"]} == {"n-1", "n-2"}
    unknown = client.get("http://prometheus/api/v1/query", params={"query": "up"})
    assert unknown.status_code == 400
