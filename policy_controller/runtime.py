"""The policy controller's process: everything `tas controller` runs once its flags are read.

Wires one Kubernetes API client shared by the caches (nodes and pods, plus TASPolicies unless
`--policies` names files: exactly what its ClusterRole grants), the Lease elector and the
custom-metrics source; the policy store; the metric view; the reconcile loop; and the probe
server. The loop runs beside the main thread, which only waits for the stop, so shutdown keeps
to its budget even when a cycle is blocked on a slow API server.

The command (`tas_cli.controller`) parses the flags and calls `run_controller`; it reads them
through a Protocol (`ControllerProcessSettings`), so this module imports nothing of the command
line. A problem the operator can fix is a `tas.runtime.process.SetupError`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from prometheus_client import CollectorRegistry

from policy_controller.loop import ControllerLoop
from policy_controller.reconciler import Reconciler
from policy_controller.self_metrics import ControllerMetrics
from policy_controller.settings import ControllerSettings
from tas.cluster.interface import PodFields, ResourceKind
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.runtime import process, startup
from tas.runtime.probes import ProbeServer
from tas.vocabulary import POD_VIOLATION_LABEL, POLICY_LABEL

log = logging.getLogger("policy_controller")

#: How long shutdown may take in all, from SIGTERM to exit. Kubernetes kills a pod 30 s after
#: SIGTERM and a rollout waits for every old pod, so the less the better; the work left at
#: that point (abort the watches, release the Lease) takes milliseconds against a live API.
SHUTDOWN_SECONDS = 1.2


class ControllerProcessSettings(startup.ComponentSettings, startup.LeaderSettings, Protocol):
    """What the process reads of `tas controller`'s settings
    (`tas_cli.controller.ControllerCommandSettings`)."""

    @property
    def controller(self) -> ControllerSettings: ...
    @property
    def listen(self) -> tuple[str, int]: ...


def run_controller(settings: ControllerProcessSettings) -> int:
    """Reconcile every sync period until SIGTERM/SIGINT (exit status 0)."""
    registry = CollectorRegistry()
    api_client = startup.kube_api_client(settings.kube)
    # Only the caches the controller reads, which is what its ClusterRole grants: never
    # PodDisruptionBudgets, and no TASPolicies when they come from files (no CRD needed then).
    caches = [ResourceKind.NODE, ResourceKind.POD]
    if settings.policies is None:
        caches.append(ResourceKind.POLICY)
    # Only the pods it labels: those linked to a policy, and those it labelled before (a pod
    # whose link was removed still carries `violate`, which must go). Most pods are neither.
    cluster = startup.open_cluster(
        api_client,
        watched=caches,
        pod_label_selectors=(POLICY_LABEL, POD_VIOLATION_LABEL),
        pod_fields=PodFields.SUMMARY,  # of each, only what its labels are decided from
    )
    # The Node cache lends the view the nodes' addresses (an `instance` of `IP:port`).
    view = startup.open_view(
        settings.metrics,
        kube=settings.kube,
        registry=registry,
        api_client=api_client,
        nodes=cluster,
    )
    store = PolicyStore()
    want_policy_metrics(store, view)

    with process.Lifetime("Policy controller", shutdown_seconds=SHUTDOWN_SECONDS) as life:
        life.catch_signals()
        is_leader: Callable[[], bool] = lambda: True  # noqa: E731
        if settings.leader_elect:
            is_leader = process.elect_leader(
                api_client, name=settings.lease_name, namespace=settings.lease_namespace, life=life
            )

        metrics = ControllerMetrics(registry)
        reconciler = Reconciler(
            cluster=cluster,
            policies=store,
            metric_view=view,
            metrics=metrics,
            settings=settings.controller,
            # A stopping controller starts no new write: its last cycle ends at once.
            may_write=lambda: not life.stop.is_set() and is_leader(),
            # Half-filled caches would look like missing nodes, pods or policies.
            cluster_ready=lambda: cluster.wait_synced(0),
            pods=cluster.list_pod_summaries,
        )
        sync_period = settings.metrics.sync_period
        loop = ControllerLoop(reconciler, metrics, sync_period=sync_period, is_leader=is_leader)
        server = process.bind(
            settings.listen,
            lambda host, port: ProbeServer(
                host=host, port=port, registry=registry, healthy=loop.healthy, ready=loop.ready
            ),
        )
        # Closed last registered first: the probe server, the watches, then the view (a
        # fetch still running has nothing to keep).
        life.on_close(lambda seconds: view.stop(timeout=min(0.2, seconds)))
        life.on_close(cluster.stop)
        life.on_close(server.stop)
        cluster.start()
        view.start()
        server.start()
        log.info("Policy controller starting; probes on http://%s:%d", *server.address)
        startup.follow_policies(
            settings.policies, store, life, cluster=cluster, poll_seconds=sync_period * 5
        )
        life.in_background(loop.run, life.stop, name="loop")
        life.stop.wait()
    return 0
