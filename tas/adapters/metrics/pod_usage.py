"""Per-pod usage from Prometheus: which pod is hot, so an eviction relieves the node it leaves.

The kubelet's cAdvisor endpoint exports `container_cpu_usage_seconds_total` for every
container, and from Kubernetes 1.33 (KubeletPSI, cgroup v2) `container_pressure_cpu_waiting_
seconds_total` and `container_pressure_memory_waiting_seconds_total`, all labelled `namespace`,
`pod` and `container`. Per pod and resource this source asks for the rate over the window, summed
over the pod's containers (`container!=""` leaves out the pod-level cgroup series), and for the
newest sample time of those series (`timestamp()`), so the staleness rules are the nodes':

- a value whose newest sample is older than `max_age` counts as missing;
- a failed query keeps the last good values until they go stale;
- a pod absent from a successful answer is gone.

Pressure series are optional: a cluster that does not export them just has none.

Queries go through the shared `tas.adapters.metrics.prometheus.PrometheusClient`, so this source
trusts
the metrics config's `ca_file`, keeps its `timeout_seconds` and reads its `bearer_token_file`
on every query, as the metric view does.

When the CPU usage query answers no series at all, Prometheus scrapes no kubelet's cAdvisor
endpoint (`/metrics/cadvisor`; `deploy/metrics-pipeline` has no such job): a warning says so
once, and once more when series arrive. Why one pod has no value (no series for it, a stale
one, a failing query) is `why_missing`, which names the query: the descheduler logs it at debug
level for each pod it finds without one.

Errors: `tas.metrics.errors.MetricFetchError` when the CPU usage query fails and no fresh value
is left (the caller decides whether to go on without per-pod usage).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping

import httpx

from tas.adapters.metrics.prometheus import PrometheusClient, open_prometheus
from tas.clock import SYSTEM_CLOCK, Clock
from tas.metrics.config import MetricsConfig
from tas.metrics.errors import FetchFailures, MetricFetchError
from tas.metrics.source import Sample
from tas.types import PodKey

log = logging.getLogger(__name__)

#: Resource name -> the counter whose rate it is (cores, or a 0..1 share of time waiting).
SERIES: Mapping[str, str] = {
    "cpu": "container_cpu_usage_seconds_total",
    "cpu_pressure": "container_pressure_cpu_waiting_seconds_total",
    "memory_pressure": "container_pressure_memory_waiting_seconds_total",
}
#: The resources a cluster must export for the source to be of use.
REQUIRED = frozenset({"cpu"})


def usage_query(series: str, rate_window: str) -> str:
    return f'sum by (namespace, pod) (rate({series}{{container!="",pod!=""}}[{rate_window}]))'


def time_query(series: str) -> str:
    return f'max by (namespace, pod) (timestamp({series}{{container!="",pod!=""}}))'


class PrometheusPodUsage:
    """Per pod: CPU cores and, where exported, CPU and memory pressure (0..1), fresh only."""

    kind = "prometheus"

    def __init__(
        self,
        prometheus: PrometheusClient,
        *,
        max_age: float,
        rate_window: str = "1m",
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.prometheus = prometheus
        self._max_age = max_age
        self._rate_window = rate_window
        self._clock = clock
        self._last: dict[str, dict[PodKey, Sample]] = {}
        #: Whether the last CPU answer had no series at all (told once as it starts).
        self._no_cpu_series = False
        self._failures = FetchFailures(
            log,
            failed="Per-pod %s usage: %s (keeping the last values)",
            recovered="Per-pod %s usage recovered",
        )

    def fetch(self) -> dict[PodKey, dict[str, float]]:
        """Fresh values per pod and resource (`cpu` in cores, pressures as 0..1 rates)."""
        for resource, series in SERIES.items():
            try:
                values = self._vector(usage_query(series, self._rate_window))
                times = self._vector(time_query(series))
            except MetricFetchError as error:
                self._failures.failed(resource, error)
                continue
            self._failures.worked(resource)
            self._last[resource] = {
                key: Sample(value, times.get(key, math.nan))
                for key, value in values.items()
                if math.isfinite(value)
            }
            if resource == "cpu":
                self._tell_cpu_series(present=bool(values))
        limit = self._clock.now().timestamp() - self._max_age
        found: dict[PodKey, dict[str, float]] = {}
        for resource, samples in self._last.items():
            for key, sample in samples.items():
                if sample.timestamp >= limit:  # NaN (no sample time) is never fresh
                    found.setdefault(key, {})[resource] = sample.value
        if not any("cpu" in v for v in found.values()) and REQUIRED & self._failures.failing.keys():
            raise MetricFetchError("no fresh per-pod CPU usage")
        return found

    @property
    def cpu_query(self) -> str:
        """The query each pod's CPU usage comes from."""
        return usage_query(SERIES["cpu"], self._rate_window)

    def why_missing(self, pod: PodKey) -> str:
        """Why `pod` has no fresh CPU usage in the last fetch: which query, and what it gave."""
        query = f"{self.cpu_query!r} at {self.prometheus.url}"
        failing = self._failures.failing.get("cpu")
        if failing is not None:
            return f"the query {query} fails: {failing}"
        samples = self._last.get("cpu")
        if not samples:
            return (
                f"the query {query} answers no series at all: Prometheus scrapes no kubelet's "
                "cAdvisor endpoint (/metrics/cadvisor), or its series lack namespace and pod"
            )
        sample = samples.get(pod)
        if sample is None:
            return (
                f"the query {query} answers no series for this pod: its node's cAdvisor is not "
                f"scraped, or it has not yet run for the rate window ({self._rate_window})"
            )
        if math.isnan(sample.timestamp):
            return f"{time_query(SERIES['cpu'])!r} gives no sample time for this pod"
        age = self._clock.now().timestamp() - sample.timestamp
        return (
            f"its newest sample ({query}) is {age:.0f} s old, past the limit of "
            f"{self._max_age:.0f} s"
        )

    def _tell_cpu_series(self, *, present: bool) -> None:
        if not present and not self._no_cpu_series:
            log.warning(
                "Per-pod usage: %r at %s answers no series: Prometheus scrapes no kubelet's "
                "cAdvisor endpoint (/metrics/cadvisor), so no pod's CPU usage is known and "
                "LoadAware moves at most one pod per node per cycle",
                self.cpu_query,
                self.prometheus.url,
            )
        elif present and self._no_cpu_series:
            log.info("Per-pod usage: container CPU series are there again")
        self._no_cpu_series = not present

    def _vector(self, query: str) -> dict[PodKey, float]:
        found: dict[PodKey, float] = {}
        for series in self.prometheus.vector(query).series:
            namespace, pod = series.labels.get("namespace"), series.labels.get("pod")
            if namespace and pod:
                found[(namespace, pod)] = series.value
        return found

    def close(self) -> None:
        self.prometheus.close()


def open_pod_usage(
    url: str,
    *,
    config: MetricsConfig,
    max_age: float,
    transport: httpx.BaseTransport | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> PrometheusPodUsage:
    """Per-pod usage from the Prometheus at `url`, reached and authenticated as `config` says
    (and with its rate window). Raises `MetricSourceError` for an unusable CA or token file."""
    return PrometheusPodUsage(
        open_prometheus(url, config=config, transport=transport),
        max_age=max_age,
        rate_window=config.rate_window,
        clock=clock,
    )
