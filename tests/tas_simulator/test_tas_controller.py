"""The tas contender labels nodes as Intel TAS's controller does: every 5 s, with no circuit
breaker (tas_simulator.contenders `TAS_SYNC_PERIOD`, tas_simulator.runner).

Covered:
- TAS's metric cache and enforcer run on the same 5 s ticker (its `--syncPeriod` default):
  the tas contender refreshes and labels every 5 s while ours syncs every 2 s as deploy/cluster
  ships it (`--sync-period 2s`), whatever the scenario's sync period;
- in bogus-metric (every node reports a health value that violates the deschedule rule), ours'
  controller holds the new `violating` labels back (its breaker: every node at once is a broken
  exporter), while the tas contender labels every node, as TAS would, so the pods added
  meanwhile (whose node affinity shuns the label) find no node; the labels go once the values
  are sane again.
"""

from __future__ import annotations

from typing import Any

import pytest

from policy_controller.reconciler import Reconciler
from tas_simulator.contenders import (
    CONTENDERS,
    OURS_SYNC_PERIOD,
    TAS_SYNC_PERIOD,
)
from tas_simulator.runner import build_run, run_contender
from tas_simulator.scenario import Scenario, load_scenario
from tests.tas_simulator import worlds

BOGUS_FROM, BOGUS_UNTIL = 300.0, 600.0


def labelled_violating(scenario: Scenario, contender: str, at: float) -> set[str]:
    """The nodes labelled `demo-policy=violating` at `at` seconds into the run."""
    run = build_run(scenario, worlds.contender(contender, scenario), seed=scenario.seed)
    for index in range(round(at / scenario.step) + 1):
        run.step(index)
    return {
        node.name
        for node in run.world.cluster.list_nodes()
        if node.labels.get("demo-policy") == "violating"
    }


def test_tas_refreshes_and_labels_every_5_seconds_ours_at_its_shipped_sync_period(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert TAS_SYNC_PERIOD == 5.0
    assert CONTENDERS["tas"].sync_period == TAS_SYNC_PERIOD
    assert not CONTENDERS["tas"].controller_breaker
    assert CONTENDERS["ours"].controller_breaker
    calls: list[int] = []
    original = Reconciler.reconcile

    def spy(self: Reconciler, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Reconciler, "reconcile", spy)
    scenario = load_scenario("bogus-metric").with_duration(60)
    counts = {}
    for name in ("tas", "ours"):
        calls.clear()
        run_contender(scenario, worlds.contender(name, scenario), seed=scenario.seed)
        counts[name] = len(calls)
    # The scenario's 10 s reaches neither: each runs at its own shipped period.
    assert scenario.sync_period == 10.0
    assert scenario.step <= OURS_SYNC_PERIOD == 2.0
    assert counts == {"tas": 12, "ours": 30}


def test_a_bogus_value_on_every_node_trips_ours_breaker_but_tas_labels_every_node() -> None:
    scenario = load_scenario("bogus-metric").with_duration(BOGUS_UNTIL + 120)
    during = BOGUS_FROM + 120
    nodes = {node.name for node in scenario.nodes}
    assert labelled_violating(scenario, "ours", during) == set()
    assert labelled_violating(scenario, "tas", during) == nodes
    assert labelled_violating(scenario, "tas", BOGUS_UNTIL + 90) == set()


def test_while_every_node_is_labelled_tas_keeps_new_pods_off_every_node_ours_places_them() -> None:
    """The pods added at 6m require a node not labelled violating (the demo's node affinity)."""
    scenario = load_scenario("bogus-metric").with_duration(BOGUS_UNTIL)
    pending = {}
    for name in ("tas", "ours"):
        run = build_run(scenario, worlds.contender(name, scenario), seed=scenario.seed)
        for index in range(round((BOGUS_FROM + 150) / scenario.step) + 1):
            run.step(index)
        pending[name] = run.world.pending_count()
    assert pending == {"tas": 6, "ours": 0}
