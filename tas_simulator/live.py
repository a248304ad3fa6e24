"""A simulator scenario on `make run`'s page (`tas run --scenario`): the same run `tas simulate`
makes, shown as it happens.

The run is `tas_simulator.runner.build_run`'s for `ours`, stepped in real time (`tas_inmemory.loop.
RealTime`, `--speed` scenario seconds per wall second) instead of as fast as it goes: the same
world, metric pipeline (scrape interval, window, delay, outages), step order and seeded choices,
with ours' extender behind real HTTP as kube-scheduler calls it. So the table the page shows at
the end is the table `tas simulate` prints for `ours` with that seed.

`ScenarioPage` is what the page reads of it: the world as node loads after each tick (from the
model's last state), the scenario's clock and progress, and at the end the table.
`ScenarioControls` are the page's controls on the scenario's world: a node's health (a gauge,
as a set-health event sets it) and a workload's replicas. A control changes the run, so a page
that used one no longer matches `tas simulate`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tas.cluster.interface import NotFoundError
from tas.cluster.model import Pod
from tas.types import Namespace, NodeName, PodKey
from tas_inmemory.demo import DemoError, unknown
from tas_inmemory.live_telemetry import NodeLoad, TelemetryStep
from tas_simulator.report import table
from tas_simulator.runner import Run
from tas_simulator.seeds import SeededFigures, SeededResult
from tas_simulator.world import ModelState

#: The gauge the page's health control sets (the health demo's metric).
HEALTH_METRIC = "health_metric"


class ScenarioPage:
    """What the page shows of a scenario's run (see the module docstring)."""

    def __init__(self, run: Run, *, speed: float, seed: int, finished: Callable[[], bool]) -> None:
        self._run = run
        self._speed = speed
        self._seed = seed
        self._finished = finished
        self._state: ModelState | None = None
        self._summary: str | None = None

    def watch(self, state: ModelState, step: float) -> None:
        """A `SimulatedWorld` watcher: keeps the step's model state for the next tick."""
        self._state = state

    @property
    def elapsed(self) -> float:
        return self._run.clock.elapsed

    def telemetry(self) -> TelemetryStep | None:
        """The world at the last step, as the page's node cards and charts read it."""
        state = self._state
        if state is None:
            return None
        world = self._run.world
        loads: dict[NodeName, NodeLoad] = {}
        for i, node in enumerate(world.node_names):
            if not state.present[i]:
                continue
            loads[node] = NodeLoad(
                node=node,
                cores=float(state.cores[i]),
                cpu_demand=float(state.demand[i]),
                cpu_utilization=float(state.utilization[i]),
                # What node-exporter reads (the model's noise in it), as a cluster shows it.
                cpu_pressure=float(state.measured_pressure[i]),
                memory_used=float(state.memory_used[i]),
                memory_utilization=float(state.memory_utilization[i]),
                memory_pressure=float(state.memory_pressure[i]),
            )
        pod_cpu: dict[PodKey, float] = {}
        workloads = world.scenario.workloads
        for slot, name in enumerate(world.slot_pod):
            if name is not None and bool(state.running[slot]):
                workload = workloads[world.slot_workload[slot]]
                pod_cpu[(Namespace(workload.namespace), name)] = float(state.slot_cpu[slot])
        return TelemetryStep(time=self._run.clock.time(), nodes=loads, pod_cpu=pod_cpu)

    def summary(self) -> str | None:
        """At the end, the table `tas simulate` prints, for this run as `ours`."""
        if self._summary is None and self._finished():
            figures = SeededFigures("ours", {self._seed: self._run.result().figures})
            result = SeededResult(
                scenario=self._run.scenario, seeds=[self._seed], contenders={"ours": figures}
            )
            self._summary = table(result)
        return self._summary

    def describe(self) -> dict[str, Any]:
        """The scenario as the page shows it (the state's `scenario`)."""
        scenario = self._run.scenario
        clock = self._run.clock
        finished = self._finished()
        # Ended: the whole duration, although the clock stands at the last step's time until
        # the end-of-run figures are read (`summary`).
        elapsed = scenario.duration if finished else self.elapsed
        return {
            "name": scenario.name,
            "description": scenario.description.strip(),
            "duration": scenario.duration,
            "elapsed": round(elapsed, 3),
            "speed": self._speed,
            # The scenario clock's Unix time at 0 s: every time on the page is on this clock.
            "start": clock.epoch(0.0),
            "finished": finished,
            "seed": self._seed,
            "summary": self.summary(),
        }


class ScenarioControls:
    """The dashboard's controls on a scenario's world: health and scaling; load comes from the
    scenario's own workloads."""

    def __init__(self, run: Run) -> None:
        self._world = run.world
        self.cluster = run.world.cluster

    def set_health(self, node: str, value: float) -> None:
        self._node(node)
        if isinstance(value, bool) or not math.isfinite(value):
            raise DemoError(f"value must be a finite number, not {value!r}", status=422)
        self._world.set_gauge(HEALTH_METRIC, NodeName(node), value)

    def add_load(self, node: str, cores: float) -> Pod:
        self._node(node)
        raise DemoError(
            "a scenario's load comes from its workloads and events; adding load is a control "
            "of the health demo (tas run without --scenario)",
            status=409,
        )

    def clear_load(self, node: str) -> list[str]:
        self._node(node)
        return []

    def scale(self, name: str, replicas: int) -> int:
        world = self._world
        index = world.workload_index.get(name)
        if index is None:
            raise unknown("workload", name, world.workload_index)
        spec = world.scenario.workloads[index]
        if spec.kind == "DaemonSet":
            raise DemoError(f"{name} is a DaemonSet: one pod per node, not scalable", status=409)
        before = self._live(index)
        world.scale(spec, replicas, world.clock.elapsed, burst=False)
        return before

    def workloads(self) -> list[dict[str, object]]:
        return [
            {
                "name": spec.name,
                "namespace": spec.namespace,
                "replicaSet": spec.name,
                "pods": self._live(index),
                "scalable": spec.kind != "DaemonSet",
            }
            for index, spec in enumerate(self._world.scenario.workloads)
        ]

    def _live(self, index: int) -> int:
        world = self._world
        return sum(1 for slot in world.workload_slots[index] if world.slot_pod[slot] is not None)

    def _node(self, node: str) -> None:
        try:
            self.cluster.get_node(NodeName(node))
        except NotFoundError:
            known = (str(n.name) for n in self.cluster.list_nodes())
            raise unknown("node", node, known) from None
