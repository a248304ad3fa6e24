"""Where LowNodeUtilization's `metricsUtilization` reads actual usage: the metrics server
(through the cluster: metrics.k8s.io NodeMetrics and PodMetrics) and Prometheus instant queries
(through the project's Prometheus adapter, `tas.metrics`, with the descheduler's ServiceAccount
token when it runs in a cluster). And where LoadAware learns which pod is hot: per-pod usage
from Prometheus's container series (`tas.adapters.metrics.pod_usage`, `pod_usage_from`).

Each source is read at most once per cycle, and only when a plugin asks.

Errors:
    descheduler.framework.UsageError   a source could not answer
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from descheduler import framework
from descheduler.framework import PodUsage, PodUsageSource, UnreadPodUsage, UsageError
from descheduler.state import CycleState, pod_key
from tas.adapters.metrics.prometheus import (
    CredentialOverPlainHttpError,
    PrometheusClient,
    node_labels,
    node_of,
    open_prometheus,
    plain_http_credential,
)
from tas.cluster.interface import Cluster, ClusterError
from tas.fit import node_share, request_share
from tas.metrics.config import MetricsConfig
from tas.metrics.errors import MetricFetchError, MetricSourceError
from tas.metrics.source import ExplainedPodUsage, PodUsageFeed
from tas.types import NodeName, PodKey

T = TypeVar("T")

log = logging.getLogger(__name__)

#: Where Kubernetes mounts a pod's ServiceAccount token.
SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


class PrometheusQueries:
    """Instant queries against one Prometheus, each sample's node from its `instance` label
    (`node`, `kubernetes_node` when it is missing), through the project's one Prometheus
    client (`tas.adapters.metrics.prometheus.open_prometheus`)."""

    def __init__(
        self,
        url: str,
        *,
        transport: Any = None,
        token_file: Path | None = None,
        allow_plain_http: bool = False,
    ) -> None:
        """`transport` an httpx transport for the client (tests); `token_file` a bearer token
        read on every query, when the file exists (over plain HTTP only with
        `allow_plain_http`)."""
        config = MetricsConfig(
            bearer_token_file=token_file
            if token_file is not None and token_file.is_file()
            else None,
        )
        self.url = url
        self._prometheus: PrometheusClient | None = None
        self._error: str | None = None
        self._labels = node_labels("instance")
        try:
            self._prometheus = open_prometheus(
                url, config=config, transport=transport, allow_plain_http=allow_plain_http
            )
        except MetricSourceError as error:
            self._error = str(error)

    def vector(self, query: str) -> dict[NodeName, float]:
        if self._prometheus is None:
            raise UsageError(f"Prometheus {self.url}: {self._error}")
        try:
            answer = self._prometheus.vector(query)
        except MetricFetchError as error:
            raise UsageError(f"Prometheus {self.url}: {error}") from error
        values: dict[NodeName, float] = {}
        for series in answer.series:
            node = node_of(series.labels, self._labels)
            if node is not None and node not in values:  # two for one node: the first counts
                values[node] = series.value
        return {node: value for node, value in values.items() if math.isfinite(value)}

    def close(self) -> None:
        if self._prometheus is not None:
            self._prometheus.close()


class TokenOverPlainHttpError(CredentialOverPlainHttpError):
    """The Prometheus URL is plain HTTP, and the ServiceAccount token would go with each query."""


def service_account_prometheus(
    url: str, *, allow_plain_http: bool = False, token_file: Path = SERVICE_ACCOUNT_TOKEN
) -> PrometheusQueries:
    """The descheduler's Prometheus as it runs in a cluster: read with its ServiceAccount
    token, as upstream does without `authToken` (the default `PrometheusFactory`).

    Never over plain HTTP unless `allow_plain_http`: the token authenticates as the
    descheduler, which may evict pods, to whoever sees it on the way. Without a token (outside
    a cluster) there is nothing to send, and plain HTTP is fine."""
    credential = "the descheduler's ServiceAccount token" if token_file.is_file() else None
    refused = plain_http_credential(url, credential=credential)
    if refused is not None and not allow_plain_http:
        raise TokenOverPlainHttpError(
            f"{refused}: anyone on the way could act as the descheduler with it. Give an "
            "https:// URL in the policy's metricsProviders, or --allow-token-over-http to send "
            "it anyway"
        )
    return PrometheusQueries(url, token_file=token_file, allow_plain_http=allow_plain_http)


class CycleCachedPrometheus:
    """A `descheduler.framework.PrometheusClient` that asks each query at most once a cycle."""

    def __init__(self, client: framework.PrometheusClient) -> None:
        self._client = client
        self._answers: dict[str, Mapping[NodeName, float]] = {}

    def new_cycle(self) -> None:
        self._answers = {}

    def vector(self, query: str) -> Mapping[NodeName, float]:
        if query not in self._answers:
            self._answers[query] = self._client.vector(query)
        return self._answers[query]


class ClusterUsage:
    """`descheduler.framework.UsageSources` over the cluster's metrics API (metrics server),
    and per-pod usage from `pod_usage`, the source the descheduler was given (None: none; the
    container series as production reads them, `pod_usage_from`)."""

    def __init__(self, cluster: Cluster, *, pod_usage: PodUsageSource | None = None) -> None:
        self._cluster = cluster
        self._pod_usage = pod_usage
        self._state: CycleState | None = None
        self._nodes: Mapping[NodeName, Mapping[str, float]] | None = None
        self._pods: Mapping[PodKey, Mapping[str, float]] | None = None

    def new_cycle(self, state: CycleState) -> None:
        """Forget what was read: the next questions read the metrics server again, and per-pod
        usage is for `state`, the new cycle's snapshot."""
        self._nodes, self._pods = None, None
        self._state = state

    def pod_usage(self) -> PodUsage | None:
        """Read afresh on each call, as its source decides (a plugin asks once a run)."""
        if self._pod_usage is None or self._state is None:
            return None
        return self._pod_usage(self._state)

    def node_metrics(self) -> Mapping[NodeName, Mapping[str, float]]:
        if self._nodes is None:
            self._nodes = _read("node", self._cluster.list_node_metrics)
        return self._nodes

    def pod_metrics(self) -> Mapping[PodKey, Mapping[str, float]]:
        if self._pods is None:
            self._pods = _read("pod", self._cluster.list_pod_metrics)
        return self._pods


