"""The kube-scheduler model places pods as kube-scheduler would, and asks the extender as it does.

Covered:
- its own filters (`tas.fit`): untolerated taints, selectors and full nodes are skipped, and a
  pod that fits nowhere stays pending with every node's reason;
- least-allocated scoring spreads pods over equal nodes;
- the extender's filter removes nodes (with its reasons), its priorities count x weight x 10,
  and nodes it names but was not asked about are ignored;
- a failing extender: ignored when `ignorable`, the pod stays pending otherwise;
- filter and prioritize are separate calls, as kube-scheduler makes them: an ignorable
  extender whose filter fails still has its priorities counted, a failing prioritize leaves
  only its scores out (even when not ignorable), and one node left is taken without asking
  for priorities;
- only pods linking a policy are sent to the extender;
- over HTTP: `HttpExtender` against the real extender on a real uvicorn server keeps the demo
  pod off an unhealthy node.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence

import pytest

from tas.cluster.model import Pod, Taint, TaintEffect
from tas.types import Namespace, NodeName
from tas_inmemory.extender_client import HttpExtender
from tas_inmemory.scheduler import ExtenderError, FilterAnswer, InMemoryScheduler
from tests import builders
from tests.builders import cluster_of
from tests.extender.support import health_policies, health_view, running_extender

NAMESPACE = Namespace("default")


make_node = functools.partial(builders.make_node, cpu=4.0, memory=8 * builders.GiB)
#: Pending pods asking for a core (and a MiB).
make_pod = functools.partial(builders.make_pod, cpu=1.0, memory=2**20)


class ScriptedExtender:
    """An extender that answers from tables and records what it was asked."""

    def __init__(
        self,
        *,
        passed: Sequence[str] | None = None,
        failed: Mapping[str, str] | None = None,
        scores: Mapping[str, int] | None = None,
        error: str | None = None,
        prioritize_error: str | None = None,
        weight: int = 5,
        ignorable: bool = True,
    ) -> None:
        self.weight = weight
        self.ignorable = ignorable
        self._passed = passed
        self._failed = dict(failed or {})
        self._scores = dict(scores or {})
        self._error = error
        self._prioritize_error = prioritize_error
        self.asked: list[str] = []
        self.prioritized: list[tuple[str, list[NodeName]]] = []

    def filter(self, pod: Pod, candidates: Sequence[NodeName]) -> FilterAnswer:
        self.asked.append(pod.name)
        if self._error:
            raise ExtenderError(self._error)
        passed = candidates if self._passed is None else [NodeName(n) for n in self._passed]
        return FilterAnswer(passed, self._failed)

    def prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> Mapping[NodeName, int]:
        self.prioritized.append((pod.name, list(candidates)))
        if self._prioritize_error:
            raise ExtenderError(self._prioritize_error)
        return {NodeName(n): s for n, s in self._scores.items()}


def test_a_pod_that_fits_nowhere_stays_pending_with_every_nodes_reason() -> None:
    tainted = make_node("a", taints=(Taint("dedicated", TaintEffect.NO_SCHEDULE, "gpu"),))
    cluster = cluster_of(tainted, make_node("b", cpu=0.5), pods=[make_pod("p")])
    (placement,) = InMemoryScheduler(cluster, extender=None).schedule_pending()
    assert placement.node is None
    assert "0/2 nodes are available" in placement.reason
    assert "a: taint dedicated=gpu:NoSchedule is not tolerated" in placement.reason
    assert "b: insufficient cpu" in placement.reason


def test_pods_of_one_shape_are_each_judged_against_what_the_binds_before_them_left() -> None:
    # One pass answers the pods of one shape once until a bind changes a node (the pending
    # replicas of a large simulation): no answer may outlive the bind that changed it.
    pods = [make_pod(f"p{i}") for i in range(4)]
    cluster = cluster_of(make_node("a", cpu=2.0), pods=pods)
    placements = InMemoryScheduler(cluster, extender=None).schedule_pending()
    assert [p.node for p in placements] == ["a", "a", None, None]
    assert placements[2].reason == placements[3].reason
    assert "a: insufficient cpu (2 + 1 > 2)" in placements[3].reason
    assert sorted(p.name for p in cluster.list_pods() if p.node_name) == ["p0", "p1"]


def test_a_pod_that_waited_through_quiet_passes_is_placed_once_the_cluster_changes() -> None:
    # A pass in which no pod fits anywhere is answered again, unsearched, until the cluster
    # changes; the extender that answers must still be asked once a node could take the pod.
    extender = ScriptedExtender()
    cluster = cluster_of(make_node("a", cpu=0.5), pods=[make_pod("p", policy="demo")])
    scheduler = InMemoryScheduler(cluster, extender=extender)
    first = scheduler.schedule_pending()
    assert scheduler.schedule_pending() == first
    assert first[0].node is None
    assert extender.asked == []
    cluster.add_node(make_node("b"))
    (placement,) = scheduler.schedule_pending()
    assert placement.node == "b"
    assert extender.asked == ["p"]


def test_prefer_no_schedule_taints_do_not_filter() -> None:
    soft = make_node("a", taints=(Taint("overutilized", TaintEffect.PREFER_NO_SCHEDULE),))
    cluster = cluster_of(soft, pods=[make_pod("p")])
    (placement,) = InMemoryScheduler(cluster, extender=None).schedule_pending()
    assert placement.node == "a"


def test_least_allocated_scoring_spreads_pods_over_equal_nodes() -> None:
    pods = [make_pod(f"p{i}") for i in range(4)]
    cluster = cluster_of(make_node("a"), make_node("b"), pods=pods)
    InMemoryScheduler(cluster, extender=None).schedule_pending()
    placed = [p.node_name for p in cluster.list_pods()]
    assert sorted(placed) == ["a", "a", "b", "b"]  # type: ignore[type-var]


def test_the_extender_filter_removes_nodes_and_its_reasons_are_kept() -> None:
    extender = ScriptedExtender(passed=["b", "ghost"], failed={"a": "health_metric = 2 > 1"})
    cluster = cluster_of(make_node("a"), make_node("b"), pods=[make_pod("p", policy="demo")])
    (placement,) = InMemoryScheduler(cluster, extender=extender).schedule_pending()
    assert placement.node == "b"

    refusing = ScriptedExtender(passed=["ghost"], failed={"a": "unhealthy", "b": "unhealthy"})
    cluster = cluster_of(make_node("a"), make_node("b"), pods=[make_pod("q", policy="demo")])
    (placement,) = InMemoryScheduler(cluster, extender=refusing).schedule_pending()
    assert placement.node is None
    assert "a: unhealthy" in placement.reason


def test_extender_priorities_count_times_weight_times_ten() -> None:
    # b is fuller (least-allocated prefers a by 25 points); the extender's 1 x 5 x 10 = 50
    # points for b outweigh that, as they would in kube-scheduler.
    busy = dataclasses.replace(make_pod("busy", cpu=2.0), node_name=NodeName("b"))
    pods = [busy, make_pod("p", policy="demo")]
    extender = ScriptedExtender(scores={"a": 0, "b": 1}, weight=5)
    cluster = cluster_of(make_node("a"), make_node("b"), pods=pods)
    placement = InMemoryScheduler(cluster, extender=extender).schedule(pods[1])
    assert placement.node == "b"

    ghost_only = ScriptedExtender(scores={"ghost": 10}, weight=5)
    cluster = cluster_of(make_node("a"), make_node("b"), pods=pods)
    assert InMemoryScheduler(cluster, extender=ghost_only).schedule(pods[1]).node == "a"


@pytest.mark.parametrize(
    ("ignorable", "expected_node"),
    [
        pytest.param(True, "a", id="ignorable: scheduled without the extender"),
        pytest.param(False, None, id="not ignorable: the pod stays pending"),
    ],
)
def test_a_failing_extender_is_handled_as_kube_scheduler_does(
    ignorable: bool, expected_node: str | None
) -> None:
    extender = ScriptedExtender(error="connection refused", ignorable=ignorable)
    cluster = cluster_of(make_node("a"), pods=[make_pod("p", policy="demo")])
    (placement,) = InMemoryScheduler(cluster, extender=extender).schedule_pending()
    assert placement.node == expected_node
    if expected_node is None:
        assert "extender failed: connection refused" in placement.reason


def busy_b_and_a_linked_pod() -> list[Pod]:
    """b is fuller: least-allocated prefers a by 25 points unless the extender's scores count."""
    busy = dataclasses.replace(make_pod("busy", cpu=2.0), node_name=NodeName("b"))
    return [busy, make_pod("p", policy="demo")]


