"""The metrics pipeline between the model and the components: scrapes, rate windows, delay.

Metrics lag reality in clusters, and how much they lag decides how well a telemetry-driven
loop can do, so the simulator models the lag the way Prometheus makes it:

- node-exporter's counters (CPU busy seconds, PSI waiting seconds) and gauges (memory, the
  event-set node metrics such as `health_metric`) are scraped every `scrapeInterval`;
- a query at time q sees only scrapes made by q - `delay` (rule evaluation, remote write,
  adapter caches), and a rate is the counter's increase between the first and the last scrape
  of the `window` ending there (`rate(node_pressure_cpu_waiting_seconds_total[1m])`): no rate
  without two scrapes in the window, as in Prometheus;
- each value carries its sample time (the last scrape's), so staleness checks judge it right;
- components that send their own PromQL get it evaluated the same way: Volcano's LoadAware
  queries (`avg_over_time(irate(...[30s])[2m:30s])`, `volcano_node_query`) see only the
  scrapes each subquery point would, so a 30 s irate over 30 s scrapes answers nothing.

`ModelSource` serves this through the real `MetricSource` protocol, so every contender reads it
through `tas.metrics.refreshing.RefreshingMetricView`, the components' own metric code path.
Outages (the source fails) and bogus values (an exporter reporting nonsense for every node) are
events of the scenario, applied here.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass

import httpx
import numpy as np
import numpy.typing as npt

from descheduler.framework import PodUsage
from descheduler.signals import combined_cpu
from descheduler.state import CycleState
from descheduler.usage import CPU_SIGNALS, MEMORY_SIGNALS
from tas.fit import node_share
from tas.metrics.errors import MetricFetchError
from tas.metrics.source import Fetched, Sample, SampleColumn
from tas.types import MetricName, Namespace, NodeName, PodKey
from tas_simulator.baselines import VOLCANO_IRATE_RANGE, VOLCANO_SUBQUERY_STEP, read_volcano_query
from tas_simulator.clock import VirtualClock
from tas_simulator.scenario import Pipeline
from tas_simulator.world import (
    CPU_LOAD,
    CPU_PRESSURE,
    CPU_UTILIZATION,
    MEMORY_PRESSURE,
    MEMORY_UTILIZATION,
    ModelState,
    World,
)

FloatArray = npt.NDArray[np.float64]
#: Per pod (namespace, name): CPU cores and memory bytes.
PodUsageByName = dict[tuple[str, str], tuple[float, float]]

#: The OpenShift KubeVirtRelieveAndMigrate profile's query (`PrometheusCPUCombined`, from the
#: cluster-kube-descheduler-operator's `utilizationProfileToPrometheusQuery`): utilization while
#: the workers are not busy, pressure on busy nodes once they are (descheduler.signals).
COMBINED_QUERY = MetricName("descheduler:combined_utilization_and_pressure:avg1m")
#: Counters whose rate over the window is the metric (utilization and PSI are rates; the load
#: average per CPU is the demand over the cores, averaged over the window as the kernel's
#: one-minute load average is).
_RATES = (CPU_UTILIZATION, CPU_PRESSURE, MEMORY_PRESSURE, CPU_LOAD)

#: Volcano's scheduler reads node usage with its own query (volcano-sh/volcano at ed72c7c8,
#: pkg/scheduler/metrics/source/metrics_client_prometheus.go `NodeMetricsAvg`):
#: `avg_over_time(... rate(node_cpu_seconds_total{mode="idle"}[5m]) ...[10m:30s])`, and memory
#: averaged the same way over 10m (`NODE_METRICS_PERIOD`).
VOLCANO_PERIOD = 600.0
VOLCANO_RATE_RANGE = 300.0
VOLCANO_STEP = 30.0
#: Volcano's descheduler reads a pod's usage as `avg_over_time(irate(...[30s])[2m:30s])`
#: (its LoadAware `duration`, 2m): a value exists once a subquery point has two scrapes of the
#: pod in its 30 s range.
VOLCANO_POD_RANGE = 120.0
#: Prometheus's lookback for an instant vector selector (`--query.lookback-delta`, 5m).
LOOKBACK = 300.0
#: What the scrape store must keep for Volcano's node query.
VOLCANO_HISTORY = VOLCANO_PERIOD + VOLCANO_RATE_RANGE


def perfect(step: float) -> Pipeline:
    """A pipeline without lag: a scrape every step, a rate over the last step alone, no delay.
    A value read at t is the model's value at t (the clairvoyant reference)."""
    return Pipeline(scrape_interval=step, window=step, delay=0.0)


