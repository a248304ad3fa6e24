"""The one place a descheduler is put together (`descheduler.assemble`).

Covered: no product module, command or benchmark builds a `Descheduler` but `assemble` (a new
component option is one parameter there); a read-only assembly (`tas explain`) evicts nothing
whatever mode it is given and says why a write is refused; per-pod usage given as a feed is
read as production reads it, and a feed and a reading of one's own are not both accepted; a dry
run decides what the live descheduler would, and leaves the live one's memory as it was; the
per-cycle handle carries only what is generic to every plugin, per-pod usage being one of its
usage sources, while the plugins that remember moves or reserve nodes are built over the
cooldown and the reservations the cycle keeps (a dry run's over its own copies).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from descheduler.assemble import assemble_descheduler, dry_run
from descheduler.cycle import Mode
from descheduler.framework import PluginContext, Result
from descheduler.plugins import load_aware, make_room
from descheduler.state import CycleState
from tas.cluster.interface import ClusterError
from tas.metrics.static import StaticMetricView
from tas.types import PodKey
from tas.vocabulary import POLICY_LABEL
from tests.builders import make_policy, rule
from tests.descheduler.builders import FakeClock, cluster_with, make_node, make_pod, policy_config
from tests.product_code import construction_sites

POLICY = make_policy(
    "demo-policy", namespace="default", deschedule=[rule("health_metric", "Equals", 2)]
)
HEALTH = {"health_metric": {"node-a": 2, "node-b": 0, "node-c": 0}}


def test_only_assemble_builds_a_descheduler() -> None:
    found = construction_sites("Descheduler")
    assert {site.split(":")[0] for site in found} == {"descheduler/assemble.py"}, found


def _world() -> Any:
    pods = (
        make_pod("on-bad", node="node-a", owner="bad", labels={POLICY_LABEL: "demo-policy"}),
        make_pod("on-good", node="node-b", owner="good", labels={POLICY_LABEL: "demo-policy"}),
    )
    return cluster_with(*(make_node(n) for n in ("node-a", "node-b", "node-c")), pods=pods)


def _assemble(cluster: Any, **options: Any) -> Any:
    return assemble_descheduler(
        config=policy_config("TASViolations"),
        cluster=cluster,
        metric_view=StaticMetricView(HEALTH),
        policies=lambda: {POLICY.key: POLICY},
        clock=FakeClock(),
        **options,
    )


def test_an_automatic_assembly_evicts_the_pod_on_the_violating_node() -> None:
    cluster = _world()
    report = _assemble(cluster, mode=Mode.AUTOMATIC).run_cycle()
    assert [(d.name, d.result) for d in report.decisions] == [("on-bad", Result.EVICTED)]
    assert [e.name for e in cluster.evictions] == ["on-bad"]


def test_a_read_only_assembly_evicts_nothing_whatever_mode_it_is_given() -> None:
    cluster = _world()
    descheduler = _assemble(cluster, mode=Mode.AUTOMATIC, read_only="tas explain")
    report = descheduler.run_cycle()
    assert descheduler.mode is Mode.PREDICTIVE
    assert [(d.name, d.result) for d in report.decisions] == [("on-bad", Result.DRY_RUN)]
    assert cluster.evictions == ()
    with pytest.raises(ClusterError, match="tas explain does not"):
        descheduler.cluster.evict_pod("default", "on-bad", reason="a test")


class _Feed:
    """Container metrics as a `PodUsageFeed` reports them: cores and bytes per pod."""

    def __init__(self, usage: Mapping[PodKey, Mapping[str, float]]) -> None:
        self.usage = usage

    def fetch(self) -> Mapping[PodKey, Mapping[str, float]]:
        return self.usage


def test_a_pod_usage_feed_is_read_as_a_share_of_the_nodes_cpu() -> None:
    cluster = _world()
    feed = _Feed({("default", "on-bad"): {"cpu": 2.0}})
    descheduler = _assemble(cluster, pod_usage_feed=feed)
    assert descheduler.pod_usage is not None
    nodes = {n.name: n for n in cluster.list_nodes()}
    state = CycleState(
        nodes=nodes,
        pods=tuple(cluster.list_pods()),
        pdbs=(),
        policies={},
        metrics={},
        now=FakeClock().now(),
    )
    cores = nodes["node-a"].allocatable["cpu"]
    usage = descheduler.pod_usage(state)
    assert usage[("default", "on-bad")]["cpu"] == pytest.approx(100.0 * 2.0 / cores)
    assert ("default", "on-good") not in usage


def test_a_feed_and_a_reading_of_ones_own_are_not_both_taken() -> None:
    with pytest.raises(ValueError, match="not both"):
        _assemble(_world(), pod_usage_feed=_Feed({}), pod_usage=lambda state: {})


def test_a_dry_run_decides_as_the_live_one_would_and_leaves_its_memory_alone() -> None:
    cluster = _world()
    live = _assemble(cluster, mode=Mode.AUTOMATIC)
    plugins = dict(live.plugins)
    report = dry_run(live)
    assert [(d.name, d.result) for d in report.decisions] == [("on-bad", Result.DRY_RUN)]
    assert cluster.evictions == ()
    assert live.plugins == plugins
    assert live.cooldown.evacuated_nodes(FakeClock().now(), within=3600) == set()
    # The live one then acts: the dry run's cooldown was its own copy.
    assert [d.name for d in live.run_cycle().by_result(Result.EVICTED)] == ["on-bad"]


def test_the_per_cycle_handle_carries_nothing_that_only_one_plugin_reads() -> None:
    # As upstream's Handle: what one plugin alone needs (LoadAware's move history,
    # MakeRoomForPending's reservations) is given to it when it is built, not every cycle.
    assert {f.name for f in dataclasses.fields(PluginContext)} == {
        "state",
        "evictor",
        "nodes",
        "classified",
        "declined",
        "usage",
        "prometheus",
        "calibrated",
    }


def test_per_pod_usage_is_a_usage_source_over_the_cycles_snapshot() -> None:
    cluster = _world()
    feed = _Feed({("default", "on-bad"): {"cpu": 2.0}})
    descheduler = _assemble(cluster, pod_usage_feed=feed)
    assert descheduler.usage.pod_usage() is None  # no cycle yet: no snapshot to read it for
    descheduler.run_cycle()
    usage = descheduler.usage.pod_usage()
    assert usage is not None
    cores = {n.name: n for n in cluster.list_nodes()}["node-a"].allocatable["cpu"]
    assert usage[("default", "on-bad")]["cpu"] == pytest.approx(100.0 * 2.0 / cores)
    assert _assemble(cluster).usage.pod_usage() is None  # not measured: none to read


def _rebalancing(cluster: Any) -> Any:
    return assemble_descheduler(
        config=policy_config(
            "LoadAware",
            "MakeRoomForPending",
            args={"LoadAware": {"deviationThresholds": "AsymmetricLow"}},
        ),
        cluster=cluster,
        metric_view=StaticMetricView({}),
        policies=dict,
        clock=FakeClock(),
    )


def test_the_rebalancing_plugins_read_the_memory_the_cycle_keeps_and_a_dry_run_its_copy() -> None:
    cluster = _world()
    live = _rebalancing(cluster)

    def built(descheduler: Any) -> tuple[Any, Any]:
        return (
            descheduler.plugin_run("test", load_aware.NAME),
            descheduler.plugin_run("test", make_room.NAME),
        )

    loads, room = built(live)
    # The evictions the rails record are the ones the plugins remember, as they happen.
    assert loads.moves.cooldown is live.cooldown
    assert room.moves.cooldown is live.cooldown
    # A node reserved is one the cycle keeps the reservation taint on.
    room.reserve("node-c", "uid-1")
    assert live.reservations.nodes == {"node-c": "uid-1"}
    live.reservations.new_cycle()

    dry = _rebalancing(cluster)
    dry.continue_from(live)
    loads, room = built(dry)
    assert loads.moves.cooldown is dry.cooldown is not live.cooldown
    assert room.moves.cooldown is dry.cooldown
    room.reserve("node-c", "uid-1")
    assert dry.reservations.nodes == {"node-c": "uid-1"}
    assert live.reservations.nodes == {}