def test_an_ignorable_extender_whose_filter_fails_still_has_its_priorities_counted() -> None:
    # kube-scheduler skips only the failed filter (findNodesThatPassExtenders) and still asks
    # for priorities (prioritizeNodes): Intel TAS's 404 on a filter keeps its scores.
    pods = busy_b_and_a_linked_pod()
    extender = ScriptedExtender(error="404", scores={"a": 0, "b": 1}, weight=5)
    cluster = cluster_of(make_node("a"), make_node("b"), pods=pods)
    assert InMemoryScheduler(cluster, extender=extender).schedule(pods[1]).node == "b"
    assert extender.prioritized == [("p", ["a", "b"])]


@pytest.mark.parametrize("ignorable", [True, False], ids=["ignorable", "not ignorable"])
def test_a_failing_prioritize_leaves_out_only_the_extenders_scores(ignorable: bool) -> None:
    # prioritizeNodes ignores a prioritize error for every extender; the filter still counts.
    extender = ScriptedExtender(
        passed=["b", "c"],
        failed={"a": "unhealthy"},
        prioritize_error="timeout",
        ignorable=ignorable,
    )
    busy = dataclasses.replace(make_pod("busy", cpu=2.0), node_name=NodeName("b"))
    pod = make_pod("p", policy="demo")
    nodes = (make_node("a"), make_node("b"), make_node("c"))
    cluster = cluster_of(*nodes, pods=[busy, pod])
    placement = InMemoryScheduler(cluster, extender=extender).schedule(pod)
    assert placement.node == "c"  # a was filtered out; b is fuller


