"""The hindsight placement: an achievable reference, tighter than the fluid limit.

A reference for every comparison (issue 46), not a contender: it runs no scheduler. Knowing
every pod's whole future usage, it places each pod once (the initial pods at the start, a
scale event's when it fires), on a node that is schedulable for it at that moment (ready, not
cordoned, taints tolerated, selector and affinity matched, as `tas_simulator.limit` checks them),
whole (a pod is indivisible), where its requests fit beside those of the pods placed there
for as long as it lives (kube-scheduler's resource fit: every contender schedules through it,
so a placement past the requests would be one none of them could make), and never moves it
afterwards, so nothing restarts. A pod may
instead wait, as a pending pod does, for a node that becomes schedulable for it later (one
that joins, is uncordoned or untainted), losing its demand until it has started there.

The placement is a greedy over the pods ordered by their peak demand, the largest first: each
goes where (and from when) its whole future adds the least work lost, then the least stall,
to what the pods already placed will use; then a few passes take each pod out and put it back
where it now adds the least (a pod placed early met none of the later ones). On a large fleet
only the least used few of the allowed nodes are weighed for each pod.

What it is: a placement a clairvoyant scheduler that never moves anything could make, so its
figures (`work_lost`, `stall`, in the units and after the warm-up of `tas_simulator.figures`) are
achievable. What it is not: a lower bound. A scheduler that moves pods as load shifts can beat
it, and the greedy is not optimal; the fluid limit (`tas_simulator.limit`) stays the outer bound,
never above this one on work lost nor on stall + work lost (the tests check both): every
placement here is one the limit's divisible demand may take, over no more nodes.

Accounting, as the limit's: demand of a pod a scale event has just created counts as lost during
the start-up delay (and a pod that waits for a later node, until it has started); a pod no node
ever allows, or none has room for, never runs (its demand is lost: a scheduler could place it
once room frees, so this is where the reference is loosest); a scale-down removes the newest
pods (`tas_simulator.limit.apply_due`), so the usage streams are the limit's.

A pod whose node leaves (remove-nodes) or fails (a set-health `fail-after`) is re-placed when
its owner would recreate it, as every contender's is (`tas_simulator.world`): at once for a node
that leaves (the pod garbage collector deletes its pods); for a node that fails, once the taint
manager deletes its pods (the node monitor's grace period and the unreachable taint's 300 s),
and never for a StatefulSet's pod or one that tolerates the taint, which stay lost, as they do
in the world. Its demand is lost from the node's going to the replacement's start (its own
drawn start-up, as that start of that pod takes for a contender); the replacement goes where it
adds the least, like any pod. That is not a move the reference chooses: every scheduler's pods
are recreated so. Each node's pressure
is the world's true curve (`_cost`, the one call to the pressure model). The world is stepped
through its events and usage model only, like the limit, so this costs a fraction of one
contender's run.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from tas.types import NodeName
from tas_simulator.clock import VirtualClock
from tas_simulator.figures import Figures
from tas_simulator.limit import _admit, _probe, apply_due
from tas_simulator.pressure_model import Cells, NodeCurves
from tas_simulator.scenario import EventKind, Scenario
from tas_simulator.world import UNREACHABLE_TAINTS, World, startup_of

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: At most this many allowed nodes are weighed for a pod: those least used over its lifetime
#: (on a fleet of hundreds of nodes, weighing every one costs minutes and changes little).
_WEIGHED = 24
#: At most this many times at which a pod may be placed (its creation, then steps where more
#: nodes became schedulable for it).
_OPTIONS = 4
#: Passes of re-placing each pod, with every other pod placed, after the greedy.
_PASSES = 2
#: Two added work losses closer than this (core-seconds) are a tie, decided by stall.
_TIE = 1e-9
#: At most this many replacements of one pod are followed (each after its node left or failed).
_REPLACEMENTS = 8

#: Where one pod runs until its node goes: the node, the usage it runs there per step (zero
#: before it has started and after the node has gone), and the steps it holds its requests there.
Segment = tuple[int, FloatArray, BoolArray]
#: A pod's placement: its first node, then each replacement's after a node left or failed.
Choice = tuple[Segment, ...]


class _Timeline:
    """What the world does over the run, step by step, with no pod placed: each slot's usage
    while it runs, the demand of pods still starting, and the nodes."""

    def __init__(self, scenario: Scenario, seed: int) -> None:
        clock = VirtualClock()
        world = World(scenario, clock=clock, seed=seed)
        probes = [_probe(world, w) for w in range(len(scenario.workloads))]
        allowed = np.zeros((len(probes), 0), dtype=np.bool_)
        born = np.zeros(0)
        steps = max(1, math.floor(scenario.duration / scenario.step + 1e-9))
        self.dt = scenario.step
        self.counted = np.array([i * scenario.step >= scenario.warmup for i in range(steps)])
        running: list[FloatArray] = []
        cores: list[FloatArray] = []
        sizes: list[FloatArray] = []
        memory: list[FloatArray] = []
        present: list[BoolArray] = []
        alive: list[BoolArray] = []
        #: Per slot, when it may be placed and where: the step it was created with the nodes
        #: schedulable then, and later steps where more nodes became schedulable (a pod may
        #: wait for a node that joins, as a pending pod does, losing its demand meanwhile).
        self.options: list[list[tuple[int, BoolArray]]] = []
        #: Per slot, its pod's start-up: the world's draw for its first start, as every
        #: contender's first start of that pod takes (`tas_simulator.world.startup_of`).
        startups = np.zeros(0)
        self.demand_total = 0.0
        self.starting = 0.0
        self.scenario, self.seed = scenario, seed
        #: The allowed masks (workload x node) from each step they were computed at.
        self.allowed_from: list[tuple[int, BoolArray]] = []
        #: Per node index, the steps at which the world deletes the pods bound there, and
        #: why: the node left (every pod's owner recreates it) or failed (the taint manager's
        #: deletion, which a StatefulSet's pod or one tolerating the taint never meets).
        self.deletions: dict[int, list[tuple[int, bool]]] = {}
        #: Per workload: whether its pods stay on a failed node (never recreated elsewhere).
        self.stays_on_failure = [
            w.kind == "StatefulSet"
            or any(t.tolerates(UNREACHABLE_TAINTS[1]) for t in w.tolerations)
            for w in scenario.workloads
        ]
        failed_seen: set[int] = set()
        admitted = False
        capacity_version = world.capacity_version
        for index in range(steps):
            t = index * scenario.step
            clock.advance_to(t)
            due = apply_due(world, born, t)
            for event in due:
                if event.kind is EventKind.REMOVE_NODES:
                    for name in event.nodes:
                        node = world.node_index[NodeName(name)]
                        self.deletions.setdefault(node, []).append((index, False))
            for node, failure in world.failures.items():
                if failure.pods_deleted and node not in failed_seen:
                    failed_seen.add(node)
                    self.deletions.setdefault(node, []).append((index, True))
            if not admitted or due or world.capacity_version != capacity_version:
                # Schedulable now: `_admit` from nothing, so a node counts only as it is now
                # (a node that failed since, by a set-health effect, no longer does).
                capacity_version = world.capacity_version
                allowed = _admit(world, probes, np.zeros((len(probes), 0), dtype=np.bool_))
                self.allowed_from.append((index, allowed))
                admitted = True
            slots = len(world.slot_workload)
            if slots > len(born):
                new = range(len(born), slots)
                born = np.concatenate([born, np.full(len(new), t)])
                startups = np.concatenate(
                    [startups, [startup_of(scenario, seed, slot, 1) for slot in new]]
                )
            workloads = np.asarray(world.slot_workload, dtype=np.int64)
            for slot in range(len(self.options), slots):
                self.options.append([(index, allowed[workloads[slot]].copy())])
            if due and index:
                self._offer_later(index, allowed, workloads, world)
            usage = np.asarray(world.cpu_bank.values(t), dtype=np.float64)
            live = np.array([p is not None for p in world.slot_pod], dtype=np.bool_)
            ready = live & (t >= born + startups)
            running.append(np.where(ready, usage, 0.0))
            alive.append(live)
            size = np.asarray(world.cores.view, dtype=np.float64).copy()
            # What each node serves now: a degraded node a share of its cores, a failed one
            # nothing (a set-health effect, `tas_simulator.world`); its allocatable stays its size.
            serving = np.asarray(world.serving.view, dtype=np.float64)
            sizes.append(size)
            cores.append(size * serving)
            memory.append(np.asarray(world.memory.view, dtype=np.float64).copy())
            present.append((np.asarray(world.present.view) > 0) & (serving > 0))
            if self.counted[index]:
                self.demand_total += float(usage[live].sum()) * self.dt
                self.starting += float(usage[live & ~ready].sum()) * self.dt
        self.usage = _stack(running, len(self.options))
        #: The world's pressure model, and each node's factor in it.
        self.model = scenario.pressure_model
        self.bias = np.asarray(world.pressure_bias.view, dtype=np.float64).copy()
        #: Per slot, the steps from its binding to its running (its first start).
        self.first_ready_after = np.ceil(startups / scenario.step - 1e-9).astype(np.int64)
        self.slot_workload = list(world.slot_workload)
        #: Per slot and step, whether its pod exists (bound or not): while it does, a node it
        #: is placed on holds its requests, as kube-scheduler counts them.
        self.alive = _stack(alive, len(self.options)).astype(np.bool_)
        slot_workloads = world.slot_workload
        #: Per slot, its pod's (cpu, memory) requests.
        self.requests = np.array(
            [
                [
                    scenario.workloads[w].requests.get("cpu", 0.0),
                    scenario.workloads[w].requests.get("memory", 0.0),
                ]
                for w in slot_workloads
            ],
            dtype=np.float64,
        ).reshape(len(slot_workloads), 2)
        #: Per node and step, its allocatable (cpu, memory): the node's size, as the world
        #: gives its nodes (`tas_simulator.world`).
        self.allocatable = np.stack(
            [_stack(sizes, world.node_count), _stack(memory, world.node_count)]
        )
        self.cores = _stack(cores, world.node_count)
        self.present = _stack(present, world.node_count).astype(np.bool_)
        #: Each node's true pressure curve at each step (the world's, `_cost`).
        self.curves = NodeCurves(self.model, self.cores, self.bias)
        self.capacity = self.cores.sum(axis=1)
        #: Per node and step: the first step from then on at which the node serves nothing
        #: (gone or failed; `steps` where it serves to the end), where a pod bound then stops.
        self.stops = np.full(self.present.shape, steps, dtype=np.int64)
        for index in range(steps - 1, -1, -1):
            later = self.stops[:, index + 1] if index + 1 < steps else steps
            self.stops[:, index] = np.where(self.present[:, index], later, index)

    def ready_after(self, slot: int, start: int) -> int:
        """The steps from binding to running of this start of the slot's pod (1: its first)."""
        if start == 1:
            return int(self.first_ready_after[slot])
        seconds = startup_of(self.scenario, self.seed, slot, start)
        return math.ceil(seconds / self.scenario.step - 1e-9)

    def recreated_at(self, slot: int, node: int, stop: int) -> int | None:
        """The step at which the slot's pod, bound to `node` when that node stopped serving at
        `stop`, is deleted and recreated by its owner; None if it never is in the run."""
        stays = self.stays_on_failure[self.slot_workload[slot]]
        for index, failed in self.deletions.get(node, ()):
            if index >= stop and not (failed and stays):
                return index
        return None

    def allowed_at(self, index: int, workload: int) -> BoolArray:
        """The nodes schedulable for the workload's pods at step `index`."""
        mask = self.allowed_from[0][1]
        for since, allowed in self.allowed_from:
            if since > index:
                break
            mask = allowed
        row: BoolArray = mask[workload]
        return row

    def _offer_later(
        self,
        index: int,
        allowed: BoolArray,
        workloads: npt.NDArray[np.int64],
        world: World,
    ) -> None:
        # An option's mask is its workload's row of what was allowed at its step, so slots of
        # one workload offered at the same steps get the same answer: asked once.
        offered: dict[tuple[int, tuple[int, ...]], bool] = {}
        pods, kinds = world.slot_pod, workloads.tolist()
        for slot, options in enumerate(self.options):
            if pods[slot] is None or len(options) >= _OPTIONS:
                continue
            workload = kinds[slot]
            key = (workload, tuple(since for since, _ in options))
            more = offered.get(key)
            if more is None:
                mask = allowed[workload]
                seen = np.zeros_like(mask)
                for _, earlier in options:
                    seen[: len(earlier)] |= earlier
                more = offered[key] = bool((mask & ~seen).any())
            if more:
                options.append((index, allowed[workload].copy()))


