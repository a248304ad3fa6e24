"""The stall model: on the CPU signals, a move must pay (the formulas in `tas.pressure`).

A node whose pressure is below `atRiskPressure`, whose recent crest stayed below
`atRiskCrestPressure`, or whose measured utilization came nowhere near full
(`atRiskCrestUtilization`), is not rebalanced, however uneven; a pod moves only when the stall it is
predicted to take off its node, less what it adds to the fitting node that would stall least
with it, exceeds what its restart costs, and never when it would make that node the next hot
one; a pod nothing describes stays (never a move on a guess). The prediction is in the
eviction's reason; a clear gain (`clearGain` times the cost) waits half the owner cooldown and
may move several pods of one owner in a cycle (`CLEAR_COOLDOWN_SHARE`). A replacement of a
moved pod is left to settle (`settle_left`).
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from descheduler.framework import PluginContext, PodUsage
from descheduler.node_classes import Category, Classification
from descheduler.plugins.load_aware.args import CPU_LOAD, LoadAwareArgs
from descheduler.plugins.load_aware.moves import Decline, Move, MoveCandidate
from descheduler.plugins.load_aware.peaks import RecentPeaks
from descheduler.room import cpu_cores, pod_cpu_cores
from descheduler.settling import SETTLE_SECONDS, MoveHistory, NoMoves, settle_left
from descheduler.signals import Signal
from descheduler.startup import owner_of, owner_startups
from descheduler.state import CycleState
from tas.calibration.curve import Curves
from tas.cluster.model import Pod
from tas.pressure import MoveCost, NodeLoad, Prediction, predict
from tas.types import MetricColumns, MetricName, NodeName

log = logging.getLogger(__name__)

#: A clear gain waits this share of the owner cooldown, and may move several pods of one
#: owner per cycle.
CLEAR_COOLDOWN_SHARE = 0.5


#: Pressures this close are one (the stall model's arithmetic cannot tell them apart more
#: finely), so scanning a size in load order never stops before an equal one.
_SAME_PRESSURE = 1e-12


@dataclass
class StallModel:
    """A move must pay: each node's load as measured, and what a move is predicted to do.

    The load is anchored on the measurements (`tas.pressure.NodeLoad.measured`: utilization
    times cores, or the load the measured PSI implies where that says more), and moves made
    this cycle are added to it, so each prediction sees the moves before it. A destination is
    judged at its peak over the payback horizon (`descheduler.plugins.load_aware.peaks`): the
    pod moved there stays through the node's next crest, whatever trough this cycle read.
    """

    args: LoadAwareArgs
    #: Each node's load now: what a source is relieved from.
    loads: dict[NodeName, NodeLoad]
    #: Each node's load at its recent peak: what a destination must make room in.
    peak_loads: dict[NodeName, NodeLoad]

    #: Each node's highest measured CPU utilization (0..1) within the payback horizon, where
    #: it is measured: a node that came nowhere near full is not rebalanced.
    peak_utilization: Mapping[NodeName, float] = field(default_factory=dict)
    #: Sources confirmed: overutilized at `confirmCycles` cycles in a row (this one included).
    confirmed: frozenset[NodeName] = frozenset()
    #: Nodes no pod is moved to: evacuated (a policy's deschedule rule) within the cooldown, or
    #: again and again within `avoidEvacuatedSeconds`, so a flapping health metric does not
    #: have rebalancing fill a node it will empty again.
    avoid: frozenset[NodeName] = frozenset()
    #: Each owner's start-up, from its running pods (`descheduler.startup`): what its moves
    #: cost when longer than `restartSeconds`.
    startups: Mapping[tuple[str, str, str], float] = field(default_factory=dict)
    #: The evictions remembered (LoadAware's, `descheduler.settling`): which pods are
    #: replacements of moved ones, left to settle.
    moves: MoveHistory = field(default_factory=NoMoves)
    #: Each node's load average per CPU (`cpu_load`, at most 1), where it is measured and
    #: `atRiskLoad` reads it: below `atRiskLoad`, a move off the node must gain `servedGain`.
    cpu_load: Mapping[NodeName, float] = field(default_factory=dict)
    #: `peak_loads` by curve (`NodeLoad.curve_key`), in load order (`_by_size`).
    _sizes: dict[tuple[int, float], list[tuple[float, NodeName]]] | None = field(
        default=None, repr=False
    )
    #: The nodes whose "left to settle" line is said this cycle.
    _settle_said: set[NodeName] = field(default_factory=set, repr=False)

    @classmethod
    def of(
        cls,
        args: LoadAwareArgs,
        state: CycleState,
        metrics: MetricColumns,
        c: Classification,
        measured: PodUsage,
        *,
        avoid: Collection[NodeName] = (),
        confirmed: Collection[NodeName] = (),
        peaks: RecentPeaks | None = None,
        curves: Curves | None = None,
        startups: Mapping[tuple[str, str, str], float] | None = None,
        moves: MoveHistory | None = None,
    ) -> StallModel:
        """`metrics`: the cycle's values, with idle nodes' estimates
        (`descheduler.plugins.load_aware.idle`); `curves`: each node's learned pressure curve
        (`tas.calibration.curve`), the shared model for a node not named or on its fallback;
        `startups`: each owner's start-up where the caller has read them this cycle (else read
        here, when `learnRestartSeconds`); `moves`: the evictions remembered (None: none)."""
        learned = curves or {}
        utilization = metrics.get(MetricName(Signal.CPU_UTILIZATION), {})
        psi = metrics.get(MetricName(Signal.CPU_PRESSURE), {})
        peak_utilization, peak_psi = utilization, psi
        if peaks is not None:

            def recent(signal: Signal) -> Mapping[NodeName, float]:
                return peaks.peak(MetricName(signal), within=args.payback_seconds, now=state.now)

            peak_utilization = _higher(utilization, recent(Signal.CPU_UTILIZATION))
            peak_psi = _higher(psi, recent(Signal.CPU_PRESSURE))
        loads: dict[NodeName, NodeLoad] = {}
        peak_loads: dict[NodeName, NodeLoad] = {}
        for name in c.categories:
            node = state.nodes.get(name)
            cores = node.allocatable.get("cpu", 0.0) if node is not None else 0.0
            if cores <= 0 or (name not in utilization and name not in psi):
                continue  # nothing to predict with: the node is never rebalanced on a guess
            curve = learned.get(name)
            servers = curve.override if curve is not None else 0
            load = NodeLoad.measured(
                cores, utilization=utilization.get(name), psi=psi.get(name), servers=servers
            )
            peak = NodeLoad.measured(
                cores,
                utilization=peak_utilization.get(name),
                psi=peak_psi.get(name),
                servers=servers,
            )
            if measured and name in utilization:
                # The node's metrics lag its pods: pods that arrived since are not in them yet,
                # pods that left still are. Where per-pod usage is measured, the pods on the
                # node now (measured, or their requests until they are) correct the load by
                # what changed since: without it the next cycle would move pods again onto a
                # node that already received, and off one that already gave.
                now = sum(pod_cpu_cores(p, measured, cores) for p in state.pods_on(name))
                since = now - utilization[name] * cores
                load, peak = load.plus(since), peak.plus(since)
            loads[name] = load
            peak_loads[name] = peak
        if not args.learn_restart_seconds:
            startups = {}
        elif startups is None:
            startups = owner_startups(state.pods)
        return cls(
            args,
            loads,
            peak_loads,
            dict(peak_utilization),
            frozenset(confirmed),
            frozenset(avoid),
            startups,
            NoMoves() if moves is None else moves,
            dict(metrics.get(CPU_LOAD, {})) if args.at_risk_load > 0 else {},
        )

    def cost_of(self, pod: Pod) -> MoveCost:
        """What moving the pod costs: `restartSeconds` of its work, or its owner's start-up
        when that is longer (up to `paybackSeconds`, the horizon its relief is counted over)."""
        cost = self.args.cost
        owner = owner_of(pod)
        started = self.startups.get(owner) if owner is not None else None
        if started is None or started <= cost.restart_seconds:
            return cost
        return dataclasses.replace(cost, restart_seconds=min(started, self.args.payback_seconds))

    def at_risk(self, node: NodeName) -> bool:
        load = self.loads.get(node)
        if load is None:
            log.info('"Node has no CPU load to predict with, not rebalanced" node="%s"', node)
            return False
        if node not in self.confirmed:
            log.info(
                '"Node is not overutilized for %d cycles in a row yet, not rebalanced" node="%s"',
                self.args.confirm_cycles,
                node,
            )
            return False
        busiest = self.peak_utilization.get(node)
        if busiest is not None and busiest < self.args.at_risk_crest_utilization:
            log.info(
                '"Node did not come near full within %gs, not rebalanced: its waiting tasks are '
                'served" node="%s" crestUtilization=%.2f atRiskCrestUtilization=%g',
                self.args.payback_seconds,
                node,
                busiest,
                self.args.at_risk_crest_utilization,
            )
            return False
        crest = self.peak_loads[node].pressure
        if crest < self.args.at_risk_crest_pressure:
            log.info(
                '"Node did not come near saturating within %gs, not rebalanced" node="%s" '
                "crestPressure=%.2f atRiskCrestPressure=%g",
                self.args.payback_seconds,
                node,
                crest,
                self.args.at_risk_crest_pressure,
            )
            return False
        if load.pressure < self.args.at_risk_pressure:
            log.info(
                '"Node is not at risk of stalling, not rebalanced" node="%s" pressure=%.2f '
                "atRiskPressure=%g",
                node,
                load.pressure,
                self.args.at_risk_pressure,
            )
            return False
        return True

    # ------------------------------------------------------------ the move policy

    def targets(self, c: Classification) -> frozenset[NodeName]:
        """Any node not overutilized (nor evacuated lately), for the prediction to judge. A
        set: every pod weighed asks each Ready node whether it is among them."""
        return frozenset(
            n
            for n, category in c.categories.items()
            if category is not Category.OVERUTILIZED and n not in self.avoid
        )

    def spent(self) -> str | None:
        return None  # each move is judged on its own prediction, not on a shared budget

    def worth_relieving(self, node: NodeName) -> bool:
        """At risk of stalling: once relieved enough, what is left is unevenness, not stall."""
        return self.at_risk(node)

    def weigh(self, candidate: MoveCandidate, context: PluginContext) -> Move | Decline:
        pod, node = candidate.pod, candidate.node
        left = settle_left(pod, self.moves.owner_moving_since(pod), context.state.now)
        if left > 0:
            if node not in self._settle_said:  # once per node and cycle: why its pods stay
                self._settle_said.add(node)
                log.info(
                    '"Replacements of moved pods are left to settle" node="%s" settleSeconds=%g',
                    node,
                    SETTLE_SECONDS,
                )
            log.debug('"Left to settle" pod="%s/%s"', pod.namespace, pod.name)
            return Decline(
                f"a replacement of a moved pod, left to settle {left:.0f} s more",
                unpaid=False,
                rule="a replacement of a moved pod, left to settle",
            )
        found = self.best_move(candidate, context)
        if isinstance(found, Decline):
            return found
        destination, prediction = found
        clear = prediction.gain >= self.args.clear_gain
        return Move(
            prediction.describe(node, self.name_of(destination)),
            cooldown_share=CLEAR_COOLDOWN_SHARE if clear else 1.0,
            several_per_cycle=clear,
            planned=found,
        )

    def moved(self, node: NodeName, move: Move) -> None:
        """Made: the loads the next weighings read follow its prediction."""
        if move.planned is not None:
            self.apply(node, *move.planned)

    # ------------------------------------------------------------ predictions

    def best_move(
        self, candidate: MoveCandidate, context: PluginContext
    ) -> tuple[NodeName, Prediction] | Decline:
        """Where the pod would go (the fitting node among its targets that stalls least with
        it) and what the move is predicted to do there; why not, when nothing predicts it or it
        does not pay."""
        pod, node = candidate.pod, candidate.node
        source = self.loads[node]
        usage = cpu_cores(candidate.relief, source.cores)
        if usage <= 0:
            log.debug('"No usage to predict the move with" pod="%s/%s"', pod.namespace, pod.name)
            return Decline("no usage to predict the move with")
        destinations = [
            d
            for d in context.fitting_nodes(pod, among=candidate.targets)
            if d in self.loads and d not in self.avoid
        ]
        if not destinations:
            log.debug('"No node to move the pod to" pod="%s/%s"', pod.namespace, pod.name)
            return Decline("no node to move it to (none fits that is not hot or evacuated lately)")
        destination = self.least_stalled(destinations, usage)
        prediction = predict(usage, source, self.peak_loads[destination], self.cost_of(pod))
        if not prediction.pays:
            described = prediction.describe(node, self.name_of(destination))
            log.debug(
                '"Move does not pay" pod="%s/%s" node="%s" %s',
                pod.namespace,
                pod.name,
                node,
                described,
            )
            rule = "the move does not pay"
            if prediction.moves_the_hot_node:
                rule += ": it would make its destination the next hot node"
            return Decline(f"the move does not pay: {described}", rule=rule)
        served = self.cpu_load.get(node)
        if (
            served is not None
            and served < self.args.at_risk_load
            and (prediction.gain < self.args.served_gain)
        ):
            # Its tasks wait, and are served: the stall a move takes off is delay, not work
            # lost, while the move loses the pod's work for a restart for certain.
            gain = "inf" if math.isinf(prediction.gain) else f"{prediction.gain:.1f}"
            log.debug(
                '"Node serves its demand: the move must gain %gx its cost" pod="%s/%s" '
                'node="%s" cpuLoad=%.2f gain=%s',
                self.args.served_gain,
                pod.namespace,
                pod.name,
                node,
                served,
                gain,
            )
            return Decline(
                f"the node serves its demand (load {served:.2f} per CPU, below "
                f"{self.args.at_risk_load:g}): a move off it must gain "
                f"{self.args.served_gain:g}x its cost, this one {gain}x",
                rule="the node serves its demand: the move's gain is not clear",
            )
        return destination, prediction

    def least_stalled(self, destinations: Collection[NodeName], usage: float) -> NodeName:
        """Of `destinations`, the one whose peak load stalls least with `usage` more cores (ties:
        the first name): `min` of (pressure after, name), without a stall evaluation per node.

        Nodes are taken curve by curve (`NodeLoad.curve_key`: their size, or their learned
        curve), each from its least loaded up (`_by_size`); pressure rises with load on one
        curve, so the first node of a curve that stalls more than the best so far ends it. A
        weighing at 5,000 nodes costs a few evaluations, not 5,000 (`make bench`, "scale").
        """
        wanted = destinations if isinstance(destinations, (set, frozenset)) else set(destinations)
        best: tuple[float, NodeName] | None = None
        for ordered in self._by_size().values():
            for load, name in ordered:
                if name not in wanted:
                    continue
                node = self.peak_loads[name]
                found = (NodeLoad(node.cores, max(0.0, load + usage), node.servers).pressure, name)
                if best is None or found < best:
                    best = found
                elif found[0] > best[0] + _SAME_PRESSURE:
                    break  # every node after it here is at least as loaded
        if best is None:
            raise ValueError("no destination to choose from")
        return best[1]

    def _by_size(self) -> dict[tuple[int, float], list[tuple[float, NodeName]]]:
        """The peak loads by curve (`NodeLoad.curve_key`), each list in (load, name) order;
        built once a cycle and kept in order by `moved`."""
        if self._sizes is None:
            sizes: dict[tuple[int, float], list[tuple[float, NodeName]]] = {}
            for name, load in self.peak_loads.items():
                sizes.setdefault(load.curve_key, []).append((load.load, name))
            for ordered in sizes.values():
                ordered.sort()
            self._sizes = sizes
        return self._sizes

    def name_of(self, destination: NodeName) -> str:
        """The destination as a prediction names it: said to be judged at its crest where that
        is above this cycle's reading, so the reason's figures match what an operator reads."""
        if self.peak_loads[destination].load > self.loads[destination].load:
            return f"{destination} (at its crest of the last {self.args.payback_seconds:g} s)"
        return destination

    def apply(self, node: NodeName, destination: NodeName, prediction: Prediction) -> None:
        """A move from `node` to `destination` as predicted: the loads follow it."""
        self.loads[node] = prediction.source_after
        self.loads[destination] = self.loads[destination].plus(prediction.usage)
        before = self.peak_loads[destination]
        self.peak_loads[destination] = prediction.destination_after
        if self._sizes is not None:
            ordered = self._sizes[before.curve_key]
            ordered.pop(bisect.bisect_left(ordered, (before.load, destination)))
            after = prediction.destination_after
            bisect.insort(self._sizes.setdefault(after.curve_key, []), (after.load, destination))


def _higher(now: Mapping[NodeName, float], peak: Mapping[NodeName, float]) -> dict[NodeName, float]:
    """Per node, the higher of this cycle's reading and its recent peak. The cycle records its
    readings before plugins run, so a followed metric's peak already covers this cycle; a
    metric the cycle does not follow (PSI read for a policy while LoadAware's signal is
    utilization alone) has no peak, and its reading stands."""
    return {node: max(value, peak.get(node, value)) for node, value in now.items()}
