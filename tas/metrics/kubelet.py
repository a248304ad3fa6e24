"""Per-pod usage from the kubelets, without Prometheus: each node's `/metrics/resource`.

The kubelet serves its resource metrics (what metrics-server reads) in the Prometheus text
format at `/metrics/resource`; the API server proxies it at `/api/v1/nodes/<node>/proxy/
metrics/resource` (RBAC: `nodes/proxy` get). Per container it carries
`container_cpu_usage_seconds_total` (a counter of core-seconds) and
`container_memory_working_set_bytes` (a gauge), labelled `namespace`, `pod` and `container`,
each sample with its own timestamp (metrics-server's reader, kubernetes-sigs/metrics-server
pkg/scraper/client/resource/decode.go, takes the same series).

Container-level pressure: with KubeletPSI (beta in 1.34, GA in 1.36, cgroup v2 and a kernel
with PSI) the kubelet exports `container_pressure_cpu_waiting_seconds_total` and
`container_pressure_memory_waiting_seconds_total` on `/metrics/cadvisor`, not on
`/metrics/resource`. The pages this source reads are a parameter (`paths`): by default only
`metrics/resource` (small: a few series per container), and any `container_pressure_*` series
found on the pages read are used, as rates (0..1 of the time some task waited). Add
`metrics/cadvisor` to `paths` to get them from today's kubelets, at the cost of a much larger
page per node.

Counters become rates per container from the oldest to the newest sample within `rate_window`
(as PromQL's `rate` over that window, without its extrapolation); a counter that went down
(a restarted container) starts its history again. Per pod, its containers' values are summed.
Staleness follows `tas.metrics.pod_usage`: a value older than `max_age` is missing, a node that
fails keeps its last values until they go stale, and a pod absent from a node's good answer is
gone. The text is parsed by the project's own parser (`tas.metrics.textformat`).

Pure of I/O: `read(node, path)` (the node proxy, `KubernetesCluster.read_node_proxy` in the
wiring) and `nodes()` are given. Errors: `read` raises `MetricFetchError` for a node it cannot
read; `fetch` raises it only when no fresh CPU value is left and some node failed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from tas.clock import SYSTEM_CLOCK, Clock
from tas.metrics.errors import FetchFailures, MetricFetchError, TextFormatError
from tas.metrics.textformat import TextSample, parse_text

log = logging.getLogger(__name__)

#: namespace, pod name.
PodKey = tuple[str, str]
#: namespace, pod name, container name.
ContainerKey = tuple[str, str, str]

RESOURCE_PATH = "metrics/resource"
CADVISOR_PATH = "metrics/cadvisor"
#: Resource name -> the counter whose rate it is (cores, or a 0..1 share of time waiting).
COUNTERS: Mapping[str, str] = {
    "cpu": "container_cpu_usage_seconds_total",
    "cpu_pressure": "container_pressure_cpu_waiting_seconds_total",
    "memory_pressure": "container_pressure_memory_waiting_seconds_total",
}
#: Resource name -> the gauge it is (bytes).
GAUGES: Mapping[str, str] = {"memory": "container_memory_working_set_bytes"}
_NAMES = frozenset({*COUNTERS.values(), *GAUGES.values()})


@dataclass
class _Series:
    """One container's samples of one series: (time, value), oldest first."""

    points: list[tuple[float, float]] = field(default_factory=list)

    def add(self, stamp: float, value: float, window: float) -> None:
        if self.points and stamp <= self.points[-1][0]:
            return  # not a new sample (the kubelet refreshes its stats every few seconds)
        if self.points and value < self.points[-1][1]:
            self.points.clear()  # a counter reset: the container restarted
        self.points.append((stamp, value))
        while len(self.points) > 2 and self.points[1][0] <= stamp - window:
            del self.points[0]

    def rate(self) -> float | None:
        if len(self.points) < 2:
            return None
        (t0, v0), (t1, v1) = self.points[0], self.points[-1]
        return (v1 - v0) / (t1 - t0)


@dataclass
class _Node:
    """What one node's last good answers left: per container and resource, the series."""

    counters: dict[tuple[ContainerKey, str], _Series] = field(default_factory=dict)
    gauges: dict[tuple[ContainerKey, str], tuple[float, float]] = field(default_factory=dict)


class KubeletPodUsage:
    """Per pod: CPU cores, memory working set bytes and, where exported, CPU and memory
    pressure (0..1), fresh only; the same shape as `PrometheusPodUsage.fetch`."""

    kind = "kubelet"

    def __init__(
        self,
        read: Callable[[str, str], str],
        nodes: Callable[[], Iterable[str]],
        *,
        max_age: float,
        rate_window: float = 60.0,
        paths: Iterable[str] = (RESOURCE_PATH,),
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._read = read
        self._nodes = nodes
        self._max_age = max_age
        self._rate_window = rate_window
        self._paths = tuple(paths)
        self._clock = clock
        self._state: dict[str, _Node] = {}
        self._failures = FetchFailures(
            log,
            failed="Kubelet metrics of %s: %s (keeping the last values)",
            recovered="Kubelet metrics of %s recovered",
        )

    def fetch(self) -> dict[PodKey, dict[str, float]]:
        """Fresh values per pod and resource, after reading every node once."""
        now = self._clock.now().timestamp()
        names = set(self._nodes())
        for gone in self._state.keys() - names:
            del self._state[gone]
        failed = False
        for node in sorted(names):
            try:
                text = "\n".join(self._read(node, path) for path in self._paths)
                samples = parse_text(text, names=_NAMES)
            except (MetricFetchError, TextFormatError) as error:
                failed = True
                self._failures.failed(node, error)
                continue
            self._failures.worked(node)
            self._state[node] = self._updated(self._state.get(node), samples, now)
        found = self._fresh(now)
        if failed and not any("cpu" in values for values in found.values()):
            raise MetricFetchError("no fresh per-pod CPU usage from any kubelet")
        return found

    def _updated(self, previous: _Node | None, samples: Iterable[TextSample], now: float) -> _Node:
        """The node's state after a good answer: containers not in it are dropped."""
        state = _Node()
        old = previous or _Node()
        resource_of = {series: r for r, series in COUNTERS.items()}
        gauge_of = {series: r for r, series in GAUGES.items()}
        for name, labels, value, stamp in samples:
            key = (labels.get("namespace", ""), labels.get("pod", ""), labels.get("container", ""))
            if not all(key) or not math.isfinite(value):
                continue
            at = now if stamp is None else stamp
            if name in gauge_of:
                state.gauges[(key, gauge_of[name])] = (at, value)
                continue
            resource = resource_of[name]
            series = old.counters.get((key, resource)) or _Series()
            series.add(at, value, self._rate_window)
            state.counters[(key, resource)] = series
        return state

    def _fresh(self, now: float) -> dict[PodKey, dict[str, float]]:
        limit = now - self._max_age
        found: dict[PodKey, dict[str, float]] = {}

        def add(container: ContainerKey, resource: str, value: float) -> None:
            values = found.setdefault((container[0], container[1]), {})
            values[resource] = values.get(resource, 0.0) + value

        for state in self._state.values():
            for (container, resource), series in state.counters.items():
                rate = series.rate()
                if rate is not None and series.points[-1][0] >= limit:
                    add(container, resource, rate)
            for (container, resource), (stamp, value) in state.gauges.items():
                if stamp >= limit:
                    add(container, resource, value)
        return found

    def close(self) -> None:
        return None