def _stack(rows: list[FloatArray] | list[BoolArray], width: int) -> FloatArray:
    """Rows of growing length as one (width x steps) matrix, zero where a row was shorter."""
    out = np.zeros((width, len(rows)), dtype=np.float64)
    for step, row in enumerate(rows):
        out[: len(row), step] = row
    return out


def _cost(timeline: _Timeline, cells: Cells, load: FloatArray) -> tuple[FloatArray, FloatArray]:
    """In these `cells` (nodes x steps) of the timeline, at this `load`: the demand not served
    (above the cores, or all of it on a node that has left) and the pressure, the world's true
    curve (`_Timeline.curves`, the one use of the pressure model)."""
    cores = timeline.cores[cells]
    lost = np.maximum(0.0, load - cores)
    stall = timeline.curves.at(load, cells, cores)
    gone = ~timeline.present[cells]
    if gone.any():
        lost[gone] = load[gone]
        stall[gone] = 0.0
    return lost, stall


class _Placed:
    """The pods placed so far, summed per node and step: their load, the requests they hold,
    and what that load costs now (`_cost`, kept row by row as pods come and go, so weighing a
    pod computes the pressure only of the load with it, not again of the load without)."""

    def __init__(self, timeline: _Timeline) -> None:
        self.timeline = timeline
        self.load = np.zeros_like(timeline.cores)
        #: Each node's load summed over the run (to pick the few to weigh on a large fleet).
        self.totals = np.zeros(len(self.load))
        #: Per resource (cpu, memory), node and step: allocatable less the placed requests.
        self.free = timeline.allocatable.copy()
        #: Per resource and node: the least `free` over the steps it is present, so a pod that
        #: fits within it fits at every step, and only the other nodes are checked step by step.
        self.floor = np.where(timeline.present, self.free, np.inf).min(axis=2, initial=np.inf)
        self.lost, self.stall = _cost(timeline, slice(None), self.load)

    def hold(self, slot: int, choice: Choice, sign: float) -> None:
        """Place (sign 1) or take out (sign -1) the slot's pod as `choice` says."""
        for segment in choice:
            self._hold(slot, segment, sign)

    def _hold(self, slot: int, segment: Segment, sign: float) -> None:
        node, demand, held = segment
        timeline = self.timeline
        self.load[node] += sign * demand
        self.totals[node] += sign * demand.sum()
        self.free[:, node, held] -= sign * timeline.requests[slot][:, None]
        self.floor[:, node] = np.where(timeline.present[node], self.free[:, node], np.inf).min(
            axis=1, initial=np.inf
        )
        steps = np.flatnonzero(demand)
        if not len(steps):
            return
        cells = (node, _span(steps))
        self.lost[cells], self.stall[cells] = _cost(timeline, cells, self.load[cells])


