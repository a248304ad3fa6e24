"""The loop, the leader gate and the probe server.

Covered:
- a replica that does not lead never reconciles and reports `tas_controller_leader 0`;
- two replicas electing on one Lease (API emulator): only the leader writes;
- a leader that loses its lease mid-cycle stops writing at once (the reconciler asks before
  every write);
- a cycle that raises is logged and counted, and the loop carries on;
- `run` ticks every sync period in a thread until stopped;
- health: unhealthy when the loop has not ticked for several periods;
- `/healthz`, `/readyz` (503 until policies and metrics are ready) and `/metrics` over HTTP.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from policy_controller.loop import ControllerLoop
from policy_controller.reconciler import Reconciler
from policy_controller.self_metrics import ControllerMetrics
from tas.adapters.cluster.informer import Backoff
from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.adapters.cluster.leader import LeaderElector
from tas.cluster.interface import TransientClusterError
from tas.cluster.model import Node
from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.store import PolicyStore
from tas.runtime.probes import ProbeServer
from tas.types import NodeName
from tas_inmemory.cluster import WriteKind
from tests.builders import ManualClock, health_policy_document
from tests.instrumented_cluster import InstrumentedCluster
from tests.k8s_emulator import KubeEmulator
from tests.policy_controller.support import AgingMetricView, make_node
from tests.waiting import eventually


class BrokenNodesCluster(InstrumentedCluster):
    """An in-memory cluster whose node reads fail while `broken` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True

    def list_nodes(self) -> Sequence[Node]:
        if self.broken:
            raise TransientClusterError("node cache unavailable")
        return super().list_nodes()


def gate(elector: LeaderElector) -> Callable[[], bool]:
    return lambda: elector.is_leader


def demo_cluster(cluster: InstrumentedCluster | None = None) -> InstrumentedCluster:
    cluster = cluster if cluster is not None else InstrumentedCluster()
    for name in ("A", "C"):
        cluster.add_node(make_node(name))
    cluster.apply_policy(health_policy_document())
    return cluster


def build(
    cluster: InstrumentedCluster,
    *,
    leading: list[bool] | None = None,
    registry: CollectorRegistry | None = None,
    sync_period: float = 2.0,
) -> tuple[ControllerLoop, AgingMetricView, PolicyStore]:
    store = PolicyStore()
    ClusterPolicyLoader(cluster, store).sync()
    view = AgingMetricView(max_age=30)
    view.set("health_metric", {"A": 0, "C": 2})
    metrics = ControllerMetrics(registry or CollectorRegistry())
    state = leading if leading is not None else [True]
    reconciler = Reconciler(
        cluster=cluster,
        policies=store,
        metric_view=view,
        metrics=metrics,
        may_write=lambda: state[0],
    )
    loop = ControllerLoop(reconciler, metrics, sync_period=sync_period, is_leader=lambda: state[0])
    return loop, view, store


def test_a_replica_that_does_not_lead_never_reconciles() -> None:
    cluster = demo_cluster()
    registry = CollectorRegistry()
    loop, _, _ = build(cluster, leading=[False], registry=registry)
    assert loop.tick() is None
    assert cluster.total_writes() == 0
    assert "tas_controller_leader 0.0" in generate_latest(registry).decode()


def test_of_two_replicas_electing_on_one_lease_only_the_leader_writes(
    kube_emulator: KubeEmulator,
) -> None:
    api = kube_emulator
    for name in ("A", "C"):
        api.create("nodes", {"metadata": {"name": name}})
    api.create("taspolicies", health_policy_document())
    clusters = []
    loops = []
    try:
        for identity in ("replica-1", "replica-2"):
            cluster = KubernetesCluster(
                api.api_client(),
                watch_timeout=2.0,
                backoff=lambda: Backoff(initial=0.05, maximum=0.2, jitter=0),
            )
            clusters.append(cluster)
            cluster.start()
            assert cluster.wait_synced(5)
            elector = LeaderElector(
                api.api_client(),
                name="tas-policy-controller",
                namespace="default",
                identity=identity,
            )
            elector.try_acquire_or_renew()
            store = PolicyStore()
            ClusterPolicyLoader(cluster, store).sync()
            view = AgingMetricView(max_age=30)
            view.set("health_metric", {"C": 2})
            metrics = ControllerMetrics(CollectorRegistry())
            reconciler = Reconciler(
                cluster=cluster,
                policies=store,
                metric_view=view,
                metrics=metrics,
                may_write=gate(elector),
            )
            loops.append(
                ControllerLoop(reconciler, metrics, sync_period=2.0, is_leader=gate(elector))
            )
        api.clear_requests()
        reports = [loop.tick() for loop in loops]
        assert reports[0] is not None
        assert reports[0].node_writes == 1
        assert reports[1] is None
        node_patches = [r for r in api.writes() if r.path.startswith("/api/v1/nodes")]
        assert len(node_patches) == 1
    finally:
        for cluster in clusters:
            cluster.stop()


