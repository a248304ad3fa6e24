"""Stale metrics never make a node violating, with the real refreshing view and textfile source.

Covered: a node whose sample is fresh and violating is labelled; when the sample ages past the
view's max age (no new sample), the value is missing, so the label goes, the demo pod loses
`violate`, and the policy is Compliant; a sample that is already stale when first read never
labels anything.
"""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from policy_controller.reconciler import Reconciler
from policy_controller.self_metrics import ControllerMetrics
from tas.adapters.metrics import open_metric_view
from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.types import NodeName
from tas_inmemory.cluster import InMemoryCluster
from tests.builders import ManualClock, health_policy_document
from tests.policy_controller.support import (
    DEMO_NAMESPACE,
    make_node,
    make_pod,
)

START = 1_700_000_000.0


def write_sample(directory: Path, node: str, value: float, at: float) -> None:
    text = f"node_health_metric {value} {int(at * 1000)}\n"
    (directory / f"{node}.prom").write_text(text, encoding="utf-8")


def test_a_value_that_goes_stale_stops_the_violation(tmp_path: Path) -> None:
    clock = ManualClock(START)
    cluster = InMemoryCluster()
    for name in ("A", "C"):
        cluster.add_node(make_node(name))
    cluster.add_pod(make_pod("demo-1", node="C"))
    key = cluster.apply_policy(health_policy_document())
    write_sample(tmp_path, "A", 0, START)
    write_sample(tmp_path, "C", 2, START)
    view = open_metric_view(f"textfile:{tmp_path}", sync_period=2, max_age=30, clock=clock)
    store = PolicyStore()
    want_policy_metrics(store, view)
    loader = ClusterPolicyLoader(cluster, store)
    reconciler = Reconciler(
        cluster=cluster,
        policies=store,
        metric_view=view,
        metrics=ControllerMetrics(CollectorRegistry()),
    )
    try:
        loader.sync()
        assert not reconciler.ready  # the view has not fetched yet
        view.refresh_once()
        reconciler.reconcile()
        assert cluster.get_node(NodeName("C")).labels.get("demo-policy") == "violating"

        clock.epoch = START + 31  # no new sample: C's value is now older than max_age
        view.refresh_once()
        reconciler.reconcile()
        assert "demo-policy" not in cluster.get_node(NodeName("C")).labels
        assert "violate" not in cluster.get_pod(DEMO_NAMESPACE, "demo-1").labels
        status = cluster.policy_status(key)
        assert status is not None
        assert status["compliance"] == "Compliant"
    finally:
        view.stop()


def test_a_sample_already_stale_when_read_never_labels_a_node(tmp_path: Path) -> None:
    cluster = InMemoryCluster()
    cluster.add_node(make_node("C"))
    cluster.apply_policy(health_policy_document())
    write_sample(tmp_path, "C", 2, START - 60)
    view = open_metric_view(
        f"textfile:{tmp_path}", sync_period=2, max_age=30, clock=ManualClock(START)
    )
    store = PolicyStore()
    want_policy_metrics(store, view)
    ClusterPolicyLoader(cluster, store).sync()
    reconciler = Reconciler(
        cluster=cluster,
        policies=store,
        metric_view=view,
        metrics=ControllerMetrics(CollectorRegistry()),
    )
    try:
        assert not reconciler.ready
        view.refresh_once()
        assert reconciler.reconcile().ran
        assert "demo-policy" not in cluster.get_node(NodeName("C")).labels
    finally:
        view.stop()