@dataclass(frozen=True)
class Scrape:
    t: float
    present: npt.NDArray[np.bool_]
    counters: Mapping[str, FloatArray]
    memory_utilization: FloatArray
    gauges: Mapping[str, Mapping[NodeName, float]]
    slot_cpu_seconds: FloatArray
    slot_memory: FloatArray
    slot_instance: npt.NDArray[np.int64]
    slot_node: npt.NDArray[np.int64]


class ScrapeStore:
    """Cumulative counters integrated step by step, and the scrapes taken of them."""

    def __init__(self, world: World, spec: Pipeline, *, history: float = 0.0) -> None:
        """`history`: how far back scrapes are kept beyond the rate window (a query with a
        longer range, such as Volcano's, needs them)."""
        self.world = world
        self.spec = spec
        self.history = history
        self.scrapes: list[Scrape] = []
        self._times: list[float] = []
        self._counters: dict[str, FloatArray] = {name: np.zeros(0) for name in _RATES}
        self._slot_cpu = np.zeros(0)
        self._last: ModelState | None = None
        self._next_scrape = 0.0

    def integrate(self, state: ModelState, dt: float) -> None:
        """Add one step of the model to the counters (node-exporter's view of the kernel)."""
        n = len(state.present)
        for name, values in (
            (CPU_UTILIZATION, state.utilization),
            # What node-exporter reads: the pressure model's noise on the true pressure.
            (CPU_PRESSURE, state.measured_pressure),
            (MEMORY_PRESSURE, state.memory_pressure),
            (CPU_LOAD, state.demand / np.where(state.cores > 0, state.cores, np.inf)),
        ):
            counter = _grown(self._counters[name], n)
            counter += values * dt
            self._counters[name] = counter
        used = served_cpu(state, np.asarray(self.world.slot_node.view, dtype=np.int64))
        self._slot_cpu = _grown(self._slot_cpu, len(used)) + used * dt
        self._last = state

    def maybe_scrape(self, t: float) -> None:
        if t + 1e-9 < self._next_scrape or self._last is None:
            return
        state = self._last
        world = self.world
        self.scrapes.append(
            Scrape(
                t=t,
                present=state.present.copy(),
                counters={k: v.copy() for k, v in self._counters.items()},
                memory_utilization=state.memory_utilization.copy(),
                gauges={k: dict(v) for k, v in world.gauges.items()},
                slot_cpu_seconds=self._slot_cpu.copy(),
                slot_memory=np.where(state.running, state.slot_memory, 0.0),
                slot_instance=np.asarray(world.slot_instance.view).copy(),
                slot_node=np.where(state.running, np.asarray(world.slot_node.view), -1),
            )
        )
        self._times.append(t)
        self._next_scrape = t + self.spec.scrape_interval
        kept = max(self.spec.window, self.history)
        horizon = t - kept - self.spec.delay - 2 * self.spec.scrape_interval
        cut = bisect.bisect_left(self._times, horizon)
        if cut > 0:
            del self.scrapes[:cut]
            del self._times[:cut]

    def last_by(self, t: float) -> int:
        """The index of the last scrape taken at or before `t`; -1 when none."""
        return bisect.bisect_right(self._times, t + 1e-9) - 1

    def visible(self, t: float) -> int:
        """The index of the last scrape visible at `t` (after the delay); -1 when none."""
        return bisect.bisect_right(self._times, t - self.spec.delay + 1e-9) - 1

    def first_since(self, t: float) -> int:
        """The index of the first scrape taken at or after `t`."""
        return bisect.bisect_left(self._times, t - 1e-9)

    def window_at(self, t: float) -> tuple[Scrape | None, Scrape | None]:
        """The last scrape visible at `t` (after the delay), and the first of its window."""
        end_at = bisect.bisect_right(self._times, t - self.spec.delay + 1e-9) - 1
        if end_at < 0:
            return None, None
        end = self.scrapes[end_at]
        start_at = bisect.bisect_left(self._times, end.t - self.spec.window - 1e-9)
        start = self.scrapes[start_at] if start_at < end_at else None
        return start, end