def _read(kind: str, call: Callable[[], T]) -> T:
    """One read of the metrics server; its failure is the plugin's `UsageError`."""
    try:
        return call()
    except ClusterError as error:
        raise UsageError(f"cannot read {kind} metrics: {error}") from error


#: LoadAware's CPU signals (and Volcano's `cpu`): moving a pod takes its CPU share off each.
#: Container pressure is not additive into node pressure, so the CPU share stands for it too.
CPU_SIGNALS = ("cpu", "cpu_utilization", "cpu_pressure", "cpu_combined")
#: Memory signals: no per-pod measure here, so the pod's requests share, as LoadAware estimates.
MEMORY_SIGNALS = ("memory", "memory_utilization", "memory_pressure")


def pod_usage_from(source: PodUsageFeed) -> PodUsageSource:
    """A `descheduler.framework.PodUsageSource`: each pod's measured CPU as a share (0..100) of
    its node's allocatable CPU (`tas.fit.node_share`), its memory signals its requests' share
    (`tas.fit.request_share`). Pods without a fresh value are left out (LoadAware then moves
    at most one pod per node per cycle); a failing source gives an empty `UnreadPodUsage`
    saying why, logged here."""

    def read(state: CycleState) -> PodUsage:
        try:
            usage = source.fetch()
        except MetricFetchError as error:
            log.warning("Per-pod usage could not be read this cycle: %s", error)
            return UnreadPodUsage(str(error))
        shares: dict[PodKey, dict[str, float]] = {}
        unmeasured: list[PodKey] = []
        for pod in state.pods:
            node = state.nodes.get(pod.node_name) if pod.node_name else None
            found = usage.get((pod.namespace, pod.name))
            if node is not None and (found is None or "cpu" not in found):
                unmeasured.append(pod_key(pod))
            if node is None or found is None or "cpu" not in found:
                continue
            cpu = node_share(found["cpu"], node, "cpu")
            if cpu is None:
                continue
            memory = request_share(pod, node, "memory")
            entry = dict.fromkeys(CPU_SIGNALS, min(100.0, cpu))
            entry.update(dict.fromkeys(MEMORY_SIGNALS, 0.0 if memory is None else memory))
            shares[pod_key(pod)] = entry
        if unmeasured and log.isEnabledFor(logging.DEBUG):
            _tell_unmeasured(source, unmeasured)
        return shares

    return read


#: Pods told by name each cycle when they have no per-pod usage; the rest are counted.
_TOLD_PODS = 10


def _tell_unmeasured(source: PodUsageFeed, pods: list[PodKey]) -> None:
    """One debug line per pod without per-pod CPU usage (the first few), saying why where
    the source can (`ExplainedPodUsage`: which query, what it answered)."""
    for namespace, name in pods[:_TOLD_PODS]:
        why = (
            source.why_missing((namespace, name))
            if isinstance(source, ExplainedPodUsage)
            else f"{type(source).__name__} has no value for it"
        )
        log.debug("LoadAware has no CPU usage for pod %s/%s: %s", namespace, name, why)
    if len(pods) > _TOLD_PODS:
        log.debug("LoadAware has no CPU usage for %d more pods", len(pods) - _TOLD_PODS)
