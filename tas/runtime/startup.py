"""What a component opens at start, from its settings: the same parts, opened one way.

- **Kubernetes**: one `ApiClient` per process, loaded in one order
(`tas.adapters.cluster.kubeconfig`),
  and caches of only the resources the component reads (its RBAC grants nothing more);
  `wait_synced` waits for them in short waits, so a stop while they fill is prompt;
- **metrics**: the view `--metrics` names (`open_view`), and per-pod usage from the same
  Prometheus (`open_pod_usage`) or from metrics-server (`open_resource_metrics_pod_usage`);
- **policies**: always a `PolicyStore`, fed by a file watcher (`--policies`) or by the
  cluster's TASPolicy objects once the caches have synced (an empty first read would look like
  "every policy was deleted"): `follow_policies`.

`KubeSettings` and `MetricsSettings` are the shared settings pieces these take (the command
line reads them from its flags: `tas_cli.common.read_settings`). A problem the user can fix is
a `tas.runtime.process.SetupError`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from prometheus_client import CollectorRegistry

from tas.policies.files import PolicyFileWatcher, into_store
from tas.policies.store import PolicyStore
from tas.runtime.process import Lifetime, SetupError

if TYPE_CHECKING:
    from tas.adapters.cluster.kubernetes import KubernetesCluster
    from tas.adapters.metrics.pod_usage import PrometheusPodUsage
    from tas.cluster.interface import ObservableCluster, ResourceKind
    from tas.metrics.refreshing import RefreshingMetricView
    from tas.metrics.resource_metrics import ResourceMetricsPodUsage

log = logging.getLogger("tas")

#: How long startup waits between checks of the stop event while caches fill.
_POLL_SECONDS = 0.2
CACHE_SYNC_WARN_SECONDS = 60
FILE_POLL_SECONDS = 1.0


@dataclass(frozen=True)
class KubeSettings:
    """`--kubeconfig`, `--context`: where the process's one Kubernetes connection goes."""

    kubeconfig: Path | None = None
    context: str | None = None


@dataclass(frozen=True)
class MetricsSettings:
    """`--metrics`, `--metrics-config`, `--metric-max-age` and `--sync-period`."""

    #: The `--metrics` spec; None when the command runs without one (the descheduler).
    source: str | None
    config_file: Path | None = None
    max_age: float | None = None
    sync_period: float = 2.0

    @property
    def prometheus_url(self) -> str | None:
        """The URL of `--metrics prometheus:URL`; None for any other source."""
        source = self.source or ""
        return source.removeprefix("prometheus:") if source.startswith("prometheus:") else None


class ComponentSettings(Protocol):
    """What every component's process reads of its command's settings: where Kubernetes is,
    where the metrics are, and the policy files (None: the cluster's TASPolicies)."""

    @property
    def kube(self) -> KubeSettings: ...
    @property
    def metrics(self) -> MetricsSettings: ...
    @property
    def policies(self) -> Path | None: ...


class LeaderSettings(Protocol):
    """What a component that can run as two replicas reads of its settings: whether to elect a
    leader (`--leader-elect`) and the Lease it holds (`--lease-name`, `--lease-namespace`)."""

    @property
    def leader_elect(self) -> bool: ...
    @property
    def lease_name(self) -> str: ...
    @property
    def lease_namespace(self) -> str: ...


def kube_api_client(kube: KubeSettings) -> Any:
    """The process's one Kubernetes connection (`--kubeconfig`, `--context`)."""
    from tas.adapters.cluster.kubeconfig import KubeConfigError, load_api_client

    try:
        return load_api_client(kube.kubeconfig, context=kube.context)
    except KubeConfigError as error:
        raise SetupError(str(error)) from error


def open_cluster(
    api_client: Any, *, watched: Iterable[ResourceKind], **options: Any
) -> KubernetesCluster:
    """Caches of `watched` only: a new cache must come with its RBAC grant. `options` go to
    `KubernetesCluster` (which pods, which of their fields). The caches are the process's
    heap: the collector is kept off them (`tas.adapters.cluster.heap`)."""
    from tas.adapters.cluster.kubernetes import KubernetesCluster

    return KubernetesCluster(api_client, watched=list(watched), freeze_heap=True, **options)


def open_view(
    metrics: MetricsSettings,
    *,
    kube: KubeSettings,
    registry: CollectorRegistry,
    api_client: Any = None,
    nodes: KubernetesCluster | None = None,
) -> RefreshingMetricView:
    """The metric view `--metrics` names (not started). `nodes`, a cluster that watches
    Nodes, lends their addresses: a Prometheus series whose `instance` is a node's `IP:port`
    (kube-prometheus-stack's) then counts for that node (`tas.metrics.node_identity`)."""
    from tas.adapters.metrics import open_metric_view
    from tas.metrics import MetricSourceError

    spec = metrics.source or ""
    if api_client is None and spec.strip() == "custom-metrics":
        # The custom metrics API is read with the process's own connection (`--kubeconfig`,
        # `--context`), not whatever kubeconfig the environment would find.
        api_client = kube_api_client(kube)
    try:
        return open_metric_view(
            spec,
            sync_period=metrics.sync_period,
            max_age=metrics.max_age,
            config_file=metrics.config_file,
            registry=registry,
            kube_api_client=api_client,
            node_addresses=nodes,
        )
    except MetricSourceError as error:
        raise SetupError(f"--metrics {metrics.source!r}: {error}") from error


