"""The closed loop is composed in one place (`tas_inmemory.compose.compose_loop`).

Covered: no product module builds a `ClosedLoop`, its kube-scheduler model or a `Reconciler` but
the composition root (the policy controller's own process excepted: it runs no closed loop), so
a new option of the loop's parts is one parameter there; the view is told what the parts read:
the policies' metrics only when something reads the policies, herd control's pairs only when it
runs, the descheduler's and the caller's extra, and it follows a policy applied later; the
reconciler's breaker share decides whether a metric saying every node violates is acted on; the
scheduler model places pending pods through the extender given; the first descheduling cycle
falls where the caller says, else one interval in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from descheduler.assemble import assemble_descheduler
from descheduler.cycle import Descheduler
from policy_controller.settings import DEFAULT_CONTROLLER, ControllerSettings
from tas.breaker import DEFAULT_MAX_SHARE
from tas.cluster.model import Pod
from tas.metrics.static import StaticMetricView
from tas.policies.store import PolicyStore
from tas.types import MetricName, NodeName
from tas.vocabulary import VIOLATING
from tas_herd.placements import HERD_CONTROL_METRICS, PlacementTracker
from tas_inmemory.cluster import InMemoryCluster
from tas_inmemory.compose import compose_loop
from tas_inmemory.loop import ClosedLoop
from tas_inmemory.scheduler import Extender, FilterAnswer
from tests.builders import ManualClock, cluster_of, make_node, make_pod, make_policy, rule
from tests.descheduler.builders import policy_config
from tests.product_code import ROOT, construction_sites, constructions

COMPOSE = "tas_inmemory/compose.py"
NODES = ("node-a", "node-b", "node-c")
HEALTH = MetricName("health_metric")


class View(StaticMetricView):
    """Fixed values, refreshed as the loop refreshes a view (counted)."""

    refreshes = 0

    def refresh_once(self) -> None:
        self.refreshes += 1


class Fixed:
    """The world, standing still."""

    def advance(self, t: float, step: float) -> None:
        pass


class OnlyTo:
    """An extender that passes one node and removes the others."""

    weight = 1
    ignorable = False

    def __init__(self, node: str) -> None:
        self.node = NodeName(node)

    def filter(self, pod: Pod, candidates: Sequence[NodeName]) -> FilterAnswer:
        return FilterAnswer(
            passed=[n for n in candidates if n == self.node],
            failed={n: "not the one" for n in candidates if n != self.node},
        )

    def prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> Mapping[NodeName, int]:
        return {}


@pytest.mark.parametrize("part", ["ClosedLoop", "InMemoryScheduler"])
def test_only_the_composition_root_builds_the_loop_and_its_scheduler_model(part: str) -> None:
    found = construction_sites(part)
    assert {site.split(":")[0] for site in found} == {COMPOSE}, found


def test_only_the_composition_root_builds_a_reconciler_for_the_loop() -> None:
    # The policy controller's own process (`tas controller`) builds its Reconciler beside the
    # ControllerLoop that runs it against a real cluster, with what only a real cluster has
    # (leader election, cache readiness, the pods' summaries): no closed loop. Its benchmark
    # measures the Reconciler alone, as a test would.
    outside = {
        site
        for site in construction_sites("Reconciler")
        if not site.startswith((f"{COMPOSE}:", "benchmarks/"))
        and not constructions(ROOT / site.split(":")[0], "ControllerLoop")
    }
    assert outside == set()


def _policies() -> PolicyStore:
    store = PolicyStore()
    store.replace([make_policy("health", deschedule=[rule("health_metric", "GreaterThan", 1)])])
    return store


def _cluster() -> InMemoryCluster:
    return cluster_of(*(make_node(n) for n in NODES))


def _loop(
    cluster: InMemoryCluster,
    view: View,
    store: PolicyStore,
    *,
    extender: Extender | None = None,
    controller: ControllerSettings | None = DEFAULT_CONTROLLER,
    descheduler: Descheduler | None = None,
    placements: PlacementTracker | None = None,
    extra_metrics: Sequence[MetricName] = (),
    first_cycle: float | None = None,
) -> ClosedLoop:
    return compose_loop(
        world=Fixed(),
        cluster=cluster,
        view=view,
        policies=store,
        clock=ManualClock(),
        step_seconds=1.0,
        sync_period=1.0,
        descheduling_interval=10.0,
        first_cycle=first_cycle,
        extender=extender,
        controller=controller,
        descheduler=descheduler,
        placements=placements,
        extra_metrics=extra_metrics,
    )


def _load_aware(view: View) -> Descheduler:
    return assemble_descheduler(
        config=policy_config(
            "LoadAware", args={"LoadAware": {"deviationThresholds": "AsymmetricLow"}}
        ),
        cluster=_cluster(),
        metric_view=view,
        policies=dict,
        clock=ManualClock(),
    )


SHOWN = MetricName("shown_on_the_page")


@pytest.mark.parametrize(
    ("parts", "wanted"),
    [
        pytest.param({}, {HEALTH}, id="the-controller-reads-the-policies"),
        pytest.param({"controller": None}, set(), id="nothing-reads-the-policies"),
        pytest.param(
            {"controller": None, "extender": OnlyTo("node-a")},
            {HEALTH},
            id="the-extender-reads-the-policies",
        ),
        pytest.param(
            {"controller": None, "placements": PlacementTracker()},
            HERD_CONTROL_METRICS,
            id="herd-control-reads-its-pairs",
        ),
        pytest.param(
            {"controller": None, "extra_metrics": [SHOWN]}, {SHOWN}, id="the-page-adds-its-own"
        ),
    ],
)
def test_the_view_fetches_what_the_parts_read(
    parts: dict[str, Any], wanted: set[MetricName]
) -> None:
    view = View()
    _loop(_cluster(), view, _policies(), **parts)
    assert view.wanted == wanted


def test_the_view_fetches_what_the_descheduler_plugins_name() -> None:
    view = View()
    descheduler = _load_aware(view)
    _loop(_cluster(), view, _policies(), controller=None, descheduler=descheduler)
    assert view.wanted == descheduler.wanted_metrics() != set()


def test_the_view_fetches_the_metrics_of_a_policy_applied_later() -> None:
    view, store = View(), _policies()
    _loop(_cluster(), view, store, extra_metrics=[SHOWN])
    store.replace([make_policy("load", dontschedule=[rule("load_metric", "GreaterThan", 9)])])
    assert view.wanted == {MetricName("load_metric"), SHOWN}


@pytest.mark.parametrize(
    ("share", "labelled"),
    [
        pytest.param(DEFAULT_MAX_SHARE, set(), id="ours-holds-a-metric-that-condemns-every-node"),
        pytest.param(1.0, set(NODES), id="a-share-of-one-labels-whatever-violates"),
    ],
)
def test_the_controllers_breaker_share_decides_whether_every_node_is_labelled(
    share: float, labelled: set[str]
) -> None:
    cluster = _cluster()
    view = View({"health_metric": dict.fromkeys(NODES, 2.0)})
    loop = _loop(
        cluster, view, _policies(), controller=ControllerSettings(max_violating_node_share=share)
    )
    loop.step(0.0)
    assert view.refreshes == 1
    assert {n.name for n in cluster.list_nodes() if n.labels.get("health") == VIOLATING} == (
        labelled
    )


def test_the_scheduler_model_places_pending_pods_through_the_given_extender() -> None:
    cluster = _cluster()
    cluster.add_pod(make_pod("waiting", cpu=0.5, policy="health"))
    extender: Extender = OnlyTo("node-b")
    _loop(cluster, View(), _policies(), controller=None, extender=extender).step(0.0)
    assert {p.name: p.node_name for p in cluster.list_pods()} == {"waiting": "node-b"}


def test_the_first_descheduling_cycle_falls_where_the_caller_says_else_one_interval_in() -> None:
    assert _loop(_cluster(), View(), _policies()).next_cycle == 10.0
    assert _loop(_cluster(), View(), _policies(), first_cycle=3.0).next_cycle == 3.0
