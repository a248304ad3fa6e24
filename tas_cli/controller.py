"""`tas controller` (and `python -m policy_controller`): the policy controller's process.

Wires one Kubernetes API client shared by the caches (nodes and pods, plus TASPolicies unless
`--policies` names files: exactly what its ClusterRole grants), the Lease elector and the
custom-metrics source; the policy store; the metric view; the reconcile loop; and the probe
server. The loop runs beside the main thread, which only waits for the stop, so shutdown keeps
to its budget even when a cycle is blocked on a slow API server.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry

from policy_controller.loop import ControllerLoop
from policy_controller.reconciler import Reconciler
from policy_controller.self_metrics import ControllerMetrics
from tas.cluster.interface import PodFields, ResourceKind
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.runtime import process, startup
from tas.runtime.probes import ProbeServer
from tas.vocabulary import POD_VIOLATION_LABEL, POLICY_LABEL
from tas_cli import common

log = logging.getLogger("policy_controller")

#: How long shutdown may take in all, from SIGTERM to exit. Kubernetes kills a pod 30 s after
#: SIGTERM and a rollout waits for every old pod, so the less the better; the work left at
#: that point (abort the watches, release the Lease) takes milliseconds against a live API.
SHUTDOWN_SECONDS = 1.2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_metric_arguments(parser, required=True)
    common.add_policy_arguments(parser)
    common.add_kubernetes_arguments(parser)
    common.add_sync_period_argument(parser)
    parser.add_argument(
        "--status-refresh-cycles",
        type=common.count,
        default=30,
        metavar="N",
        help="rewrite an unchanged policy status every N cycles (0: only on change)",
    )
    common.add_leader_arguments(parser, lease="tas-policy-controller")
    common.add_listen_argument(
        parser,
        default=("127.0.0.1", 8081),
        help="/healthz, /readyz and /metrics (default 127.0.0.1:8081)",
    )
    common.add_log_level_argument(parser)


#: `tas controller --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Every sync period, evaluate every policy's deschedule and labeling "
    "strategies, patch only the labels that differ, and keep each policy's status current."
)


@dataclass(frozen=True)
class ControllerCommandSettings:
    """Everything `tas controller` was told, read once from its command line."""

    kube: startup.KubeSettings
    metrics: startup.MetricsSettings
    policies: Path | None
    status_refresh_cycles: int
    leader_elect: bool
    lease_name: str
    lease_namespace: str
    listen: tuple[str, int]
    log_level: str
    tas_flag_notices: tuple[str, ...] = ()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ControllerCommandSettings:
        return common.read_settings(cls, args)


def _control(settings: ControllerCommandSettings) -> int:
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
            status_refresh_cycles=settings.status_refresh_cycles,
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


run = common.component_command(ControllerCommandSettings.from_args, _control)