def test_one_node_left_is_taken_without_asking_the_extender_for_priorities() -> None:
    extender = ScriptedExtender(passed=["b"], failed={"a": "unhealthy"})
    cluster = cluster_of(make_node("a"), make_node("b"), pods=[make_pod("p", policy="demo")])
    (placement,) = InMemoryScheduler(cluster, extender=extender).schedule_pending()
    assert placement.node == "b"
    assert extender.prioritized == []


def test_only_pods_linking_a_policy_are_sent_to_the_extender() -> None:
    extender = ScriptedExtender()
    pods = [make_pod("plain"), make_pod("linked", policy="demo")]
    InMemoryScheduler(cluster_of(make_node("a"), pods=pods), extender=extender).schedule_pending()
    assert extender.asked == ["linked"]


def test_over_http_the_real_extender_keeps_the_pod_off_an_unhealthy_node() -> None:
    view = health_view({"node-a": 2.0, "node-b": 0.0})
    with running_extender(policies=health_policies(), view=view) as server:
        extender = HttpExtender(server.url)
        pod = dataclasses.replace(
            make_pod("p", policy="demo-policy"), namespace=Namespace("health-metric-demo")
        )
        cluster = cluster_of(make_node("node-a"), make_node("node-b"), pods=[pod])
        try:
            (placement,) = InMemoryScheduler(cluster, extender=extender).schedule_pending()
        finally:
            extender.close()
    assert placement.node == "node-b"


def test_over_http_an_unreachable_extender_is_an_extender_error() -> None:
    extender = HttpExtender("http://127.0.0.1:9", timeout=1.0)
    with pytest.raises(ExtenderError, match="filter"):
        extender.filter(make_pod("p", policy="demo"), [NodeName("a")])
    extender.close()
