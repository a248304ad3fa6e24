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
`contender(name, scenario)` is a contender with the scenario's settings for it;
`spy_evictions(monkeypatch, what)` collects `what` of each eviction the descheduler cycles make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pytest

from descheduler.cycle import CycleReport, Descheduler
from descheduler.evictor import EvictionDecision
from descheduler.framework import Result
from tas_inmemory.scheduler import InMemoryScheduler
from tas_simulator.clock import VirtualClock
from tas_simulator.contenders import Contender, resolve
from tas_simulator.pipeline import ModelSource, ScrapeStore
from tas_simulator.scenario import Scenario, read_scenario
from tas_simulator.world import World

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