def open_pod_usage(metrics: MetricsSettings) -> PrometheusPodUsage | None:
    """Per-pod usage from the Prometheus `--metrics prometheus:URL` names, reached as the
    metric view reaches it (the metrics config's CA, timeout, token and rate window), or
    None with any other source."""
    url = metrics.prometheus_url
    if url is None:
        return None
    from tas.adapters.metrics.pod_usage import open_pod_usage as open_source
    from tas.metrics import MetricSourceError
    from tas.metrics.config import load_metrics_config
    from tas.metrics.refreshing import default_max_age

    try:
        return open_source(
            url,
            config=load_metrics_config(metrics.config_file),
            max_age=metrics.max_age or default_max_age(metrics.sync_period),
        )
    except MetricSourceError as error:
        raise SetupError(f"--metrics-config: {error}") from error


def open_resource_metrics_pod_usage(cluster: KubernetesCluster) -> ResourceMetricsPodUsage:
    """Per-pod usage from the resource metrics API (metrics.k8s.io PodMetrics, metrics-server;
    RBAC `list` of `pods` in `metrics.k8s.io`), for a process whose metrics do not come from
    Prometheus."""
    from tas.cluster.interface import ClusterError
    from tas.metrics.resource_metrics import ResourceMetricsPodUsage

    return ResourceMetricsPodUsage(cluster.list_pod_metrics, failure=ClusterError)


def resource_metrics_period(metrics: MetricsSettings) -> float:
    """How often to read metrics-server: every sync period, but never faster than it scrapes."""
    from tas.metrics.resource_metrics import MIN_PERIOD

    return max(metrics.sync_period, MIN_PERIOD)


@runtime_checkable
class Syncing(Protocol):
    """A cluster whose caches fill after start (the Kubernetes one; the in-memory one is full)."""

    def wait_synced(self, timeout: float) -> bool: ...

    def still_listing(self) -> list[str]: ...


def wait_for_caches(
    cluster: Syncing,
    stop: threading.Event,
    *,
    progress: Callable[[], None] | None = None,
    warn_seconds: float | None = None,
) -> bool:
    """Wait until every cache has listed once, however long the API server takes; False when
    `stop` came first. Every component waits so: never exiting because the API server is slow
    (a crash loop exactly when it is busy), not ready meanwhile (its caller says so), and a
    warning every `warn_seconds` (`CACHE_SYNC_WARN_SECONDS`) naming the caches still listing.
    `progress` is called at each short wait (the descheduler holds its liveness with it:
    listing is progress).

    In short waits, so a SIGTERM while the caches fill is a prompt, clean stop.
    """
    every = CACHE_SYNC_WARN_SECONDS if warn_seconds is None else warn_seconds
    started, warned = time.monotonic(), 0
    while not cluster.wait_synced(_POLL_SECONDS):
        if stop.is_set():
            return False
        if progress is not None:
            progress()
        waited = time.monotonic() - started
        if waited >= (warned + 1) * every:
            warned += 1
            log.warning(
                "Cluster caches not filled after %d s; still listing: %s. Not ready until "
                "they are; waiting",
                waited,
                ", ".join(cluster.still_listing()) or "none",
            )
    if warned:
        log.info("Cluster caches filled after %d s", time.monotonic() - started)
    return not stop.is_set()


def follow_policies(
    policies: Path | None,
    store: PolicyStore,
    life: Lifetime,
    *,
    cluster: ObservableCluster | None,
    poll_seconds: float,
) -> str:
    """Keep `store` equal to `--policies` or to the cluster's TASPolicy objects.

    Files are read once now, then checked every second (a stat, cheap); the cluster's
    objects are loaded once its caches have synced, then followed through change
    notifications, with polling every `poll_seconds` as a safety net for a missed one.
    Returns where the policies come from, for the startup log line.
    """
    if policies is not None:
        watcher = PolicyFileWatcher(policies, into_store(store))
        watcher.poll()
        life.in_background(watcher.run, life.stop, FILE_POLL_SECONDS, name="policy-files")
        if isinstance(cluster, Syncing):
            # Policies from files, caches still to fill (Nodes, Pods): waited for and named
            # the same way, though nothing here needs them to read the files.
            life.in_background(wait_for_caches, cluster, life.stop, name="cache-wait")
        return str(policies)
    if cluster is None:
        raise SetupError("no --policies and no cluster to read TASPolicy objects from")
    from tas.policies.cluster import ClusterPolicyLoader

    def follow() -> None:
        if isinstance(cluster, Syncing) and not wait_for_caches(cluster, life.stop):
            return
        loader = ClusterPolicyLoader(cluster, store)
        loader.attach(cluster)
        loader.run(life.stop, poll_seconds)

    life.in_background(follow, name="policy-cluster")
    return "the cluster's TASPolicy objects"
