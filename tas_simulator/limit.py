"""The fluid limit: the least work lost and the least stall any placement could reach.

A reference for every comparison (issue 23), not a contender: it schedules nothing. Each step,
the demand of every pod that should be running is treated as divisible and free to move
between nodes within the same node capacities, and two figures are computed analytically
from the same world the contenders are judged in (`tas_simulator.world`,
`tas_simulator.pressure_model`):

- **work lost**: demand that no placement can serve this step. That is the demand above the
  capacity of the nodes the pods' constraints allow: with the pods grouped by the set of nodes
  they may use, a max-flow/min-cut bound (the deficiency form of Hall's theorem): the most,
  over every union A of groups, of demand(A) - cores(nodes allowed to A). With one group that
  is demand above total capacity. A node counts as allowed to a group once it has been
  schedulable for it (ready, not cordoned, taints tolerated, selector and affinity matched) at
  some step since it joined: a cordon or a NoSchedule taint added later leaves the pods
  already there running, so a contender could still use it. Add to that the demand of pods a
  scale event has just created, during the start-up delay: no system runs a pod before it has
  been created and started;
- **stall** (PSI `some` summed over nodes, as `tas_simulator.figures`): the least of any placement
  that loses no more work than that, i.e. one that keeps every node within its cores. Each
  node's pressure is the world's true curve at its load (`tas_simulator.pressure_model`: the bursty
  model with the node's own factor, without the reading's noise, or Erlang C where a scenario
  names it); the least
  sum for the served demand is a water filling over each node's convex envelope (the curve
  itself where it is convex), cheapest slopes first. On identical nodes
  that is equalized utilization; on mixed sizes the larger nodes take more (they wait less at
  the same utilization), so equalized utilization would not be the least.

Stall alone can be beaten, by losing more work: an overloaded node stalls no more than a full
one, and pods pending or starting add no pressure. A core-second of demand served where it
adds more than a node-second of stall could instead be lost for one core-second, so the water
filling counts every stretch of an envelope at most 1 per core (Erlang C never rises faster:
its steepest, one server, is the load itself; the bursty model does on small nodes at high
burstiness, a 1-core node up to several per core). So no placement has a lower stall + work
lost (node-seconds + core-seconds) than the limit, whatever the curve; the tests check both
bounds.

Nothing evicts, nothing restarts, memory is not modelled (an OOM kill only adds work lost).
A set-health's effect counts from the step it holds: a degraded node offers the share of its
cores it serves, a failed node none (`tas_simulator.world`); a failed node's pods are as free to
move as any, so the bound charges nothing for the taint-based eviction's delay; so are the pods
of a node that leaves, with no restart charged either (the hindsight placement, an achievable
placement, re-places such pods only when Kubernetes recreates them, after their start-up).
A scale-down removes the newest pods, as it does where every pod runs: which usage streams
remain is then the contenders' (a contender with pods still pending may keep others).
The world is stepped through its events and its usage model only (no scheduler, no
pipeline), so this costs a fraction of one contender's run.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from tas.cluster.model import Node, Pod
from tas.fit import matches_node_selection, untolerated_taint
from tas.types import Namespace
from tas_simulator.clock import VirtualClock
from tas_simulator.figures import Figures
from tas_simulator.pressure_model import pressures
from tas_simulator.scenario import Event, EventKind, PressureModel, Scenario
from tas_simulator.world import World

FloatArray = npt.NDArray[np.float64]

#: Utilization points at which a node's pressure curve is sampled for its convex envelope: the
#: workload model's own table grid (`tas_inmemory.workload`: 2001 points over 0..1), so the
#: envelope of these points lies under the curve the figures are judged on everywhere.
_GRID = np.linspace(0.0, 1.0, 2001)
#: Above this many distinct node sets, only the single groups and their union are checked
#: (still a lower bound, only less tight); named and drawn scenarios have a handful.
_MAX_EXACT_GROUPS = 12
#: Node-seconds of stall per core-second of demand lost: where serving demand would add more
#: stall than this, a placement may lose it instead (the module docstring's joint bound).
_LOST_INSTEAD = 1.0


@functools.lru_cache(maxsize=4096)
def _envelope(cores: float, bias: float, model: PressureModel) -> tuple[FloatArray, FloatArray]:
    """The lower convex envelope of one node's pressure against its load (cores), by the
    world's pressure model and the node's factor in it, as segments: (slope, length) with the
    slopes rising (Andrew's monotone chain, lower hull)."""
    x = _GRID * cores
    y = pressures(model, x, np.full_like(x, cores), np.full_like(x, bias))
    hull: list[int] = []
    for i in range(len(x)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # Drop b when it lies on or above the line from a to i.
            if (y[b] - y[a]) * (x[i] - x[a]) >= (y[i] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    points = np.array(hull)
    lengths = np.diff(x[points])
    slopes = np.diff(y[points]) / np.where(lengths > 0, lengths, 1.0)
    return slopes, lengths


class _StallCurve:
    """The least summed pressure of a set of nodes for a served demand (water filling over
    every node's envelope segments, cheapest first)."""

    def __init__(self, nodes: Sequence[tuple[float, float]], model: PressureModel) -> None:
        """`nodes`: each node's (cores, factor in the pressure model)."""
        slopes: list[FloatArray] = []
        lengths: list[FloatArray] = []
        for (size, bias), count in sorted(_count(nodes).items()):
            s, n = _envelope(size, bias, model)
            slopes.append(s)
            lengths.append(n * count)
        if slopes:
            # Steeper than losing the demand instead: counted at that price (module docstring).
            every_slope = np.minimum(np.concatenate(slopes), _LOST_INSTEAD)
            every_length = np.concatenate(lengths)
            order = np.argsort(every_slope, kind="stable")
            length = every_length[order]
            cost = every_slope[order] * length
        else:
            length = cost = np.zeros(0)
        self._load = np.concatenate([[0.0], np.cumsum(length)])
        self._cost = np.concatenate([[0.0], np.cumsum(cost)])

    def least(self, served: float) -> float:
        if served <= 0.0:
            return 0.0
        if served >= self._load[-1]:
            return float(self._cost[-1])
        return float(np.interp(served, self._load, self._cost))


def _count(values: Sequence[tuple[float, float]]) -> dict[tuple[float, float], int]:
    counted: dict[tuple[float, float], int] = {}
    for value in values:
        counted[value] = counted.get(value, 0) + 1
    return counted


class _Epoch:
    """What holds between two steps with events: the nodes, which node sets each workload may
    use, and the cut bounds over unions of those sets."""

    def __init__(self, world: World, allowed: npt.NDArray[np.bool_]) -> None:
        # The cores each node serves now: a degraded node's share, none of a failed one's.
        serving = np.asarray(world.serving.view, dtype=np.float64)
        present = (np.asarray(world.present.view) > 0) & (serving > 0)
        cores = np.asarray(world.cores.view, dtype=np.float64) * serving
        usable = allowed & present[np.newaxis, :]
        sets: dict[bytes, int] = {}
        self.group_of_workload = np.zeros(len(usable), dtype=np.int64)
        masks: list[npt.NDArray[np.bool_]] = []
        for w, row in enumerate(usable):
            key = row.tobytes()
            if key not in sets:
                sets[key] = len(masks)
                masks.append(row)
            self.group_of_workload[w] = sets[key]
        count = len(masks)
        if count <= _MAX_EXACT_GROUPS:
            unions = [
                combo
                for size in range(1, count + 1)
                for combo in itertools.combinations(range(count), size)
            ]
        else:
            unions = [(g,) for g in range(count)] + [tuple(range(count))]
        self.members = np.zeros((len(unions), count), dtype=np.float64)
        self.capacity = np.zeros(len(unions), dtype=np.float64)
        for u, combo in enumerate(unions):
            self.members[u, list(combo)] = 1.0
            nodes = np.zeros(len(present), dtype=np.bool_)
            for g in combo:
                nodes |= masks[g]
            self.capacity[u] = float(cores[nodes].sum())
        self.groups = count
        bias = np.asarray(world.pressure_bias.view, dtype=np.float64)
        self.stall = _StallCurve(
            [(float(c), float(b)) for c, b in zip(cores[present], bias[present], strict=True)],
            world.scenario.pressure_model,
        )

    def unservable(self, demand_by_group: FloatArray) -> float:
        if not len(self.capacity):
            return float(demand_by_group.sum())
        short = self.members @ demand_by_group - self.capacity
        return max(0.0, float(short.max()))


def _probe(world: World, w: int) -> Pod:
    workload = world.scenario.workloads[w]
    return Pod(
        namespace=Namespace(workload.namespace),
        name="probe",
        node_selector=dict(workload.node_selector),
        required_node_affinity=workload.node_affinity,
        tolerations=workload.tolerations,
    )


def _schedulable(pod: Pod, node: Node) -> bool:
    return (
        node.ready
        and not node.unschedulable
        and matches_node_selection(pod, node)
        and untolerated_taint(pod, node.taints) is None
    )


def fluid_limit(scenario: Scenario, *, seed: int) -> Figures:
    """The limit's figures for one scenario and seed, in the shape of a contender's
    `work_lost` and `stall` (`tas_simulator.figures`), after the same warm-up."""
    clock = VirtualClock()
    world = World(scenario, clock=clock, seed=seed)
    probes = [_probe(world, w) for w in range(len(scenario.workloads))]
    #: allowed[w, node index]: the node has been schedulable for workload w since it joined.
    allowed = np.zeros((len(probes), 0), dtype=np.bool_)
    #: When each slot's pod was created by a scale event (the initial pods: time 0).
    born = np.zeros(0)
    steps = max(1, math.floor(scenario.duration / scenario.step + 1e-9))
    demand_total = overflow = starting = stall = 0.0
    epoch: _Epoch | None = None
    capacity_version = world.capacity_version
    for index in range(steps):
        t = index * scenario.step
        clock.advance_to(t)
        due = apply_due(world, born, t)
        slots = len(world.slot_workload)
        if slots > len(born):
            born = np.concatenate([born, np.full(slots - len(born), t)])
        if epoch is None or due or world.capacity_version != capacity_version:
            capacity_version = world.capacity_version
            allowed = _admit(world, probes, allowed)
            epoch = _Epoch(world, allowed)
        if t < scenario.warmup:
            continue
        usage = world.cpu_bank.values(t)
        live = np.array([p is not None for p in world.slot_pod], dtype=np.bool_)
        # Ready when a pod bound in its creation step would be with the least start-up
        # (`World._on_change`; a drawn start-up is never shorter, so this stays a bound).
        ready = live & (t >= born + scenario.startup_delay)
        groups = epoch.group_of_workload[np.asarray(world.slot_workload, dtype=np.int64)]
        by_group = np.bincount(groups[ready], weights=usage[ready], minlength=epoch.groups)
        lost_here = epoch.unservable(by_group.astype(np.float64))
        served = float(by_group.sum()) - lost_here
        dt = scenario.step
        demand_total += float(usage[live].sum()) * dt
        overflow += lost_here * dt
        starting += float(usage[live & ~ready].sum()) * dt
        stall += epoch.stall.least(served) * dt
    lost = overflow + starting
    return {
        "work_lost": {
            "core_seconds": lost,
            "share": lost / demand_total if demand_total > 0 else 0.0,
            "stalled": overflow,
            "displaced": starting,
        },
        "stall": stall,
    }


def apply_due(world: World, born: FloatArray, t: float) -> list[Event]:
    """The scenario's events due by `t`, applied to a world where no pod is placed (a scale
    as `_scale` meets it); returned, so the caller knows the step changed something."""
    due = world.due_events(t)
    for event in due:
        if event.kind is EventKind.SCALE:
            _scale(world, event.workload, event.replicas, born, t)
        else:
            world.apply(event, t)
    return due


def _scale(world: World, name: str, replicas: int, born: FloatArray, t: float) -> None:
    """A scale event as it meets a cluster where every pod runs: scaling down removes the
    newest pods (`World.scale` ranks pending pods first, and here every pod is pending, which
    would remove the oldest streams and leave the limit different demand from the
    contenders')."""
    w = world.workload_index[name]
    workload = world.scenario.workloads[w]
    live = [s for s in world.workload_slots[w] if world.slot_pod[s] is not None]
    if replicas >= len(live):
        world.scale(workload, replicas, t, burst=False)
        return
    newest = sorted(live, key=lambda s: (-float(born[s]) if s < len(born) else -t, -s))
    for slot in newest[: len(live) - replicas]:
        pod = world.slot_pod[slot]
        assert pod is not None
        world.cluster.remove_pod(Namespace(workload.namespace), pod)


def _admit(
    world: World, probes: Sequence[Pod], allowed: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """`allowed` grown to the world's nodes, with the nodes schedulable now added; a node
    that has left forgets what it allowed (a node of that name joining later is new)."""
    n = world.node_count
    grown = np.zeros((len(probes), n), dtype=np.bool_)
    grown[:, : allowed.shape[1]] = allowed
    present = np.asarray(world.present.view) > 0
    grown[:, ~present] = False
    for node in world.cluster.list_nodes():
        i = world.node_index[node.name]
        for w, probe in enumerate(probes):
            if not grown[w, i] and _schedulable(probe, node):
                grown[w, i] = True
    return grown
