"""The workload model on the real clock, written where node-exporter's textfiles would be.

`make run` has no kubelet and no kernel to measure, so this plays their part: every step it
evaluates each running pod's usage profile (`tas_inmemory.workload`), sums it per node, turns it
into what the node's kernel would report (CPU utilization, PSI CPU pressure by Erlang C,
memory utilization and pressure) and writes those gauges into the node's textfile, keeping
every other series (the health value `tas set-health` writes). The components read them back
through the real textfile source, as they would read node-exporter.

Rewriting a node's file also refreshes its timestamp (the file's mtime), as a scrape would: a
health value set once stays fresh while the demo runs.

Two writers may touch the same file (this loop and `tas set-health` in another terminal); both
write through `tas.adapters.metrics.textfile.write_node_series`, which serializes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tas.adapters.metrics.textfile import write_node_series
from tas.cluster.model import Pod
from tas.types import NodeName, PodKey
from tas_inmemory.cluster import InMemoryCluster
from tas_inmemory.workload import (
    UsageBank,
    UsageProfile,
    cpu_pressure,
    cpu_utilization,
    memory_pressure,
    slot_seed,
)


@dataclass(frozen=True, slots=True)
class PodProfile:
    """What one pod uses: CPU in cores, memory in bytes, each a profile over time."""

    cpu: UsageProfile
    memory: UsageProfile


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """One node at one moment, as the model computed it (before any metric pipeline)."""

    node: NodeName
    cores: float
    cpu_demand: float
    cpu_utilization: float
    cpu_pressure: float
    memory_used: float
    memory_utilization: float
    memory_pressure: float

    def series(self) -> dict[str, float]:
        """The values the node's textfile holds, by series name."""
        return {
            "node_cpu_utilization": round(self.cpu_utilization, 4),
            "node_cpu_pressure": round(self.cpu_pressure, 4),
            "node_memory_utilization": round(self.memory_utilization, 4),
            "node_memory_pressure": round(self.memory_pressure, 4),
            # The load average per CPU (`cpu_load`): demand over cores, at most 1.
            "node_cpu_load": round(min(1.0, self.cpu_demand / self.cores), 4)
            if self.cores > 0
            else 1.0,
        }


@dataclass(frozen=True, slots=True)
class TelemetryStep:
    time: float
    nodes: Mapping[NodeName, NodeLoad]
    #: Cores each running pod uses now.
    pod_cpu: Mapping[PodKey, float]


class LiveTelemetry:
    """Steps the workload model for the pods of one cluster and writes the node textfiles.

    Each pod gets its own random stream (from `seed` and the order pods were first seen), so
    replicas of a bursty workload burst at different moments.
    """

    def __init__(
        self,
        cluster: InMemoryCluster,
        directory: Path,
        *,
        profile_of: Callable[[Pod], PodProfile | None],
        started: float,
        seed: int = 0,
    ) -> None:
        self._cluster = cluster
        self._directory = directory
        self._profile_of = profile_of
        self._started = started
        self._seed = seed
        self._cpu = UsageBank()
        self._memory = UsageBank()
        self._slots: dict[tuple[PodKey, str], int] = {}

    def step(self, now: float) -> TelemetryStep:
        """The model at wall time `now`, written to every node's textfile."""
        t = now - self._started
        running = [
            p for p in self._cluster.list_pods() if p.node_name is not None and p.phase == "Running"
        ]
        slots = {(p.namespace, p.name): self._slot(p) for p in running}
        cpu_values = self._cpu.values(t)
        memory_values = self._memory.values(t)
        demand: dict[NodeName, float] = {}
        used: dict[NodeName, float] = {}
        pod_cpu: dict[PodKey, float] = {}
        for pod in running:
            slot = slots[(pod.namespace, pod.name)]
            if slot < 0 or pod.node_name is None:
                continue
            cores = float(cpu_values[slot])
            pod_cpu[(pod.namespace, pod.name)] = cores
            demand[pod.node_name] = demand.get(pod.node_name, 0.0) + cores
            used[pod.node_name] = used.get(pod.node_name, 0.0) + float(memory_values[slot])
        loads: dict[NodeName, NodeLoad] = {}
        for node in self._cluster.list_nodes():
            cores = float(node.allocatable.get("cpu", 0.0))
            capacity = float(node.allocatable.get("memory", 0.0))
            d, m = demand.get(node.name, 0.0), used.get(node.name, 0.0)
            load = NodeLoad(
                node=node.name,
                cores=cores,
                cpu_demand=d,
                cpu_utilization=cpu_utilization(d, cores),
                cpu_pressure=cpu_pressure(d, cores) if cores > 0 else 1.0,
                memory_used=m,
                memory_utilization=min(1.0, m / capacity) if capacity > 0 else 1.0,
                memory_pressure=memory_pressure(m, capacity),
            )
            loads[node.name] = load
            write_node_series(self._directory, node.name, load.series())
        return TelemetryStep(time=now, nodes=loads, pod_cpu=pod_cpu)

    def _slot(self, pod: Pod) -> int:
        """The pod's index in the usage banks (-1 when its usage is unknown)."""
        key = ((pod.namespace, pod.name), pod.uid)
        slot = self._slots.get(key)
        if slot is None:
            profile = self._profile_of(pod)
            if profile is None:
                slot = -1
            else:
                seed = slot_seed(self._seed, len(self._slots))
                slot = self._cpu.add(profile.cpu, seed=seed)
                memory_slot = self._memory.add(profile.memory, seed=seed)
                assert memory_slot == slot, "the two banks grow together"
            self._slots[key] = slot
        return slot


__all__ = [
    "LiveTelemetry",
    "NodeLoad",
    "PodProfile",
    "TelemetryStep",
]


class LiveWorld:
    """The health demo's world as the closed loop's `WorldStepper` (`tas_inmemory.loop`): at loop
    time `t` (seconds since `started`, on the wall clock) the workload model steps and writes
    the node textfiles. `latest` is the last step, which the page shows and the pods' usage
    comes from (`fetch`, a `tas.metrics.source.PodUsageFeed`: what container metrics report)."""

    def __init__(self, telemetry: LiveTelemetry, *, started: float) -> None:
        self.telemetry = telemetry
        self.started = started
        self.latest: TelemetryStep | None = None

    def advance(self, t: float, step: float) -> None:
        self.latest = self.telemetry.step(self.started + t)

    def fetch(self) -> dict[PodKey, dict[str, float]]:
        if self.latest is None:
            return {}
        return {key: {"cpu": cores} for key, cores in self.latest.pod_cpu.items()}
