"""LoadAware: LowNodeUtilization on real telemetry (CPU utilization, PSI), not on requests.

Nodes are classified from fresh metrics (`load_aware.classification`), and a node that runs
only DaemonSet and static pods from what they use until its first sample (`load_aware.idle`: a
destination, never a source); pods are evicted from overutilized nodes, most used first, while
the node is above its high threshold and the move policy lets them go (`load_aware.moves`: the
stall model on the CPU signals, the capacity budget on the others). The log lines use the
upstream descheduler's words, so its users can read them.

How many pods may leave one node in one cycle follows from what can be estimated about each
move (the rule docs/descheduler.md states):

- where per-pod usage is measured (container PSI or CPU), that is what the pod takes with it,
  and the pod that relieves the node most goes first;
- where it is not, the pod's requests as a share of the node's allocatable stand in for it, for
  the signals they speak for (CPU requests for the CPU signals, memory requests for the memory
  ones). Requests bound what the scheduler accounts for, not what a pod uses, so the estimate is
  taken as an upper bound of the relief: eviction stops as soon as the estimates say the node is
  back under its threshold, and the next cycle measures again (it never overshoots on a guess);
- a pod for which neither says anything (no such requests, or the IO signal) moves alone: at
  most one such pod per node per cycle, and none after it on that node;
- always within the eviction limits (per node, per namespace, total) and the owner cooldown.

The plugin remembers, across cycles, its hot nodes (`HotNodes`: the hysteresis its soft taints
follow, and the confirmation) and each node's recent CPU peak (`load_aware.peaks`, over
`paybackSeconds`). It is built with the descheduler's evictions remembered
(`descheduler.settling.MoveHistory`, given by `descheduler.assemble`): nodes evacuated lately
are no destination, and replacements of moved pods are left to settle. It reads per-pod usage
from the framework's usage sources (`UsageSources.pod_usage`). It runs even while the circuit
breaker is open: its classification feeds the metrics and the soft taints (the evictor still
stops its evictions). The name `LowNodeUtilization` belongs to the upstream plugin on requests
(`descheduler.plugins.low_node_utilization`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping

from descheduler.classify import still_over
from descheduler.framework import (
    EvictOptions,
    ExtensionPoint,
    Outcome,
    Plugin,
    PluginContext,
    PluginName,
    PodUsage,
    UnreadPodUsage,
    sort_candidates,
)
from descheduler.node_classes import Classification
from descheduler.plugins.load_aware.args import LoadAwareArgs, parse_args, wanted_metric_names
from descheduler.plugins.load_aware.classification import (
    HotNodes,
    classify_nodes,
    fmt,
    overutilized_reason,
)
from descheduler.plugins.load_aware.idle import estimated_nodes, idle_columns
from descheduler.plugins.load_aware.moves import (
    CapacityBudget,
    Decline,
    MoveCandidate,
    MovePolicy,
    estimate_relief,
    eviction_order,
)
from descheduler.plugins.load_aware.peaks import RecentPeaks
from descheduler.plugins.load_aware.stall import StallModel
from descheduler.settling import MoveHistory, NoMoves
from descheduler.signals import CPU_SIGNALS, Signal, metric_names
from descheduler.startup import owner_startups
from descheduler.state import pod_key
from tas.calibration import Calibration
from tas.calibration.curve import CurveLearner, Curves
from tas.calibration.delays import DelayRing, follow_window
from tas.types import MetricName
from tas_herd.placements import add_estimates

log = logging.getLogger(__name__)

NAME = PluginName("LoadAware")


class LoadAware:
    """One profile's LoadAware, with what it remembers from one cycle to the next."""

    def __init__(self, args: LoadAwareArgs, *, moves: MoveHistory | None = None) -> None:
        """`moves`: the evictions the descheduler remembers (None: none, a LoadAware run on
        its own)."""
        self.args = args
        self.moves: MoveHistory = NoMoves() if moves is None else moves
        self.hot = HotNodes()
        # Only the CPU readings a destination is judged by, and no longer than the payback
        # horizon asks: an hour held up to 121 readings per node and metric at 30 s cycles.
        followed = metric_names([Signal.CPU_COMBINED]) & wanted_metric_names(args)
        self.peaks = RecentPeaks(followed, keep_seconds=args.payback_seconds)
        #: Each node's pressure curve (None: off, every node on the shared model).
        self.curves = (
            CurveLearner(
                window=args.pressure_curve_samples, min_samples=args.pressure_curve_min_samples
            )
            if args.learn_pressure_curve
            else None
        )
        #: One observation per cycle of each: the metric lag's and the start-ups' 90th
        #: percentile that cycle (`tas.calibration.delays`).
        self.lag = DelayRing()
        self.startup = DelayRing()

    def run(self, context: PluginContext) -> None:
        state = context.state
        now = state.now
        self.peaks.record(now, state.metrics)
        startups = self._observe_delays(context)
        curves = self._learn_curves(context)
        payback = follow_window(
            shipped=self.args.payback_seconds,
            lowest=self.args.payback_seconds,
            highest=self.args.max_payback_seconds,
            lag=self.lag,
            startup=self.startup,
        )
        args = self.args
        if payback != args.payback_seconds:
            args = dataclasses.replace(args, payback_seconds=payback)
        c = rebalance(
            args,
            context,
            pod_usage=context.usage.pod_usage(),
            moves=self.moves,
            hot=self.hot,
            peaks=self.peaks,
            curves=curves,
            startups=startups,
        )
        held = self.hot.hold(dataclasses.replace(c, hold_seconds=self.args.hold_seconds), now)
        context.classified(held)
        context.calibrated(
            Calibration(
                curves=curves,
                metric_lag=self.lag.quantile(),
                startup=self.startup.quantile(),
                window=payback,
            )
        )

    def _learn_curves(self, context: PluginContext) -> Curves:
        """This cycle's samples into each node's curve; the curves of the nodes in scope."""
        if self.curves is None:
            return {}
        state = context.state
        cores = {
            name: node.allocatable.get("cpu", 0.0)
            for name, node in state.nodes.items()
            if node.allocatable.get("cpu", 0.0) > 0
        }
        psi_name = MetricName(Signal.CPU_PRESSURE)
        self.curves.observe_columns(
            state.metrics.get(MetricName(Signal.CPU_UTILIZATION), {}),
            state.metrics.get(psi_name, {}),
            cores=cores,
            now=state.now.timestamp(),
            times=state.sample_times.get(psi_name),
        )
        self.curves.retain(state.nodes)
        return self.curves.curves(cores)

    def _observe_delays(
        self, context: PluginContext
    ) -> Mapping[tuple[str, str, str], float] | None:
        """The metric lag (the CPU values' age) and the owners' start-ups seen this cycle (the
        90th percentile of each); the owners' start-ups, for the stall model to reuse (one
        pass over the pods a cycle). Nothing when the horizon is fixed
        (`maxPaybackSeconds` = `paybackSeconds`)."""
        if self.args.max_payback_seconds <= self.args.payback_seconds:
            return None
        state = context.state
        now = state.now.timestamp()
        ages = [
            now - sampled
            for name in wanted_metric_names(self.args)
            for sampled in state.sample_times.get(name, {}).values()
        ]
        if ages:
            self.lag.add(_quantile(ages))
        startups = owner_startups(state.pods)
        if startups:
            self.startup.add(_quantile(list(startups.values())))
        return startups


