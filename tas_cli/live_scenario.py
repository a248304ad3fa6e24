"""`tas run --scenario FILE`: a simulator scenario on the real clock, on `make run`'s dashboard.

The scenario is read and its world built by the simulator itself (`simulator.scenario`,
`simulator.world`: nodes, workloads with their usage, events, OOM kills), and the descheduler
is configured as the simulator's `ours` contender (with the scenario's settings). What changes
is time and the metric path: the world's virtual clock follows the wall clock times `--speed`,
and the components run for real, as in the health demo, on textfiles the model writes every
tick (the model's true values; the simulator's scrape lag is not modelled here). A
metric-outage event stops the writes, so values go stale as they would; a bogus-metric event
writes its value; a set-health event writes the node's gauge, and `tas set-health` still works.

The page shows the scenario as its own view (`ScenarioTelemetry.describe`, the state's
`scenario`): its name and description, its clock and progress, and at its end the table
`tas simulate` prints, for this run as `ours`: the simulator's own figures
(`simulator.figures.FigureRecorder`, fed the model's true values, the placements and the
evictions as the run makes them) and its own table (`simulator.report.table`). The figures are
this live run's, not `tas simulate`'s: one model step per tick, and textfile metrics without
the simulated scrape pipeline.

At the scenario's end the world holds still (the components keep running) until Ctrl-C.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from descheduler.cycle import CycleReport
from descheduler.framework import Result
from embedded.demo import HEALTH_SERIES, DemoError
from embedded.live_telemetry import (
    CPU_PRESSURE,
    CPU_UTILIZATION,
    MEMORY_PRESSURE,
    MEMORY_UTILIZATION,
    NodeLoad,
    PodKey,
    TelemetryStep,
)
from embedded.scheduler import Placement
from simulator.figures import FigureRecorder
from simulator.report import table
from simulator.seeds import SeededFigures, SeededResult
from simulator.world import World
from tas.cluster.interface import NotFoundError
from tas.cluster.model import Pod
from tas.metrics.textfile import write_node_series
from tas.policies.model import parse_policy
from tas.types import Namespace, NodeName


def series_of(metric: str) -> str:
    """The textfile series a policy rule on `metric` reads (the node_ prefix convention)."""
    return metric if metric.startswith("node_") else f"node_{metric}"


class ScenarioTelemetry:
    """Moves the world to wall time x speed and writes its node metrics (see the module)."""

    def __init__(
        self, world: World, directory: Path, *, speed: float, started: float, seed: int
    ) -> None:
        self._world = world
        self._directory = directory
        self._speed = speed
        self._started = started
        self._seed = seed
        self._gauges: dict[tuple[str, NodeName], float] = {}
        scenario = world.scenario
        self._figures = FigureRecorder(
            world, [parse_policy(d) for d in scenario.policies], warmup=scenario.warmup
        )
        #: Scenario seconds the figures have counted (None: not one step yet).
        self._counted: float | None = None
        #: The end's table, made once (`FigureRecorder.finish` closes the open episodes).
        self._summary: str | None = None

    @property
    def elapsed(self) -> float:
        """Seconds into the scenario."""
        return self._world.clock.elapsed

    @property
    def finished(self) -> bool:
        return self.elapsed >= self._world.scenario.duration

    def step(self, now: float) -> TelemetryStep:
        world = self._world
        scenario = world.scenario
        t = min(scenario.duration, max(world.clock.elapsed, (now - self._started) * self._speed))
        world.clock.advance_to(t)
        for event in world.due_events(t):
            world.apply(event, t)
        state = world.model(t)
        if world.kill_out_of_memory(state):
            state = world.model(t)
        if self._counted is None or t > self._counted:
            # One model step per tick: the time since the last one is what it stands for.
            self._figures.model(state, t - (self._counted or 0.0))
            self._counted = t
        outage = any(start <= t < end for start, end in world.outages)
        loads: dict[NodeName, NodeLoad] = {}
        for i, node in enumerate(world.node_names):
            if not state.present[i]:
                continue
            load = NodeLoad(
                node=node,
                cores=float(state.cores[i]),
                cpu_demand=float(state.demand[i]),
                cpu_utilization=float(state.utilization[i]),
                cpu_pressure=float(state.pressure[i]),
                memory_used=float(state.memory_used[i]),
                memory_utilization=float(state.memory_utilization[i]),
                memory_pressure=float(state.memory_pressure[i]),
            )
            loads[node] = load
            if not outage:
                write_node_series(self._directory, node, self._values(load, t))
        pod_cpu: dict[PodKey, float] = {}
        for slot, name in enumerate(world.slot_pod):
            if name is not None and bool(state.running[slot]):
                workload = scenario.workloads[world.slot_workload[slot]]
                pod_cpu[(Namespace(workload.namespace), name)] = float(state.slot_cpu[slot])
        return TelemetryStep(time=now, nodes=loads, pod_cpu=pod_cpu)

    def placed(self, placements: Sequence[Placement]) -> None:
        """The scheduler's pass, judged by the figures (until the scenario's end)."""
        if not self.finished:
            self._figures.placed(placements)

    def evicted(self, report: CycleReport) -> None:
        """A descheduling cycle's evictions, counted by the figures (until the end)."""
        if self.finished:
            return
        world = self._world
        slots = [
            slot
            for d in report.decisions
            if d.result == Result.EVICTED
            and (slot := world.slot_of(d.namespace, d.name)) is not None
        ]
        self._figures.evicted(self.elapsed, slots)

    def summary(self) -> str | None:
        """At the end, the table `tas simulate` prints, for this run as `ours`."""
        if self._summary is None and self.finished:
            figures = SeededFigures("ours", {self._seed: self._figures.finish()})
            result = SeededResult(
                scenario=self._world.scenario, seeds=[self._seed], contenders={"ours": figures}
            )
            self._summary = table(result)
        return self._summary

    def describe(self) -> dict[str, Any]:
        """The scenario as the page shows it (the state's `scenario`)."""
        scenario = self._world.scenario
        clock = self._world.clock
        return {
            "name": scenario.name,
            "description": scenario.description.strip(),
            "duration": scenario.duration,
            "elapsed": round(self.elapsed, 3),
            "speed": self._speed,
            # The scenario clock's Unix time at 0 s: every time on the page is on this clock.
            "start": clock.epoch(0.0),
            "finished": self.finished,
            "seed": self._seed,
            "summary": self.summary(),
        }

    def _values(self, load: NodeLoad, t: float) -> dict[str, float]:
        values = {
            CPU_UTILIZATION: round(load.cpu_utilization, 4),
            CPU_PRESSURE: round(load.cpu_pressure, 4),
            MEMORY_UTILIZATION: round(load.memory_utilization, 4),
            MEMORY_PRESSURE: round(load.memory_pressure, 4),
        }
        # Event-set gauges (health_metric ...) only when they change: `tas set-health` stays.
        for metric, column in self._world.gauges.items():
            value = column.get(load.node)
            if value is not None and self._gauges.get((metric, load.node)) != value:
                self._gauges[(metric, load.node)] = value
                values[series_of(metric)] = value
        for start, end, metric, value, nodes in self._world.bogus:
            if start <= t < end and (not nodes or load.node in nodes):
                values[series_of(metric)] = value
        return values


class ScenarioControls:
    """The dashboard's controls on a scenario's world: health and scaling; load comes from the
    scenario's own workloads."""

    def __init__(self, world: World, metrics_dir: Path) -> None:
        self._world = world
        self.cluster = world.cluster
        self.metrics_dir = metrics_dir

    def set_health(self, node: str, value: float) -> None:
        self._node(node)
        if isinstance(value, bool) or not math.isfinite(value):
            raise DemoError(f"value must be a finite number, not {value!r}", status=422)
        write_node_series(self.metrics_dir, node, {HEALTH_SERIES: value})

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
            raise DemoError(f"no deployment named {name!r}", status=404)
        spec = world.scenario.workloads[index]
        if spec.kind == "DaemonSet":
            raise DemoError(f"{name} is a DaemonSet: one pod per node, not scalable", status=409)
        before = self._live(index)
        world.scale(spec, replicas, self._world.clock.elapsed, burst=False)
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
            raise DemoError(f"no node named {node!r}", status=404) from None
