"""What the simulator's tests share: the small worlds more than one of them runs, a contender
as a scenario sets it, and the evictions a run makes.

- `hot_pair(...)`: six 8-core, 32Gi nodes; four are tainted NoSchedule (maintenance) while
  twelve pods arrive, so all twelve land on worker-1 and worker-2 (six each), and the taint
  goes at 1m. Per hot node: requests 6 x 1 core = 75% CPU, 6 x 3Gi = 56% memory, 6 of 110
  pods; usage 6 x 1.2 cores = 90% CPU, 6 x 512Mi = 9% memory. The four others are empty: 0% of
  everything. Each contender named runs every 2m, not at its shipped cadence. `spread=True`:
  no taint, so the same pods land two a node (25% CPU requested, 30% used): no node is over
  any target.
- `quiet_pair(settings)`: two 4-core, 8Gi nodes and two pods using 200m each, under the top
  level `settings` (name, duration, cadences): cheap enough to run for hours and count every
  contender's cycles.

Each returns the scenario's document, as a scenario file parses, for a test to change;
`scenario(document)` reads it through the simulator's own loader and checks. `scraped(scenario,
until=...)` is a scenario's metrics pipeline as the contenders read it after `until` seconds.
- `health_pair(events)`: node a (4 cores) and node b (8 cores), two 2-core `app` pods and a
  one-pod StatefulSet `db` of 1 core, with these events (what an unhealthy node does);
  `SteppedWorld(scenario, place)` steps such a world as the closed loop does, each first pod
  bound where `place` says, with the figures recorded.
- `fluid_pair()`: two 4-core nodes and 10 cores of steady demand (the references' worlds).

`contender(name, scenario)` is a contender with the scenario's settings for it;
`spy_evictions(monkeypatch, what)` collects `what` of each eviction the descheduler cycles make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

from descheduler.cycle import CycleReport, Descheduler
from descheduler.evictor import EvictionDecision
from descheduler.framework import Result
from tas.types import NodeName
from tas_inmemory.scheduler import InMemoryScheduler
from tas_simulator.clock import VirtualClock
from tas_simulator.contenders import Contender, resolve
from tas_simulator.figures import FigureRecorder, Figures
from tas_simulator.pipeline import ModelSource, ScrapeStore
from tas_simulator.scenario import SCENARIOS, Scenario, read_scenario
from tas_simulator.world import ModelState, World

EMPTIED = ["worker-3", "worker-4", "worker-5", "worker-6"]

T = TypeVar("T")


def hot_pair(
    *,
    name: str,
    duration: str,
    contenders: Iterable[str],
    seed: int = 1,
    scrape: str = "15s",
    delay: str = "15s",
    phase: int | None = None,
    spread: bool = False,
) -> dict[str, Any]:
    """The hot pair (see the module); `phase`: the scenario's deschedulingPhase."""
    document: dict[str, Any] = {
        "name": name,
        "duration": duration,
        "step": "5s",
        "seed": seed,
        "warmup": "1m",
        "startupDelay": "10s",
        "syncPeriod": "10s",
        "deschedulingInterval": "2m",
        "metrics": {"scrapeInterval": scrape, "window": "1m", "delay": delay},
        "contenders": {contender: {"deschedulingInterval": "2m"} for contender in contenders},
        "nodes": [{"name": "worker-{i}", "count": 6, "cpu": 8, "memory": "32Gi"}],
        "workloads": [
            {
                "name": "hot",
                "replicas": 12,
                "requests": {"cpu": "1", "memory": "3Gi"},
                "labels": {"app": "hot"},
                "usage": {
                    "cpu": {"profile": "steady", "value": "1.2"},
                    "memory": {"profile": "steady", "value": "512Mi"},
                },
            }
        ],
    }
    if phase is not None:
        document["deschedulingPhase"] = phase
    if not spread:
        document["events"] = [
            {
                "at": "0s",
                "taint": {
                    "nodes": list(EMPTIED),
                    "key": "maintenance",
                    "value": "true",
                    "effect": "NoSchedule",
                },
            },
            {"at": "1m", "untaint": {"nodes": list(EMPTIED), "key": "maintenance"}},
        ]
    return document


