"""The figures: the same numbers for every contender, judged on the model's true values.

- `violating_placements`: pods placed on a node that, at that moment and on true values,
  violated a dontschedule rule of the pod's policy; `unavoidable_placements` counts those where
  every other node the pod fitted on (readiness, selectors, taints, requests) violated it too:
  a scheduler that places the pod at all places it on a violating node (ours' circuit breaker
  failing open in a fleet that truly runs hot), where one that honours the rule leaves it
  pending;
- `evacuation_seconds`: from a node turning violating (true values, a deschedule strategy) to
  the last pod linking that policy leaving it: median and max over the episodes that ended
  that way; `not_evacuated` counts episodes where the node recovered (or the run ended) with
  linked pods still on it;
- `evictions`: the total, the most evictions of one pod (its usage stream, across
  replacements) within any hour, and `deschedule_rule`, those a policy's deschedule rule asked
  for (TASViolations, RemovePodsViolatingNodeAffinity), whether or not the node was emptied
  before it recovered;
- `pressure_spread`: the standard deviation of CPU pressure across nodes, mean and 95th
  percentile over time after the warm-up;
- `hottest_pressure`: the mean over time (after the warm-up) of the highest node pressure;
- `work_lost`: core-seconds of demand not served after the warm-up: stalls (demand above a
  node's cores) plus demand of pods that could not run (pending or starting after an eviction
  or a kill), and its share of all demand. Counting displaced demand keeps evictions honest:
  a pod that is moved does no work while it moves. A degraded node serves a share of its
  cores, so its demand above that share stalls; a failed node's pods run nowhere until their
  replacements run elsewhere, so their demand is displaced (`tas_simulator.world`).
  `displaced_by_strategy` splits off the displaced core-seconds that followed a descheduler's
  evictions, by the plugin that evicted (from the eviction until the pod runs again), and
  `displaced_by_rule` sums those of the plugins that evict for a policy's deschedule rule:
  what obeying the rule cost (the sweep's `why_worse` reads it). `withheld_by_rule` is the
  other thing obeying a rule can cost: core-seconds of demand that went unserved (stalled on
  other nodes, or displaced) while nodes violating a policy's dontschedule or deschedule rule
  (true values) had free cores that could have served it, each step the lesser of the two.
  A contender that honours the rules leaves those cores idle; one that ignores them
  (`requests`) fills them. It is an estimate in the fluid limit's terms (demand free to move),
  read by `why_worse` only to say why a loss happened, never to excuse it;
- `stall`: node-seconds under CPU pressure after the warm-up: PSI `some` (0..1) integrated over
  time on every node and summed. Work lost counts only demand above the cores, so pressure
  below saturation costs nothing there, while the PSI-driven contenders act at 75-88%
  utilization, where the kernel already reports tasks waiting; this is that waiting;
- `pending_seconds`: 95th percentile of the time pods spent pending (pods still pending at the
  end count with the time so far);
- `herd_ratio` (scenarios with a burst): the most pods of the burst placed on one node over the
  fair share (burst size / schedulable nodes);
- `herd_ratio_by_load`: the same most pods over the most a load-balanced placement puts on one
  node (`tas_simulator.fair_share`: water-filling by expected CPU use), which counts an empty node
  that joined a busy fleet as the place for most of the burst;
- `oom_kills`: pods the kernel's OOM killer ended because their node ran out of memory between
  the kubelet's housekeeping passes;
- `kubelet_evictions`: pods the kubelet evicted for node memory pressure (its documented
  order; the node is tainted `node.kubernetes.io/memory-pressure` meanwhile);
- `live_migrations` (scenarios with `migration: live` workloads): evictions KubeVirt turned
  into live migrations (the VM ran on its node while its memory was copied, then paused).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tas.cluster.model import Pod
from tas.fit import rejection
from tas.policies.model import StrategyName, TASPolicy
from tas.rules import deschedule_violations, filter_nodes, violations
from tas.types import MetricColumns, Namespace, NodeName, PolicyKey, PolicyName
from tas.vocabulary import POLICY_LABEL
from tas_inmemory.scheduler import ScheduleResult
from tas_simulator.world import ModelState, World

Figures = dict[str, Any]
#: Time series for the charts keep at most this many points.
MAX_POINTS = 720
#: Nodes drawn one line each; above this, percentile bands.
MAX_NODE_LINES = 24


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


@dataclass
class Series:
    """What the charts draw, sampled every `every` steps."""

    every: int
    t: list[float] = field(default_factory=list)
    utilization: list[list[float]] = field(default_factory=list)
    pressure: list[list[float]] = field(default_factory=list)
    spread: list[float] = field(default_factory=list)
    evictions: list[int] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    banded: bool = False


@dataclass
class _Episode:
    start: float
    had_pods: bool


class FigureRecorder:
    def __init__(
        self,
        world: World,
        policies: Iterable[TASPolicy],
        *,
        warmup: float,
        strategies: Iterable[str] = (),
        rule_strategies: Collection[str] = (),
        node_series: bool = True,
    ) -> None:
        """`strategies`: the descheduler plugins that may evict (each reported, 0 when it did
        not, so seeds average alike); `rule_strategies`: those that evict for a policy's
        deschedule rule; `node_series`: sample each node's utilization and pressure for the
        charts (a sweep, which draws none, keeps only the spread and the evictions)."""
        self.world = world
        self._node_series = node_series
        self.warmup = warmup
        self._rule_strategies = frozenset(rule_strategies)
        #: Displaced core-seconds after the warm-up, by the plugin whose eviction displaced it.
        self.displaced_by: dict[str, float] = dict.fromkeys(strategies, 0.0)
        #: Slots displaced by a plugin's eviction and not running since: slot -> plugin.
        self._displaced_for: dict[int, str] = {}
        self.policies = {p.key: p for p in policies}
        self._dontschedule_names = sorted(
            {
                str(rule.metricname)
                for p in self.policies.values()
                if (s := p.strategy(StrategyName.DONTSCHEDULE)) is not None
                for rule in s.rules
            }
        )
        self._deschedule = [
            p for p in self.policies.values() if p.strategy(StrategyName.DESCHEDULE) is not None
        ]
        self._deschedule_names = sorted(
            {
                str(rule.metricname)
                for p in self._deschedule
                for s in (p.strategy(StrategyName.DESCHEDULE),)
                if s is not None
                for rule in s.rules
            }
        )
        #: The metrics the figures judge on true values (the same every step).
        self._column_names = sorted({*self._dontschedule_names, *self._deschedule_names})
        #: The rules whose violating nodes a contender that honours them keeps pods off.
        self._honoured_rules = [
            strategy
            for p in self.policies.values()
            for name in (StrategyName.DONTSCHEDULE, StrategyName.DESCHEDULE)
            if (strategy := p.strategy(name)) is not None
        ]
        self.withheld = 0.0
        self.violating_placements = 0
        #: Violating placements where every node the pod fitted on violated too (a scheduler
        #: that places it at all must place it on a violating node; TAS leaves it pending).
        self.unavoidable_placements = 0
        self.placements = 0
        self.evictions: list[tuple[float, int]] = []
        self.rule_evictions = 0
        self.spreads: list[float] = []
        self.hottest: list[float] = []
        self.demand = 0.0
        self.stalled = 0.0
        self.displaced = 0.0
        self.stall = 0.0
        self._episodes: dict[tuple[PolicyKey, NodeName], _Episode] = {}
        self._linked: tuple[int, dict[tuple[PolicyKey, NodeName], int]] | None = None
        self.evacuations: list[float] = []
        self.not_evacuated = 0
        steps = max(1, round(world.scenario.duration / world.scenario.step))
        self.series = Series(every=max(1, math.ceil(steps / MAX_POINTS)))
        self._step = 0
        self._columns: MetricColumns = {}

    # ----------------------------------------------------------------------- per step

    def model(self, state: ModelState, dt: float) -> None:
        """Record one step of the model (before this step's scheduling)."""
        self._columns = self.world.true_columns(state, self._column_names)
        present = state.present
        pressure = state.pressure[present]
        spread = float(pressure.std()) if len(pressure) else 0.0
        if state.t >= self.warmup:
            self.spreads.append(spread)
            self.hottest.append(float(pressure.max()) if len(pressure) else 0.0)
            self.demand += state.demand_total * dt
            self.stalled += state.stalled * dt
            self.displaced += state.displaced * dt
            self.stall += float(pressure.sum()) * dt
            if self._honoured_rules and (state.stalled or state.displaced):
                self.withheld += self._withheld(state) * dt
        if self._displaced_for:
            self._attribute(state, dt if state.t >= self.warmup else 0.0)
        self._track_violations(state.t)
        if self._step % self.series.every == 0:
            self._sample(state, spread)
        self._step += 1

    def _withheld(self, state: ModelState) -> float:
        """Cores of demand unserved off the nodes violating a rule (true values) that those
        nodes' free cores could have served this step (`withheld_by_rule`)."""
        violating: set[NodeName] = set()
        for strategy in self._honoured_rules:
            violating.update(violations(strategy, self._columns))
        if not violating:
            return 0.0
        index = self.world.node_index
        ruled = np.zeros(len(state.present), dtype=np.bool_)
        ruled[[index[n] for n in violating if n in index]] = True
        ruled &= state.present
        free = float(np.maximum(state.cores - state.demand, 0.0)[ruled].sum())
        elsewhere = state.present & ~ruled
        overload = np.maximum(state.demand - state.cores, 0.0)
        unserved = state.displaced + float(overload[elsewhere].sum())
        return min(free, unserved)

    def _attribute(self, state: ModelState, dt: float) -> None:
        """The displaced demand of pods a plugin evicted, to that plugin, until they run."""
        displaced = state.displaced_slots
        for slot, strategy in list(self._displaced_for.items()):
            if state.running[slot]:
                del self._displaced_for[slot]
            elif displaced[slot] and dt > 0:
                self.displaced_by[strategy] += float(state.slot_cpu[slot]) * dt

    def _sample(self, state: ModelState, spread: float) -> None:
        series = self.series
        present = np.flatnonzero(state.present)
        series.t.append(state.t)
        series.evictions.append(len(self.evictions))
        series.spread.append(spread)
        if not self._node_series:
            return
        if self.world.node_count <= MAX_NODE_LINES:
            series.nodes = list(self.world.node_names)
            series.utilization.append(
                [
                    float(v) if state.present[i] else math.nan
                    for i, v in enumerate(state.utilization)
                ]
            )
            series.pressure.append(
                [float(v) if state.present[i] else math.nan for i, v in enumerate(state.pressure)]
            )
        else:
            series.banded = True
            series.nodes = ["min", "median", "p90", "max"]
            for values, target in (
                (state.utilization[present], series.utilization),
                (state.pressure[present], series.pressure),
            ):
                if len(values):
                    target.append([float(v) for v in np.percentile(values, (0, 50, 90, 100))])
                else:
                    target.append([math.nan] * 4)

    def _track_violations(self, t: float) -> None:
        if not self._deschedule:
            return
        current: set[tuple[PolicyKey, NodeName]] = set()
        for policy in self._deschedule:
            for node in deschedule_violations(policy, self._columns):
                current.add((policy.key, node))
        if not current and not self._episodes:
            return
        linked = self._linked_pods()
        for key in current - self._episodes.keys():
            self._episodes[key] = _Episode(t, linked.get(key, 0) > 0)
        for key, episode in list(self._episodes.items()):
            still = key in current
            pods = linked.get(key, 0)
            if not episode.had_pods:
                if not still:
                    del self._episodes[key]
                continue
            if pods == 0:
                self.evacuations.append(t - episode.start)
                if still:
                    episode.had_pods = False  # evacuated; stays open until the node recovers
                else:
                    del self._episodes[key]
            elif not still:
                self.not_evacuated += 1
                del self._episodes[key]

    def _linked_pods(self) -> dict[tuple[PolicyKey, NodeName], int]:
        """Pods linking each deschedule policy, per node; kept until the cluster changes (a
        violation may last many steps while no pod moves)."""
        version = self.world.cluster.version
        if self._linked is not None and self._linked[0] == version:
            return self._linked[1]
        counts: dict[tuple[PolicyKey, NodeName], int] = {}
        keys = {p.key for p in self._deschedule}
        for pod in self.world.cluster.list_pods():
            name = pod.labels.get(POLICY_LABEL)
            if not name or pod.node_name is None:
                continue
            key = PolicyKey(Namespace(pod.namespace), PolicyName(name))
            if key in keys:
                counts[(key, pod.node_name)] = counts.get((key, pod.node_name), 0) + 1
        self._linked = (version, counts)
        return counts

    def placed(self, placements: Sequence[ScheduleResult]) -> None:
        """Judge each placement on true values: did the node violate the pod's dontschedule?"""
        for placement in placements:
            if placement.node is None:
                continue
            self.placements += 1
            namespace, _, name = placement.pod.partition("/")
            try:
                pod = self.world.cluster.get_pod(Namespace(namespace), name)
            except Exception:
                continue
            policy_name = pod.labels.get(POLICY_LABEL)
            if not policy_name:
                continue
            policy = self.policies.get(PolicyKey(Namespace(namespace), PolicyName(policy_name)))
            if policy is None:
                continue
            if filter_nodes(policy, self._columns, [placement.node]).failed:
                self.violating_placements += 1
                if not self._a_node_was_fine(pod, policy):
                    self.unavoidable_placements += 1

    def _a_node_was_fine(self, pod: Pod, policy: TASPolicy) -> bool:
        """Some node kube-scheduler would have accepted the pod on (readiness, selectors,
        taints, requests) did not violate its dontschedule rule, on true values: the violating
        placement could have been avoided. Asked only of violating placements (rare); the
        rule is judged first, so a fleet that violates everywhere lists no pods."""
        cluster = self.world.cluster
        nodes = {n.name: n for n in cluster.list_nodes() if n.name != pod.node_name}
        fine = filter_nodes(policy, self._columns, list(nodes)).passed
        if not fine:
            return False
        by_node: dict[NodeName, list[Pod]] = {}
        for other in cluster.list_pods():
            if other.node_name is not None:
                by_node.setdefault(other.node_name, []).append(other)
        return any(
            rejection(pod, nodes[name], pods_on_node=by_node.get(name, ())) is None for name in fine
        )

    def evicted(
        self,
        t: float,
        slots: Iterable[int],
        *,
        for_deschedule_rule: int = 0,
        strategies: Sequence[str] = (),
    ) -> None:
        """Pods evicted at `t` (their usage streams); `for_deschedule_rule` of them because a
        policy's deschedule rule named their node; `strategies`, when given, the plugin that
        evicted each (in the order of `slots`), which their displaced demand is charged to."""
        slots = list(slots)
        self.evictions.extend((t, slot) for slot in slots)
        self.rule_evictions += for_deschedule_rule
        if strategies:
            for slot, strategy in zip(slots, strategies, strict=True):
                self._displaced_for[slot] = strategy
                self.displaced_by.setdefault(strategy, 0.0)

    # -------------------------------------------------------------------- the figures

    def finish(self) -> Figures:
        world = self.world
        for episode in self._episodes.values():
            if episode.had_pods:
                self.not_evacuated += 1
        per_slot: dict[int, list[float]] = {}
        for t, slot in self.evictions:
            per_slot.setdefault(slot, []).append(t)
        worst = 0
        for times in per_slot.values():
            times.sort()
            start = 0
            for end, t in enumerate(times):
                while t - times[start] >= 3600.0:
                    start += 1
                worst = max(worst, end - start + 1)
        waits = [*world.pending_durations, *world.still_pending()]
        lost = self.stalled + self.displaced
        figures: Figures = {
            "violating_placements": self.violating_placements,
            "unavoidable_placements": self.unavoidable_placements,
            "evacuation_seconds": {
                "median": statistics.median(self.evacuations) if self.evacuations else None,
                "max": max(self.evacuations) if self.evacuations else None,
                "evacuated": len(self.evacuations),
                "not_evacuated": self.not_evacuated,
            },
            "evictions": {
                "total": len(self.evictions),
                "max_per_pod_hour": worst,
                "deschedule_rule": self.rule_evictions,
            },
            "pressure_spread": {
                "mean": statistics.fmean(self.spreads) if self.spreads else 0.0,
                "p95": percentile(self.spreads, 95),
            },
            "hottest_pressure": statistics.fmean(self.hottest) if self.hottest else 0.0,
            "work_lost": {
                "core_seconds": lost,
                "share": lost / self.demand if self.demand > 0 else 0.0,
                "stalled": self.stalled,
                "displaced": self.displaced,
                "displaced_by_rule": math.fsum(
                    v for k, v in self.displaced_by.items() if k in self._rule_strategies
                ),
                "displaced_by_strategy": dict(sorted(self.displaced_by.items())),
                "withheld_by_rule": self.withheld,
            },
            "stall": self.stall,
            "pending_seconds": {"p95": percentile(waits, 95)},
            "oom_kills": world.oom_kills,
            "kubelet_evictions": world.kubelet_evictions,
        }
        if any(w.migration == "live" for w in world.scenario.workloads):
            figures["live_migrations"] = world.migrations
        if world.bursts:
            by_count, by_load = [], []
            for burst in world.bursts:
                fair = len(burst.pods) / max(1, burst.schedulable_nodes)
                most = max(burst.placed.values(), default=0)
                by_count.append(most / fair if fair > 0 else 0.0)
                by_load.append(most / burst.balanced_most)
            figures["herd_ratio"] = max(by_count)
            figures["herd_ratio_by_load"] = max(by_load)
        return figures