def rebalance(
    args: LoadAwareArgs,
    context: PluginContext,
    *,
    pod_usage: PodUsage | None = None,
    moves: MoveHistory | None = None,
    hot: HotNodes | None = None,
    peaks: RecentPeaks | None = None,
    curves: Curves | None = None,
    startups: Mapping[tuple[str, str, str], float] | None = None,
) -> Classification:
    """One rebalancing pass over the overutilized nodes; the classification it made.
    `moves`: the evictions remembered (None: none)."""
    state, evictor = context.state, context.evictor
    moves = NoMoves() if moves is None else moves
    measured = pod_usage or {}
    estimates = idle_columns(state, measured, curves=curves)
    # Estimates only fill values the columns lack (`idle_columns`): added, they are the value.
    metrics = add_estimates(state.metrics, estimates)
    estimated = estimated_nodes(estimates, metric_names(args.signals))
    c = classify_nodes(args, state, metrics, estimated)
    if c.nothing_to_do is not None:
        log.info('"%s"', c.nothing_to_do)
        return c
    if isinstance(pod_usage, UnreadPodUsage):
        # A failing pipeline never causes an eviction: the node values held through the
        # failure are the last good ones, but what a move would relieve could only be guessed
        # from requests, and such guesses move pods the measured usage kept in place
        # (docs/decisions.md, "A failing pipeline moves nothing").
        log.warning(
            '"LoadAware evicts nothing this cycle" reason="per-pod usage could not be read: %s"',
            pod_usage.why,
        )
        return c
    signals = list(c.thresholds.high)
    capacity = dict(c.capacity_to_move)
    log.info(
        '"Total capacity to be moved" %s',
        " ".join(f"{s}={fmt(v)}" for s, v in capacity.items()),
    )
    policy: MovePolicy
    if all(s in CPU_SIGNALS for s in signals):
        policy = StallModel.of(
            args,
            state,
            metrics,
            c,
            measured,
            avoid=moves.recently_evacuated(state.now, args.avoid_evacuated_seconds),
            confirmed=(hot or HotNodes()).confirmed(args, c),
            peaks=peaks,
            curves=curves,
            startups=startups,
            moves=moves,
        )
    else:
        policy = CapacityBudget(c, capacity)
    targets = policy.targets(c)
    for node in c.overutilized:
        if not policy.worth_relieving(node):
            continue
        usage = dict(c.usages[node])
        pods = state.pods_on(node)
        removable = [p for p in pods if args.namespaces.allows(p.namespace) and evictor.filter(p)]
        log.info(
            '"Pods on node" node="%s" allPods=%d nonRemovablePods=%d removablePods=%d',
            node,
            len(pods),
            len(pods) - len(removable),
            len(removable),
        )
        if not removable:
            continue
        log.info(
            "\"Evicting pods based on priority, if they have same priority, they'll be evicted "
            'based on QoS tiers"'
        )
        per_pod = all(pod_key(p) in measured for p in removable)
        candidates = (
            eviction_order(removable, measured, signals) if per_pod else sort_candidates(removable)
        )
        unknown_moved = False
        unpaid = 0
        for pod in candidates:
            if not still_over(usage, c.thresholds.high, signals):
                break
            spent = policy.spent()
            if spent is not None:
                log.info('"%s"', spent)
                return c
            if unknown_moved:
                break  # a move nobody could estimate: see what it changed first
            if not policy.worth_relieving(node):
                break
            relief = measured.get(pod_key(pod)) or estimate_relief(pod, state.nodes[node], signals)
            move = policy.weigh(MoveCandidate(pod, node, relief, targets), context)
            if isinstance(move, Decline):
                context.declined(pod, NAME, move.why, rule=move.rule)
                unpaid += move.unpaid
                continue  # it does not pay, or nothing predicts it: never on a guess
            reason = overutilized_reason(node, usage, c, signals)
            if move.explains:
                reason = f"{reason}; {move.explains}"
            options = EvictOptions(
                strategy=NAME,
                reason=reason,
                among=targets,
                cooldown_share=move.cooldown_share,
                several_per_cycle=move.several_per_cycle,
            )
            attempt = evictor.evict(pod, options)
            if attempt.outcome is Outcome.STOPPED:
                log.warning("LoadAware stops: %s", attempt.why)
                return c
            if attempt.outcome is Outcome.NODE_LIMIT:
                break
            if not attempt.done:
                continue
            policy.moved(node, move)
            unpaid = 0
            if relief is None:
                unknown_moved = True
                continue
            for s in signals:
                moved = relief.get(s, 0.0)
                usage[s] -= moved
                capacity[s] -= moved
        if unpaid:
            # One line, not one per pod: the per-pod predictions are at debug level.
            log.info('"No move off the node pays" node="%s" pods=%d', node, unpaid)
    return c


def _quantile(values: list[float], q: float = 0.9) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]


PLUGIN = Plugin.serving(
    ExtensionPoint.BALANCE,
    NAME,
    args=(LoadAwareArgs, parse_args),
    new=LoadAware,
    telemetry=True,
    metric_names=wanted_metric_names,
    runs_while_breaker_open=True,
)
