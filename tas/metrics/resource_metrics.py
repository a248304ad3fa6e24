"""Per-pod usage from the resource metrics API: metrics.k8s.io PodMetrics, served by metrics-server.

What `kubectl top pods` reads, and what upstream descheduler's `metricsServer` reads: one LIST
of every pod's CPU (cores, averaged over metrics-server's window) and memory (working set,
bytes), summed over its containers. It replaces reading each kubelet's `/metrics/resource`
through the API server's node proxy, which needed RBAC `get` on `nodes/proxy`: a grant that
reaches the whole kubelet API of every node (its exec is a WebSocket GET), and one request per
node per period where this is one request per period.

metrics-server scrapes the kubelets every 15 s by default (`--metric-resolution`), so reading
more often gets nothing new: `MIN_PERIOD`.

Errors:
    tas.metrics.errors.MetricFetchError   the API could not be read (no metrics-server, no RBAC)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from tas.metrics.errors import MetricFetchError
from tas.types import PodKey

log = logging.getLogger(__name__)

#: metrics-server's default resolution: the age of what it serves is never less.
MIN_PERIOD = 15.0

#: Reads every PodMetrics (`tas.adapters.cluster.kubernetes.KubernetesCluster.list_pod_metrics`);
#: raises
#: what the cluster raises when it cannot.
ListPodMetrics = Callable[[], Mapping[PodKey, Mapping[str, float]]]


class ResourceMetricsPodUsage:
    """Every pod's usage (`cpu` in cores, `memory` in bytes), one LIST per `fetch`."""

    def __init__(
        self, list_pod_metrics: ListPodMetrics, *, failure: type[Exception] = Exception
    ) -> None:
        """`failure`: what `list_pod_metrics` raises when the API cannot answer (the cluster's
        `ClusterError`); it becomes `MetricFetchError`, logged once as it starts and once as it
        ends, not at every read."""
        self._list = list_pod_metrics
        self._failure = failure
        self._failing = False

    def fetch(self) -> dict[PodKey, dict[str, float]]:
        try:
            found = self._list()
        except self._failure as error:
            if not self._failing:
                log.warning(
                    "No pod usage from the resource metrics API (metrics.k8s.io pods): %s; "
                    "is metrics-server running?",
                    error,
                )
            self._failing = True
            raise MetricFetchError(f"metrics.k8s.io pods: {error}") from error
        if self._failing:
            log.info("Pod usage from the resource metrics API is back")
            self._failing = False
        return {
            (str(namespace), name): {
                r: value for r, value in usage.items() if r in ("cpu", "memory")
            }
            for (namespace, name), usage in found.items()
        }

    def close(self) -> None:
        """Nothing to close: the reads go through the process's cluster connection."""