def quiet_pair(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The quiet pair (see the module) under the scenario's top-level `settings`."""
    return {
        **settings,
        "nodes": [{"name": "worker-{i}", "count": 2, "cpu": 4, "memory": "8Gi"}],
        "workloads": [
            {
                "name": "app",
                "replicas": 2,
                "requests": {"cpu": "500m", "memory": "1Gi"},
                "usage": {
                    "cpu": {"profile": "steady", "value": "200m"},
                    "memory": {"profile": "steady", "value": "512Mi"},
                },
            }
        ],
    }


def scenario(document: Mapping[str, Any]) -> Scenario:
    """The document read and checked as `tas simulate` reads a scenario file."""
    return read_scenario(dict(document), base=Path("."))


def scraped(scenario: Scenario, *, until: float, history: float = 0.0) -> ModelSource:
    """The scenario's pods placed, its model run and scraped up to `until` seconds (scrapes
    kept `history` seconds beyond the rate window): the pipeline's source, as the contenders
    read it."""
    clock = VirtualClock()
    world = World(scenario, clock=clock, seed=1)
    InMemoryScheduler(world.cluster, extender=None).schedule_pending()
    store = ScrapeStore(world, scenario.pipeline, history=history)
    t = 0.0
    while t <= until:
        clock.advance_to(t)
        store.integrate(world.model(t), scenario.step)
        store.maybe_scrape(t)
        t += scenario.step
    return ModelSource(store, clock)


def contender(name: str, scenario: Scenario) -> Contender:
    """The contender `name`, with what the scenario sets for it (`contenders.<name>`)."""
    found = resolve(name, scenario.contenders.get(name))
    assert isinstance(found, Contender), found
    return found


def spy_evictions(
    monkeypatch: pytest.MonkeyPatch, what: Callable[[EvictionDecision], T]
) -> list[T]:
    """`what` of every eviction the real descheduler cycles make in the rest of the test, in
    order."""
    found: list[T] = []
    original = Descheduler.run_cycle

    def spy(self: Descheduler) -> CycleReport:
        report = original(self)
        found.extend(what(d) for d in report.decisions if d.result == Result.EVICTED)
        return report

    monkeypatch.setattr(Descheduler, "run_cycle", spy)
    return found


_MEMORY = {"profile": "steady", "value": "100Mi"}


def health_pair(events: list[dict[str, Any]], **changes: Any) -> Scenario:
    """Node a (4 cores) and node b (8 cores); `app`, two pods of 2 cores each, and `db`, a
    StatefulSet of one pod of 1 core; a 10 s start-up, past by the end of the warm-up."""
    document: dict[str, Any] = {
        "name": "health",
        "duration": "15m",
        "step": "5s",
        "warmup": "30s",
        "startupDelay": "10s",
        "seed": 1,
        "nodes": [
            {"name": "a", "cpu": 4, "memory": "16Gi", "metrics": {"health_metric": 0}},
            {"name": "b", "cpu": 8, "memory": "16Gi", "metrics": {"health_metric": 0}},
        ],
        "workloads": [
            {
                "name": "app",
                "replicas": 2,
                "requests": {"cpu": "1", "memory": "64Mi"},
                "usage": {"cpu": {"profile": "steady", "value": 2}, "memory": _MEMORY},
            },
            {
                "name": "db",
                "kind": "StatefulSet",
                "replicas": 1,
                "requests": {"cpu": "500m", "memory": "64Mi"},
                "usage": {"cpu": {"profile": "steady", "value": 1}, "memory": _MEMORY},
            },
        ],
        "events": events,
    }
    document.update(changes)
    return read_scenario(document, base=SCENARIOS)


def fluid_pair(**changes: Any) -> Scenario:
    """Two 4-core nodes, one steady workload of 5 pods at 2 cores each (10 cores of demand),
    a 10-minute run on 10 s steps with a 1-minute warm-up."""
    document: dict[str, Any] = {
        "name": "fluid",
        "duration": "10m",
        "step": "10s",
        "warmup": "1m",
        "startupDelay": "30s",
        "seed": 3,
        "nodes": [
            {"name": "a", "cpu": 4, "memory": "16Gi", "labels": {"zone": "x"}},
            {"name": "b", "cpu": 4, "memory": "16Gi", "labels": {"zone": "y"}},
        ],
        "workloads": [
            {
                "name": "steady",
                "replicas": 5,
                "requests": {"cpu": "100m", "memory": "64Mi"},
                "usage": {
                    "cpu": {"profile": "steady", "value": 2},
                    "memory": {"profile": "steady", "value": "100Mi"},
                },
            }
        ],
    }
    document.update(changes)
    return read_scenario(document, base=SCENARIOS)


class SteppedWorld:
    """The world stepped as the closed loop steps it (events, model, figures, then the
    scheduler), every first pod bound to the node `place` names for it."""

    def __init__(self, scenario: Scenario, place: Callable[[str], str]) -> None:
        self.scenario = scenario
        self.clock = VirtualClock()
        self.world = World(scenario, clock=self.clock, seed=1)
        for pod in self.world.cluster.list_pods():
            self.world.cluster.bind_pod(pod.namespace, pod.name, NodeName(place(pod.name)))
        self.scheduler = InMemoryScheduler(self.world.cluster, extender=None)
        self.recorder = FigureRecorder(self.world, [], warmup=scenario.warmup)
        self.t = 0.0
        self.states: dict[float, ModelState] = {}

    def until(self, end: float, before: Callable[[float], None] | None = None) -> None:
        step = self.scenario.step
        while self.t <= end + 1e-9:
            t = self.t
            self.clock.advance_to(t)
            if before is not None:
                before(t)
            for event in self.world.due_events(t):
                self.world.apply(event, t)
            state = self.world.model(t)
            self.world.report_ready(t)
            self.recorder.model(state, step)
            self.states[t] = state
            self.scheduler.schedule_pending()
            self.t += step

    def figures(self) -> Figures:
        return self.recorder.finish()

    def slots_on(self, node: str) -> list[int]:
        index = self.world.node_index[NodeName(node)]
        return [int(s) for s in np.flatnonzero(np.asarray(self.world.slot_node.view) == index)]