def served_cpu(state: ModelState, slot_node: npt.NDArray[np.int64]) -> FloatArray:
    """The CPU each running pod gets (cores), what its container counter counts: its demand,
    cut on a node whose demand exceeds its cores to its share of the cores (in proportion to
    demand, the model's own split). cAdvisor and metrics-server never report more CPU than a
    node ran, so demand above the cores is as invisible per pod as it is per node."""
    cores = state.cores
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(state.demand > cores, cores / state.demand, 1.0)
    nodes = slot_node[: len(state.slot_cpu)]
    on_node = state.running & (nodes >= 0)
    factor = np.where(on_node, share[np.where(on_node, nodes, 0)], 0.0)
    return np.asarray(state.slot_cpu * factor, dtype=np.float64)


def _grown(array: FloatArray, size: int) -> FloatArray:
    if len(array) >= size:
        return array
    bigger = np.zeros(size)
    bigger[: len(array)] = array
    return bigger


class ModelSource:
    """The model's metrics as a `tas.metrics.source.MetricSource` (see the module docstring)."""

    kind = "simulator"

    def __init__(self, store: ScrapeStore, clock: VirtualClock, *, faults: bool = True) -> None:
        """`faults=False`: the scenario's outages and bogus exporter values never reach the
        reader (the clairvoyant reference reads true values)."""
        self.store = store
        self.clock = clock
        self.faults = faults
        #: `pod_usage`'s last answer and what it was computed from (the window's scrapes and
        #: the cluster's version): components ask every step, scrapes come every 30-60 s.
        self._pod_usage: tuple[tuple[Scrape | None, Scrape | None, int], PodUsageByName]
        self._pod_usage = ((None, None, -1), {})
        #: Each rate over the last window asked for, and that window's scrapes: components
        #: fetch every sync, scrapes come every 30-60 s. Read them, never change them.
        self._rates: tuple[tuple[Scrape | None, Scrape | None], dict[str, dict[NodeName, float]]]
        self._rates = ((None, None), {})

    def in_outage(self, now: float) -> bool:
        """The scenario's metric source is out at `now` (and faults reach this reader)."""
        return self.faults and any(start <= now < end for start, end in self.store.world.outages)

    def close(self) -> None:
        return None

    def fetch(self, names: frozenset[MetricName]) -> Fetched:
        now = self.clock.elapsed
        if self.in_outage(now):
            return Fetched(errors={"source": "metrics source unavailable (scenario outage)"})
        start, end = self.store.window_at(now)
        columns: dict[MetricName, SampleColumn] = {}
        if end is None:
            return Fetched(columns={name: {} for name in names}, ok=frozenset({"source"}))
        stamp = self.clock.epoch(end.t)
        rates = self._window_rates(start, end)
        for name in sorted(names):
            values: Mapping[NodeName, float]
            if name in rates:
                values = rates[name]
            elif name == MEMORY_UTILIZATION:
                values = self._per_node(end.memory_utilization, end.present)
            elif name == COMBINED_QUERY:
                values = _combined(rates[CPU_UTILIZATION], rates[CPU_PRESSURE])
            elif (volcano := read_volcano_query(name)) is not None:
                values = self.volcano_node_query(*volcano)
            else:
                values = dict(end.gauges.get(name, {}))
            values = self._bogus(name, end.t, values, end)
            columns[name] = {node: Sample(v, stamp) for node, v in values.items()}
        return Fetched(columns=columns, ok=frozenset({"source"}))

    def _window_rates(self, start: Scrape | None, end: Scrape) -> dict[str, dict[NodeName, float]]:
        kept = self._rates[0]
        if kept[0] is not start or kept[1] is not end:
            self._rates = ((start, end), {name: self._rate(name, start, end) for name in _RATES})
        return self._rates[1]

    def _per_node(
        self, values: FloatArray, present: npt.NDArray[np.bool_]
    ) -> dict[NodeName, float]:
        names = self.store.world.node_names
        return {names[i]: float(values[i]) for i in np.flatnonzero(present)}

    def _rate(self, name: str, start: Scrape | None, end: Scrape) -> dict[NodeName, float]:
        if start is None or end.t <= start.t:
            return {}
        a, b = start.counters[name], end.counters[name]
        size = min(len(a), len(b))
        rate = (b[:size] - a[:size]) / (end.t - start.t)
        both = end.present[:size] & start.present[:size]
        return self._per_node(np.clip(rate, 0.0, 1.0), both)

    def _bogus(
        self, name: str, t: float, values: Mapping[NodeName, float], end: Scrape
    ) -> Mapping[NodeName, float]:
        world = self.store.world
        if not self.faults:
            return values
        for begin, finish, metric, value, nodes in world.bogus:
            if metric == name and begin <= t < finish:
                targets = nodes or frozenset(self._per_node(end.memory_utilization, end.present))
                values = {**values, **{NodeName(n): value for n in targets}}
        return values

    # ------------------------------------------------------------------ per-pod usage

    def pod_usage(self) -> dict[tuple[str, str], tuple[float, float]]:
        """Per pod: CPU cores (rate over the window) and memory bytes, as container metrics
        (cAdvisor, metrics-server) report them. Only pods that ran through the whole window.
        The same mapping while neither the window nor the cluster changes: read it, never
        change it."""
        start, end = self.store.window_at(self.clock.elapsed)
        if start is None or end is None or end.t <= start.t:
            return {}
        # A pod's slot changes only with a write to the cluster, which changes its version.
        basis = (start, end, self.store.world.cluster.version)
        kept = self._pod_usage[0]
        if kept[0] is not start or kept[1] is not end or kept[2] != basis[2]:
            self._pod_usage = (basis, self._window_usage(start, end))
        return self._pod_usage[1]

    def _window_usage(
        self, start: Scrape, end: Scrape
    ) -> dict[tuple[str, str], tuple[float, float]]:
        size = min(len(start.slot_instance), len(end.slot_instance))
        same = (
            (start.slot_instance[:size] == end.slot_instance[:size])
            & (start.slot_node[:size] >= 0)
            & (end.slot_node[:size] == start.slot_node[:size])
        )
        cpu = (end.slot_cpu_seconds[:size] - start.slot_cpu_seconds[:size]) / (end.t - start.t)
        return self._per_pod(np.flatnonzero(same), cpu, end)

    def volcano_pod_usage(self) -> dict[tuple[str, str], tuple[float, float]]:
        """Per pod, as Volcano's descheduler queries it (`PodsMetricsAvg`:
        `avg_over_time(irate(container_cpu_usage_seconds_total{pod=...}[30s])[2m:30s])`, its
        memory the latest `container_memory_usage_bytes`), evaluated as Prometheus does (see
        `volcano_node_query`): at each 30 s subquery point of the last 2 minutes, the rate
        between the last two scrapes of the pod in the 30 s before it; the mean of the points
        there are. A pod has a value once a point has two scrapes of it, not a window later;
        with 30 s scrapes, mostly never."""
        store = self.store
        now = self.clock.elapsed
        ingested = now - store.spec.delay
        latest = store.last_by(ingested)
        if latest < 0:
            return {}
        end = store.scrapes[latest]
        size = len(end.slot_instance)
        total, points = np.zeros(size), np.zeros(size)
        t = np.floor(now / VOLCANO_SUBQUERY_STEP + 1e-9) * VOLCANO_SUBQUERY_STEP
        while t > now - VOLCANO_POD_RANGE + 1e-9:
            last = store.last_by(min(t, ingested))
            t_point, t = t, t - VOLCANO_SUBQUERY_STEP
            if last < 1 or store.scrapes[last - 1].t <= t_point - VOLCANO_IRATE_RANGE + 1e-9:
                continue
            a, b = store.scrapes[last - 1], store.scrapes[last]
            n = min(size, len(a.slot_instance), len(b.slot_instance))
            same = (
                (a.slot_instance[:n] == b.slot_instance[:n])
                & (b.slot_instance[:n] == end.slot_instance[:n])
                & (a.slot_node[:n] >= 0)
                & (a.slot_node[:n] == b.slot_node[:n])
            )
            rate = (b.slot_cpu_seconds[:n] - a.slot_cpu_seconds[:n]) / (b.t - a.t)
            total[:n] += np.where(same, rate, 0.0)
            points[:n] += same
        slots = np.flatnonzero(points)
        cpu = np.zeros(size)
        cpu[slots] = total[slots] / points[slots]
        return self._per_pod(slots, cpu, end)

    def _per_pod(
        self, slots: npt.NDArray[np.intp], cpu: FloatArray, end: Scrape
    ) -> dict[tuple[str, str], tuple[float, float]]:
        world = self.store.world
        # The slots still running the instance the scrape saw, then plain Python values: a
        # loop over numpy scalars costs more than the rest of the pipeline's step.
        slots = slots[world.slot_instance.data[slots] == end.slot_instance[slots]]
        namespaces = [w.namespace for w in world.scenario.workloads]
        pods, workloads = world.slot_pod, world.slot_workload
        return {
            (namespaces[workloads[slot]], name): (used, memory)
            for slot, used, memory in zip(
                slots.tolist(), cpu[slots].tolist(), end.slot_memory[slots].tolist(), strict=True
            )
            if (name := pods[slot]) is not None
        }

    def pod_usage_feed(self) -> ModelPodUsage:
        """What the container series answer, as production's readers take it."""
        return ModelPodUsage(self)

    def volcano_pod_usage_source(self, state: CycleState) -> PodUsage:
        """`descheduler.framework.PodUsageSource` for Volcano: usage as a share (0..100) of the
        pod's node, by Volcano's own pod query (`volcano_pod_usage`). Ours reads per-pod usage
        through production's feed instead (`pod_usage_feed`)."""
        return self._shares(state, self.volcano_pod_usage())

    def _shares(
        self, state: CycleState, usage: Mapping[tuple[str, str], tuple[float, float]]
    ) -> PodUsage:
        shares: dict[PodKey, dict[str, float]] = {}
        for pod in state.pods:
            node = state.nodes.get(pod.node_name) if pod.node_name else None
            found = usage.get((pod.namespace, pod.name))
            if node is None or found is None:
                continue
            # The one share (`tas.fit.node_share`), read as Volcano reads its pod query, which
            # differs on purpose from production's reader (`descheduler.usage.pod_usage_from`):
            # memory is the pod's measured bytes (Volcano's query reads them), not its requests,
            # and neither share is capped nor is a pod on a node without the resource left out.
            cpu = node_share(found[0], node, "cpu")
            used = node_share(found[1], node, "memory")
            # Keyed by resource (Volcano's `cpu`/`memory`) and by this project's LoadAware
            # signals (descheduler.usage: the CPU share stands for every CPU signal).
            shares[(Namespace(pod.namespace), pod.name)] = {
                **dict.fromkeys(CPU_SIGNALS, 0.0 if cpu is None else cpu),
                **dict.fromkeys(MEMORY_SIGNALS, 0.0 if used is None else used),
            }
        return shares

    def volcano_node_usage(self) -> dict[NodeName, tuple[float, float]] | None:
        """CPU and memory usage per node in percent, as the Volcano scheduler's query answers
        (`VOLCANO_PERIOD`): the mean, over a 30s-step subquery of the last 10 minutes, of the
        5-minute CPU busy rate and of the memory in use. None during an outage."""
        now = self.clock.elapsed
        world = self.store.world
        if self.in_outage(now):
            return None
        store = self.store
        n = world.node_count
        cpu_sum, memory_sum = np.zeros(n), np.zeros(n)
        cpu_count, memory_count = np.zeros(n), np.zeros(n)
        steps = int(VOLCANO_PERIOD // VOLCANO_STEP)
        for k in range(steps + 1):
            last = store.visible(now - k * VOLCANO_STEP)
            if last < 0:
                break
            end = store.scrapes[last]
            size = min(n, len(end.memory_utilization))
            present = end.present[:size]
            memory_sum[:size] += np.where(present, end.memory_utilization[:size], 0.0)
            memory_count[:size] += present
            first = store.first_since(end.t - VOLCANO_RATE_RANGE)
            if first >= last:
                continue
            start = store.scrapes[first]
            a, b = start.counters[CPU_UTILIZATION], end.counters[CPU_UTILIZATION]
            m = min(size, len(a), len(b))
            both = present[:m] & start.present[:m]
            rate = np.clip((b[:m] - a[:m]) / (end.t - start.t), 0.0, 1.0)
            cpu_sum[:m] += np.where(both, rate, 0.0)
            cpu_count[:m] += both
        found: dict[NodeName, tuple[float, float]] = {}
        for i in np.flatnonzero(memory_count > 0):
            cpu = cpu_sum[i] / cpu_count[i] if cpu_count[i] else 0.0
            found[world.node_names[i]] = (100.0 * cpu, 100.0 * memory_sum[i] / memory_count[i])
        return found

    def volcano_node_query(self, resource: str, duration: float) -> dict[NodeName, float]:
        """Volcano's LoadAware node query (`tas_simulator.baselines.volcano_cpu_query`,
        `volcano_memory_query`) as Prometheus evaluates it now: a subquery at the multiples of
        30 s in (now - `duration`, now] (Prometheus 3's left-open range), each point seeing
        the scrapes taken by then and ingested by now (after the delay), then their mean.
        At a point, CPU is `irate` over the 30 s before it: the last two scrapes in that range,
        none with fewer than two (so with 30 s scrapes mostly none); memory is the last scrape
        within the 5 m lookback. A node without any point has no value: Volcano reads 0."""
        store = self.store
        now = self.clock.elapsed
        world = store.world
        n = world.node_count
        total, points = np.zeros(n), np.zeros(n)
        ingested = now - store.spec.delay
        t = np.floor(now / VOLCANO_SUBQUERY_STEP + 1e-9) * VOLCANO_SUBQUERY_STEP
        while t > now - duration + 1e-9:
            last = store.last_by(min(t, ingested))
            t_point, t = t, t - VOLCANO_SUBQUERY_STEP
            if last < 0:
                continue
            end = store.scrapes[last]
            size = min(n, len(end.present))
            if resource == "memory":
                if end.t <= t_point - LOOKBACK:
                    continue
                present = end.present[:size]
                total[:size] += np.where(present, end.memory_utilization[:size], 0.0)
                points[:size] += present
                continue
            if last < 1 or store.scrapes[last - 1].t <= t_point - VOLCANO_IRATE_RANGE + 1e-9:
                continue
            start = store.scrapes[last - 1]
            a, b = start.counters[CPU_UTILIZATION], end.counters[CPU_UTILIZATION]
            m = min(size, len(a), len(b))
            both = end.present[:m] & start.present[:m]
            rate = np.clip((b[:m] - a[:m]) / (end.t - start.t), 0.0, 1.0)
            total[:m] += np.where(both, rate, 0.0)
            points[:m] += both
        return {world.node_names[i]: float(total[i] / points[i]) for i in np.flatnonzero(points)}

    def metrics_server(
        self,
    ) -> tuple[dict[NodeName, dict[str, float]], dict[PodKey, dict[str, float]]]:
        """What metrics-server would answer (metrics.k8s.io): usage per node and per pod."""
        start, end = self.store.window_at(self.clock.elapsed)
        world = self.store.world
        pods: dict[PodKey, dict[str, float]] = {
            (Namespace(ns), name): {"cpu": cpu, "memory": memory}
            for (ns, name), (cpu, memory) in self.pod_usage().items()
        }
        nodes: dict[NodeName, dict[str, float]] = {}
        if end is not None:
            utilization = self._rate(CPU_UTILIZATION, start, end)
            for i in np.flatnonzero(end.present):
                name = world.node_names[i]
                if name in utilization:
                    nodes[name] = {
                        # Utilization is of the cores the node serves (a degraded node's).
                        "cpu": utilization[name]
                        * float(world.cores.data[i] * world.serving.data[i]),
                        "memory": float(end.memory_utilization[i]) * float(world.memory.data[i]),
                    }
        return nodes, pods


def _combined(
    utilization: Mapping[NodeName, float], pressure: Mapping[NodeName, float]
) -> dict[NodeName, float]:
    if not utilization:
        return {}
    average = sum(utilization.values()) / len(utilization)
    found: dict[NodeName, float] = {}
    for node, value in utilization.items():
        combined = combined_cpu(value, pressure.get(node), average_utilization=average)
        if combined is not None:
            found[node] = combined
    return found


class PrometheusApi:
    """The pipeline as Prometheus's HTTP API answers it (`GET /api/v1/query`, instant vectors
    labelled `instance`), for descheduler plugins that send their own PromQL: the handler of
    an `httpx.MockTransport` (the descheduler's `prometheus_transport` seam). A query names a
    metric the pipeline serves (the OpenShift profile's recording rule among them); anything
    else is `bad_data`, as Prometheus answers an unknown expression. During an outage it
    answers 503."""

    def __init__(self, source: ModelSource) -> None:
        self.source = source

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.rstrip("/").split("/")[-3:] != ["api", "v1", "query"]:
            return httpx.Response(404, json={"status": "error", "error": "not found"})
        query = request.url.params.get("query", "").strip()
        name = MetricName(query)
        served = {*_RATES, MEMORY_UTILIZATION, COMBINED_QUERY}
        if name not in served and name not in self.source.store.world.gauges:
            return httpx.Response(
                400,
                json={
                    "status": "error",
                    "errorType": "bad_data",
                    "error": f"the simulator serves no query {query!r}",
                },
            )
        fetched = self.source.fetch(frozenset({name}))
        if fetched.errors:
            return httpx.Response(
                503, json={"status": "error", "errorType": "unavailable", "error": "outage"}
            )
        column = fetched.columns.get(name, {})
        result = [
            {"metric": {"instance": node}, "value": [sample.timestamp, repr(sample.value)]}
            for node, sample in sorted(column.items())
        ]
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "vector", "result": result}}
        )


class ModelPodUsage:
    """The pods' usage as a `tas.metrics.source.PodUsageFeed` (cores, bytes): what `tas
    descheduler --metrics prometheus:URL` and `tas extender` read from the container series. A
    metric outage fails it, as the Prometheus it stands for would."""

    def __init__(self, source: ModelSource) -> None:
        self.source = source
        self._last: tuple[object, dict[tuple[str, str], dict[str, float]]] = (None, {})

    def fetch(self) -> dict[tuple[str, str], dict[str, float]]:
        """The usage now; the same mapping while the source's answer is (read it, never change
        it)."""
        if self.source.in_outage(self.source.clock.elapsed):
            raise MetricFetchError("metrics source unavailable (scenario outage)")
        found = self.source.pod_usage()
        if found is not self._last[0]:
            usage = {key: {"cpu": cpu, "memory": memory} for key, (cpu, memory) in found.items()}
            self._last = (found, usage)
        return self._last[1]