def _best_node(
    placed: _Placed,
    demand: FloatArray,
    candidates: npt.NDArray[np.int64],
    *,
    keep: int | None = None,
) -> tuple[int, float, float]:
    """The candidate node where `demand` adds the least work lost, then the least stall,
    over the counted steps (`keep`, the pod's node now, among the weighed on a large fleet)."""
    timeline = placed.timeline
    steps = np.flatnonzero((demand > 0) & timeline.counted)
    if not len(steps):
        return (int(candidates[0]) if keep is None else keep), 0.0, 0.0
    if len(candidates) > _WEIGHED:
        # Least used over the whole run (cheap to keep), not only over this pod's life.
        used = placed.totals[candidates] / np.maximum(timeline.capacity[candidates], 1e-9)
        candidates = candidates[np.argsort(used, kind="stable")[:_WEIGHED]]
        if keep is not None and keep not in candidates:
            candidates = np.append(candidates, keep)
    span = _span(steps)
    cells = (candidates, span) if isinstance(span, slice) else np.ix_(candidates, steps)
    after = placed.load[cells] + demand[span]
    lost_after, stall_after = _cost(timeline, cells, after)
    lost_before, stall_before = placed.lost[cells], placed.stall[cells]
    added_lost = (lost_after - lost_before).sum(axis=1)
    added_stall = (stall_after - stall_before).sum(axis=1)
    tied = added_lost <= added_lost.min() + _TIE
    if keep is not None:
        # Leave the pod where it is unless elsewhere is better beyond rounding.
        at = int(np.flatnonzero(candidates == keep)[0])
        if added_lost[at] <= added_lost.min() + _TIE and added_stall[at] <= (
            added_stall[tied].min() + _TIE
        ):
            return keep, float(added_lost[at]), float(added_stall[at])
    pick = int(np.flatnonzero(tied)[int(np.argmin(added_stall[tied]))])
    return int(candidates[pick]), float(added_lost[pick]), float(added_stall[pick])