def test_a_leader_that_loses_its_lease_mid_cycle_stops_writing() -> None:
    cluster = demo_cluster()
    store = PolicyStore()
    ClusterPolicyLoader(cluster, store).sync()
    view = AgingMetricView(max_age=30)
    view.set("health_metric", {"A": 2, "C": 2})
    asked = [0]

    def leading_for_one_write() -> bool:
        asked[0] += 1
        return asked[0] == 1

    reconciler = Reconciler(
        cluster=cluster,
        policies=store,
        metric_view=view,
        metrics=ControllerMetrics(CollectorRegistry()),
        may_write=leading_for_one_write,
    )
    report = reconciler.reconcile()
    assert (report.node_writes, report.pod_writes, report.status_writes) == (1, 0, 0)
    assert cluster.write_counts()[WriteKind.NODE_LABELS] == 1


def test_a_failing_cycle_is_counted_and_the_loop_carries_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = BrokenNodesCluster()
    demo_cluster(cluster)
    registry = CollectorRegistry()
    loop, _, _ = build(cluster, registry=registry)
    assert loop.tick() is None
    assert "Reconcile cycle failed" in caplog.text
    assert 'tas_controller_cycles_total{outcome="failed"} 1.0' in generate_latest(registry).decode()
    cluster.broken = False
    report = loop.tick()
    assert report is not None
    assert report.node_writes == 1


def test_run_ticks_every_period_until_stopped() -> None:
    cluster = demo_cluster()
    loop, view, _ = build(cluster, sync_period=0.02)
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    thread.start()
    try:
        eventually(
            lambda: "demo-policy" in cluster.get_node(NodeName("C")).labels,
            what="the loop labelling C",
            poll=0.01,
        )
        view.set("health_metric", {"C": 0})
        eventually(
            lambda: "demo-policy" not in cluster.get_node(NodeName("C")).labels,
            what="the loop removing the label",
            poll=0.01,
        )
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()


def test_the_loop_is_unhealthy_when_it_has_not_ticked_for_several_periods() -> None:
    clock = ManualClock()
    cluster = demo_cluster()
    store = PolicyStore()
    metrics = ControllerMetrics(CollectorRegistry())
    reconciler = Reconciler(
        cluster=cluster, policies=store, metric_view=AgingMetricView(max_age=30), metrics=metrics
    )
    loop = ControllerLoop(reconciler, metrics, sync_period=10, clock=clock)
    assert loop.healthy()
    clock.advance(49)
    assert loop.healthy()
    clock.advance(2)
    assert not loop.healthy()
    loop.tick()
    assert loop.healthy()


def test_the_probe_server_answers_health_readiness_and_metrics() -> None:
    cluster = demo_cluster()
    registry = CollectorRegistry()
    loop, view, _ = build(cluster, registry=registry)
    view.ready = False
    server = ProbeServer(
        host="127.0.0.1", port=0, registry=registry, healthy=loop.healthy, ready=loop.ready
    )
    server.start()
    try:
        host, port = server.address
        with httpx.Client(base_url=f"http://{host}:{port}", timeout=5) as client:
            assert client.get("/healthz").status_code == 200
            assert client.get("/readyz").status_code == 503
            view.ready = True
            assert client.get("/readyz").status_code == 200
            loop.tick()
            metrics = client.get("/metrics")
            assert metrics.status_code == 200
            assert 'tas_controller_label_writes_total{kind="node"} 1.0' in metrics.text
            assert "tas_controller_reconcile_duration_seconds_count 1.0" in metrics.text
            assert client.get("/nope").status_code == 404
    finally:
        server.stop()
