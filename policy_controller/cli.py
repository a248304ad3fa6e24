"""The controller's command line, shared by `tas controller` and `python -m policy_controller`.

`add_arguments` fills a parser; `run` wires the parts: one Kubernetes API client shared by the
cluster caches, the Lease elector and the custom-metrics source; the policy store fed by the
policy files or by the cluster's TASPolicy objects (the same store either way); the metric view
refreshed in the background; the loop; and the probe server. Kubernetes and the metric sources
are imported lazily, so `--help` and argument errors stay instant.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from policy_controller.http import ProbeServer
from policy_controller.loop import ControllerLoop
from policy_controller.metrics import ControllerMetrics
from policy_controller.reconciler import Reconciler
from tas.cli_args import add_metric_source_arguments, parse_duration
from tas.cluster.interface import ResourceKind
from tas.policies.files import PolicyFileWatcher
from tas.policies.store import PolicyStore

if TYPE_CHECKING:
    from tas.cluster.kubernetes import KubernetesCluster
    from tas.metrics.refreshing import RefreshingMetricView

log = logging.getLogger(__name__)

CACHE_SYNC_WARN_SECONDS = 60
#: How long shutdown may take in all, from SIGTERM to exit. Kubernetes kills a pod 30 s after
#: SIGTERM and a rollout waits for every old pod, so the less the better; the work left at
#: that point (abort the watches, release the Lease) takes milliseconds against a live API.
SHUTDOWN_SECONDS = 1.2


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT, e.g. 127.0.0.1:8081")
    return host.strip("[]"), int(port)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_metric_source_arguments(parser, required=True)
    parser.add_argument(
        "--policies",
        type=Path,
        metavar="PATH",
        help="read policies from a file or directory (reloaded on change) instead of the "
        "cluster's TASPolicy objects",
    )
    parser.add_argument("--kubeconfig", type=Path, metavar="FILE", help="default: in-cluster")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context")
    parser.add_argument("--sync-period", type=parse_duration, default=2.0, metavar="DURATION")
    parser.add_argument(
        "--metric-max-age",
        type=parse_duration,
        metavar="DURATION",
        help="older metric values count as missing (default 5 sync periods, at least 30s)",
    )
    parser.add_argument(
        "--status-refresh-cycles",
        type=_count,
        default=30,
        metavar="N",
        help="rewrite an unchanged policy status every N cycles (0: only on change)",
    )
    parser.add_argument(
        "--leader-elect", action="store_true", help="run only while holding a Lease"
    )
    parser.add_argument("--lease-name", default="tas-policy-controller", metavar="NAME")
    parser.add_argument(
        "--lease-namespace",
        default=os.environ.get("POD_NAMESPACE", "default"),
        metavar="NAMESPACE",
    )
    parser.add_argument(
        "--listen",
        type=parse_listen,
        default=("127.0.0.1", 8081),
        metavar="HOST:PORT",
        help="/healthz, /readyz and /metrics (default 127.0.0.1:8081)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="policy_controller",
        description="Label nodes and pods and report policy status from node telemetry.",
    )
    add_arguments(parser)
    return parser


def _api_client(kubeconfig: Path | None, context: str | None) -> Any:
    from kubernetes import client, config

    configuration = client.Configuration()
    if kubeconfig is not None:
        config.load_kube_config(
            config_file=str(kubeconfig), context=context, client_configuration=configuration
        )  # type: ignore[no-untyped-call]
    else:
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException:
            config.load_kube_config(context=context, client_configuration=configuration)  # type: ignore[no-untyped-call]
    return client.ApiClient(configuration)


def _load_cluster_policies(
    cluster: KubernetesCluster, store: PolicyStore, stop: threading.Event, sync_period: float
) -> None:
    from tas.policies.cluster import ClusterPolicyLoader

    # Load policies only from a synced cache: an empty first read would look like "every
    # policy was deleted" and strip their labels. The loop keeps ticking (and /healthz green)
    # meanwhile; it does not reconcile before the store has loaded.
    started, warnings = time.monotonic(), 0
    while not stop.is_set() and not cluster.wait_synced(0.2):  # short waits: stop is prompt
        waited = time.monotonic() - started
        if waited >= (warnings + 1) * CACHE_SYNC_WARN_SECONDS:
            warnings += 1
            log.warning("Cluster caches not synced after %d s; still waiting", waited)
    if stop.is_set():
        return
    loader = ClusterPolicyLoader(cluster, store)
    loader.attach(cluster)
    # Polling as well, as a safety net for a missed notification.
    loader.run(stop, sync_period * 5)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from tas.cluster.kubernetes import KubernetesCluster
    from tas.metrics import MetricSourceError, open_metric_view

    registry = CollectorRegistry()
    stop = threading.Event()
    try:
        api_client = _api_client(args.kubeconfig, args.context)
    except Exception as error:  # the kubernetes config loaders raise several unrelated types
        print(f"controller: cannot load Kubernetes configuration: {error}", file=sys.stderr)
        return 2
    try:
        view = open_metric_view(
            args.metrics,
            sync_period=args.sync_period,
            max_age=args.metric_max_age,
            config_file=args.metrics_config,
            registry=registry,
            kube_api_client=api_client,
        )
    except MetricSourceError as error:
        print(f"controller: {error}", file=sys.stderr)
        return 2

    # Only the caches the controller reads, which is what its ClusterRole grants: never
    # PodDisruptionBudgets, and no TASPolicies when they come from files (no CRD needed then).
    caches = [ResourceKind.NODE, ResourceKind.POD]
    if args.policies is None:
        caches.append(ResourceKind.POLICY)
    cluster = KubernetesCluster(api_client, watched=caches)
    background: list[threading.Thread] = []

    def in_background(target: Callable[..., None], *args: object, name: str) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        background.append(thread)

    is_leader: Callable[[], bool] = lambda: True  # noqa: E731
    if args.leader_elect:
        from tas.cluster.leader import LeaderElector

        identity = os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
        elector = LeaderElector(
            api_client, name=args.lease_name, namespace=args.lease_namespace, identity=identity
        )
        # Joined first on exit: the elector releases the Lease when it stops, so a standby
        # takes over at its next try instead of waiting the lease duration out.
        in_background(elector.run, stop, name="leader")
        is_leader = lambda: elector.is_leader  # noqa: E731

    store = PolicyStore()
    metrics = ControllerMetrics(registry)
    reconciler = Reconciler(
        cluster=cluster,
        policies=store,
        metric_view=view,
        metrics=metrics,
        status_refresh_cycles=args.status_refresh_cycles,
        # A stopping controller starts no new write: its last cycle ends at once.
        may_write=lambda: not stop.is_set() and is_leader(),
        # Half-filled caches would look like missing nodes, pods or policies.
        cluster_ready=lambda: cluster.wait_synced(0),
    )
    loop = ControllerLoop(reconciler, metrics, sync_period=args.sync_period, is_leader=is_leader)
    host, port = args.listen
    server = ProbeServer(
        host=host, port=port, registry=registry, healthy=loop.healthy, ready=loop.ready
    )

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    cluster.start()
    view.start()
    server.start()
    log.info("Policy controller starting; probes on http://%s:%d", *server.address)
    try:
        if args.policies is not None:
            in_background(PolicyFileWatcher(args.policies, store).run, stop, name="policies")
        else:
            in_background(
                _load_cluster_policies, cluster, store, stop, args.sync_period, name="policies"
            )
        # The loop runs beside the main thread, which only waits for the stop: so shutdown
        # keeps to its budget even when a cycle is blocked on a slow API server.
        in_background(loop.run, stop, name="loop")
        stop.wait()
    finally:
        stop.set()
        _shut_down(cluster, server, view, background)
    return 0


def _shut_down(
    cluster: KubernetesCluster,
    server: ProbeServer,
    view: RefreshingMetricView,
    threads: Sequence[threading.Thread],
) -> None:
    """Stop everything within `SHUTDOWN_SECONDS`; `stop` is already set.

    Every thread is a daemon, so one still blocked on the network when the budget runs out
    is simply left behind: an in-flight write is then lost as it would be to SIGKILL.
    """
    deadline = time.monotonic() + SHUTDOWN_SECONDS

    def remaining() -> float:
        return max(0.0, deadline - time.monotonic())

    # The leader first: it has been releasing the Lease since the stop, and that must be
    # done before exit. Then the rest, in whatever time is left.
    for thread in threads:
        thread.join(remaining())
        if thread.is_alive():
            log.warning("Shutdown: thread %s did not finish in time", thread.name)
    cluster.stop(timeout=remaining())  # aborts the watch streams
    server.stop(timeout=remaining())
    view.stop(timeout=min(0.2, remaining()))  # a fetch still running has nothing to keep
    log.info("Policy controller stopped")


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))