def _span(steps: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | slice:
    """These steps (at least one, rising) as a slice where they run unbroken: indexing with a
    slice costs far less than picking the steps one by one."""
    if steps[-1] - steps[0] + 1 == len(steps):
        return slice(int(steps[0]), int(steps[-1]) + 1)
    return steps


def _fitting(
    placed: _Placed,
    slot: int,
    candidates: npt.NDArray[np.int64],
    held: BoolArray,
) -> npt.NDArray[np.int64]:
    """The candidates whose allocatable holds the pod's requests beside those of the pods
    placed there, at every step it holds them while the node is present (kube-scheduler's
    resource fit, kept for the pod's whole life since nothing moves)."""
    timeline = placed.timeline
    need = timeline.requests[slot]
    steps = np.flatnonzero(held)
    if not len(steps) or not need.any() or not len(candidates):
        return candidates
    short = (placed.floor[:, candidates] < need[:, np.newaxis] - _TIE).any(axis=0)
    doubt = candidates[short]
    if len(doubt):
        cells = np.ix_(doubt, steps)
        present = timeline.present[cells]
        still = np.zeros(len(doubt), dtype=np.bool_)
        for resource in np.flatnonzero(need):
            room = placed.free[resource][cells]
            still |= ((room < need[resource] - _TIE) & present).any(axis=1)
        short[short] = still
    fits: npt.NDArray[np.int64] = candidates[~short]
    return fits


def _best_option(placed: _Placed, slot: int, *, keep: Choice | None = None) -> Choice | None:
    """Where and from when the pod adds the least work lost (its own while it waits, plus
    what it adds to a node), then the least stall, and where each replacement goes after a
    node it runs on leaves or fails; None where no node ever allows it or has room for it."""
    return _best_from(placed, slot, placed.timeline.options[slot], start=1, keep=keep)


def _best_from(
    placed: _Placed,
    slot: int,
    options: list[tuple[int, BoolArray]],
    *,
    start: int,
    keep: Choice | None,
) -> Choice | None:
    """`_best_option` for this start of the slot's pod (1: its first; more: a replacement),
    which may be bound at the step of each of `options`, on the nodes its mask allows."""
    timeline = placed.timeline
    usage = timeline.usage[slot]
    nodes = placed.load.shape[0]
    steps = np.arange(usage.shape[0])
    end = usage.shape[0]
    best: tuple[float, float, Segment, int | None] | None = None
    for begin, mask in options:
        demand = usage
        if start > 1 or begin != timeline.options[slot][0][0]:
            # Bound at `begin`, running only once started (the first start at the slot's
            # creation step is already so in `usage`).
            demand = usage.copy()
            demand[: begin + timeline.ready_after(slot, start)] = 0.0
        allowed = np.flatnonzero(mask[:nodes])
        stops = timeline.stops[allowed, begin] if begin < end else np.full(len(allowed), end)
        # Nodes that go at the same step, with the pod recreated at the same step, are weighed
        # together: the pod runs the same steps on each of them.
        staying = stops >= end
        # A node that serves to the end first: a tie goes to it.
        weighed: list[tuple[tuple[int, int | None], list[int]]] = []
        if staying.any():
            weighed.append(((end, None), allowed[staying].tolist()))
        groups: dict[tuple[int, int | None], list[int]] = {}
        for node, stop in zip(allowed[~staying].tolist(), stops[~staying].tolist(), strict=True):
            groups.setdefault((stop, timeline.recreated_at(slot, node, stop)), []).append(node)
        weighed += sorted(
            groups.items(), key=lambda g: (g[0][0], -1 if g[0][1] is None else g[0][1])
        )
        for (stop, again), members in weighed:
            until = end if again is None else again
            held = timeline.alive[slot] & (steps >= begin) & (steps < until)
            candidates = _fitting(placed, slot, np.array(members, dtype=np.int64), held)
            if not len(candidates):
                continue
            running = demand
            if stop < end:
                running = demand.copy()
                running[stop:] = 0.0
            # What the pod loses beside what it adds to a node: before it runs here, and from
            # the node's going to its replacement's start (all the rest if it never comes).
            lost_until = (
                end if again is None else min(end, again + timeline.ready_after(slot, start + 1))
            )
            gap = (usage - running)[timeline.counted & (steps < lost_until)]
            waiting = float(gap.sum())
            kept = keep[0] if keep else None
            same = kept is not None and np.array_equal(kept[1], running)
            node, lost, stall = _best_node(
                placed, running, candidates, keep=kept[0] if same and kept else None
            )
            key = (lost + waiting, stall)
            if (
                best is None
                or key[0] < best[0] - _TIE
                or (key[0] <= best[0] + _TIE and key[1] < best[1] - _TIE)
            ):
                best = (key[0], key[1], (node, running, held), again)
    if best is None:
        return None
    segment, again = best[2], best[3]
    if (
        again is None
        or again >= end
        or start > _REPLACEMENTS
        or not timeline.alive[slot][again:].any()
    ):
        return (segment,)
    # Its owner recreates the pod: the replacement is bound where it is allowed then (or
    # later, where more nodes become allowed), like any new pod.
    workload = timeline.slot_workload[slot]
    later = [(i, m) for i, m in timeline.options[slot] if i > again]
    allowed_then = timeline.allowed_at(again, workload)
    allowed_then = allowed_then & timeline.present[: len(allowed_then), again]
    rest = _best_from(
        placed,
        slot,
        [(again, allowed_then), *later],
        start=start + 1,
        keep=keep[1:] if keep and keep[0][0] == segment[0] else None,
    )
    return (segment,) if rest is None else (segment, *rest)


def hindsight_placement(scenario: Scenario, *, seed: int) -> Figures:
    """The hindsight placement's figures for one scenario and seed, in the shape of a
    contender's `work_lost` and `stall` (`tas_simulator.figures`), after the same warm-up."""
    timeline = _Timeline(scenario, seed)
    state = _Placed(timeline)
    counted = timeline.counted
    unplaced = 0.0
    peaks = timeline.usage.max(axis=1) if timeline.usage.size else np.zeros(0)
    order = sorted(range(len(peaks)), key=lambda s: (-float(peaks[s]), s))
    placed: dict[int, Choice] = {}
    for slot in order:
        choice = _best_option(state, slot)
        if choice is None:
            unplaced += float(timeline.usage[slot][counted].sum()) * timeline.dt
            continue
        placed[slot] = choice
        state.hold(slot, choice, 1.0)
    # Greedy first, then passes that take each pod out and put it back where it now adds the
    # least: a pod placed early met none of the pods after it. Each pass never raises the
    # cost (the pod's own place is a candidate).
    for _ in range(_PASSES):
        for slot, current in placed.items():
            state.hold(slot, current, -1.0)
            choice = _best_option(state, slot, keep=current)
            assert choice is not None  # its own place still has room
            placed[slot] = choice
            state.hold(slot, choice, 1.0)
    for slot, choice in placed.items():
        ran = sum((demand for _, demand, _ in choice), np.zeros_like(timeline.usage[slot]))
        unplaced += float((timeline.usage[slot] - ran)[counted].sum()) * timeline.dt
    lost, stall = _cost(timeline, slice(None), state.load)
    dt = timeline.dt
    overflow = float(lost[:, counted].sum()) * dt
    displaced = timeline.starting + unplaced
    total = overflow + displaced
    return {
        "work_lost": {
            "core_seconds": total,
            "share": total / timeline.demand_total if timeline.demand_total > 0 else 0.0,
            "stalled": overflow,
            "displaced": displaced,
        },
        "stall": float(stall[:, counted].sum()) * dt,
    }
