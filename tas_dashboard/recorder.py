"""The live record the dashboard serves: the current state, a decision log and history.

The run loop tells it each step of a sync period as it happens (`observe_inputs`: the metric
columns the components read; `observe_placements`: the scheduler's pass; `observe_cycle`: a
descheduler cycle's report) and ends the period with `observe(tick)`; label and taint writes
it hears from the cluster's change notifications, and it reads the policy store and the
extender's decision log itself. So the log reads in the order things happened. Everything a
reader may ask for is built here, under one lock, as plain JSON-ready data, so HTTP handlers
only copy it out:

- the state: nodes (metric values, the load average per CPU among them, labels, taints, pods,
  load-aware class and, overutilized, since when and how long the hysteresis holds it; where
  LoadAware learns pressure curves, the node's curve as its last cycle had it and what it
  predicts at the node's utilization now, beside the shared model), pods, policies
  (rules, status, violating nodes), workloads, the descheduler's thresholds and breaker, and
  the bar LoadAware sets for a move off a node that serves its demand (`ServedDemand`);
- the decision log, one entry per step of the loop, each with a one-line `summary` a person
  reads and `details` a script reads: extender filter and prioritize verdicts with reasons,
  the scheduler's placements, labels and taints written, the controller's Events, evictions
  with their reasons and outcomes, circuit-breaker trips, metric changes, controls used;
- history: one point per tick, the last hour at a one-second sync period (per-node CPU
  utilization and pressure with the fleet average, the load-aware usage with its low and high
  thresholds, classification, evictions by strategy and node, each node's metric age).

Log entries get increasing ids, so a reader asks for "everything after id N" and misses
nothing that is still in the ring. Every time is read on one clock, the world's (`clock`: the
wall clock for the health demo, the scenario's virtual clock with `--scenario`, which is also
the clock the controller's Events and the extender's decisions carry), and no entry is stamped
before the one logged ahead of it: a step stamped with its tick's start (a placement, an
eviction) happened after the writes logged before it, so "newest first" holds in time too.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from descheduler.cycle import CycleReport, Descheduler
from descheduler.framework import Result
from descheduler.node_classes import Classification
from descheduler.plugins.load_aware.args import LoadAwareArgs
from descheduler.self_metrics import CATEGORY_VALUE
from descheduler.signals import CPU_SIGNALS
from extender.decisions import Decision, DecisionLog, Verb
from tas.calibration.curve import NodeCurve
from tas.clock import SYSTEM_CLOCK, Clock
from tas.cluster.interface import ChangeType, ClusterChange, NotFoundError, ResourceKind
from tas.cluster.model import Node, Pod
from tas.fit import rejection
from tas.policies.model import StrategyName, TASPolicy
from tas.policies.store import PolicySnapshot, PolicyStore
from tas.pressure import pressure, servers_of
from tas.rules import violations
from tas.types import MetricColumns, MetricName, Namespace, NodeName, PolicyKey
from tas.vocabulary import POD_VIOLATION_LABEL, POLICY_LABEL, VIOLATING
from tas_inmemory.cluster import EvictionRecord, InMemoryCluster
from tas_inmemory.live_telemetry import TelemetryStep
from tas_inmemory.scheduler import ScheduleResult

#: The metrics the dashboard shows per node (the view is told to fetch them too).
SHOWN_METRICS = tuple(
    MetricName(name)
    for name in (
        "health_metric",
        "cpu_utilization",
        "cpu_pressure",
        "memory_utilization",
        "memory_pressure",
        # The load average per CPU (`tas.metrics.names.Derived.CPU_LOAD`): whether the node
        # serves its demand, which LoadAware weighs (docs/descheduler.md, "Waiting is not loss").
        "cpu_load",
    )
)
FLEET = "fleet"
#: An hour of history at `make run`'s one-second sync period (what the page's charts span).
HISTORY_POINTS = 3600


class SampleTimes(Protocol):
    """What the recorder reads of the metric view for the metric-age view (a
    `tas.metrics.refreshing.RefreshingMetricView` is one)."""

    #: Past this age (seconds) a value is stale: the components no longer see it.
    max_age: float

    def sample_times(self) -> Mapping[MetricName, Mapping[NodeName, float]]:
        """When each fresh value was measured (Unix seconds on the view's clock: the wall
        clock for the health demo, the scenario's with `--scenario`)."""
        ...


class CurveSource(Protocol):
    """What the recorder reads of a pressure-curve learner besides the curves a cycle reports
    (`tas.calibration.curve.CurveLearner` is one): how many samples a fit needs, and how many
    of a node's newest it keeps."""

    min_samples: int
    window: int


@dataclass(frozen=True, kw_only=True)
class ServedDemand:
    """LoadAware's rule "waiting is not loss" (docs/descheduler.md): off a node whose load
    average per CPU (`cpu_load`) is below `at_risk_load`, its tasks wait but are served, and a
    move must be predicted to gain `served_gain` times its cost. `at_risk_pressure`: the CPU
    pressure below which LoadAware rebalances no node at all, so where the rule starts to
    matter."""

    at_risk_load: float
    served_gain: float
    at_risk_pressure: float


def served_demand(descheduler: Descheduler | None) -> ServedDemand | None:
    """The rule as the descheduler's LoadAware applies it: None where none does (no LoadAware,
    one on other than CPU signals, which has no stall model, or `atRiskLoad: 0`). Read, never
    changed."""
    if descheduler is None:
        return None
    for run in descheduler.plugins.values():
        args = getattr(run, "args", None)
        if (
            isinstance(args, LoadAwareArgs)
            and args.at_risk_load > 0
            and args.signals
            and all(s in CPU_SIGNALS for s in args.signals)
        ):
            return ServedDemand(
                at_risk_load=args.at_risk_load,
                served_gain=args.served_gain,
                at_risk_pressure=args.at_risk_pressure,
            )
    return None


_CPU_UTILIZATION = MetricName("cpu_utilization")
_CPU_PRESSURE = MetricName("cpu_pressure")


#: Every kind of log entry, with what it tells (`/api/decisions?kind=` accepts only these).
KINDS: Mapping[str, str] = {
    "policy": "the policies loaded",
    "metric": "a node's health_metric changed",
    "filter": "an extender filter verdict",
    "prioritize": "the extender's scores",
    "schedule": "a placement, or why a pod stays pending",
    "label": "a label written on a node or pod",
    "event": "a controller or descheduler Event",
    "taint": "a soft taint added or removed",
    "eviction": "an eviction and its outcome",
    "breaker": "the circuit breaker opened or closed",
    "control": "a control used on the page or through the API",
}

Json = dict[str, Any]


@dataclass(frozen=True)
class Tick:
    """What one sync period of the run loop produced."""

    now: float
    columns: MetricColumns
    telemetry: TelemetryStep | None = None
    placements: Sequence[ScheduleResult] = ()
    cycle: CycleReport | None = None


@dataclass
class _Seen:
    """What the previous tick saw, to log only what changed."""

    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    node_taints: dict[str, list[str]] = field(default_factory=dict)
    pod_labels: dict[str, str | None] = field(default_factory=dict)
    health: dict[str, float | None] = field(default_factory=dict)
    pending: dict[str, str] = field(default_factory=dict)
    events: int = 0
    evictions: int = 0
    decision: Decision | None = None
    breaker: str | None = None
    policy_generation: int = -1


class Recorder:
    def __init__(
        self,
        *,
        cluster: InMemoryCluster,
        policies: PolicyStore,
        decisions: DecisionLog,
        info: Mapping[str, Any],
        workloads: Callable[[], list[dict[str, object]]] = list,
        scenario: Callable[[], Json | None] = lambda: None,
        log_size: int = 2000,
        history_points: int = HISTORY_POINTS,
        metric_times: SampleTimes | None = None,
        metric_clock: Clock | None = None,
        clock: Clock = SYSTEM_CLOCK,
        curves: CurveSource | None = None,
        served: ServedDemand | None = None,
    ) -> None:
        """`curves`: the learner whose curves the descheduler's cycles report (LoadAware's,
        `descheduler.assemble.load_aware_curves`); None: the cards show no pressure curve.
        `served`: the bar LoadAware sets for a move off a node that serves its demand
        (`served_demand`); None: no LoadAware applies it, and the cards say nothing of it."""
        self._cluster = cluster
        self._policies = policies
        self._decisions = decisions
        self._info = dict(info)
        self._workloads = workloads
        self._scenario = scenario
        self._lock = threading.Lock()
        self._log: deque[Json] = deque(maxlen=log_size)
        self._next_id = 1
        self._last_time = float("-inf")
        self._history: deque[Json] = deque(maxlen=history_points)
        self._seen = _Seen()
        self._classification: Classification | None = None
        #: node -> {"since", "lastAbove"}: its overutilized streak (`_track_overutilized`).
        self._over: dict[str, dict[str, float]] = {}
        #: node -> why none of its pods left in the last cycle, while it is overutilized: the
        #: reason the cycle recorded most often for its pods (`CycleReport.blocked`).
        self._kept: dict[str, str] = {}
        self._evictions_total = 0
        self._evicted_this_tick = 0
        self._last_cycle: float | None = None
        #: strategy -> node -> evictions since the last history point.
        self._evicted_by: dict[str, dict[str, int]] = {}
        #: replacement pod -> the node its eviction's reason predicted it would go to.
        self._predicted: dict[str, str] = {}
        self._metric_times = metric_times
        #: The clock the view's samples are stamped on: the world's (`clock`) unless told
        #: otherwise. The health demo's view reads file mtimes on the wall clock, its world's
        #: clock; a scenario's view is stamped on the scenario's clock, so a metric's age is in
        #: scenario seconds (the wall clock there would add the years between the two).
        self._metric_clock = clock if metric_clock is None else metric_clock
        #: node -> metric -> seconds since its newest value was measured, as of the last tick.
        self._ages: dict[str, dict[str, float]] = {}
        #: metric -> node -> when its newest value seen was measured: a value gone stale drops
        #: out of the view, and its age keeps growing from here.
        self._sampled: dict[MetricName, dict[NodeName, float]] = {}
        self._curve_source = curves
        self._served: Json | None = None
        if served is not None:
            self._served = {
                "atRiskLoad": served.at_risk_load,
                "servedGain": served.served_gain,
                "atRiskPressure": served.at_risk_pressure,
            }
        #: node -> its pressure curve as the last cycle that learned curves had it, and when.
        self._curves: dict[str, NodeCurve] = {}
        self._curves_time: float | None = None
        #: Before the first tick: the state's every key, empty, so a reader polling from the
        #: start (the page, a test waiting for the scenario's summary) never meets a missing key.
        self._state: Json = {
            "time": None,
            **self._info,
            "scenario": None,
            "nodes": [],
            "pods": [],
            "policies": [],
            "policyProblems": [],
            "metricMaxAge": None,
            "workloads": [],
            "descheduler": {
                "thresholds": None,
                "circuitBreaker": None,
                "evictions": 0,
                "lastCycle": None,
                "servedDemand": self._served,
            },
        }
        #: Bumped by every tick and every note: readers compare it to see if anything is new.
        self.version = 0
        self._clock = clock
        for pod in cluster.list_pods():
            self._seen.pod_labels[f"{pod.namespace}/{pod.name}"] = pod.labels.get(
                POD_VIOLATION_LABEL
            )
        for node in cluster.list_nodes():
            self._seen.node_labels[node.name] = dict(node.labels)
            self._seen.node_taints[node.name] = sorted(_taint_text(t) for t in node.taints)
        cluster.subscribe(self._on_change)

    # ------------------------------------------------------------------ writing

    def note(self, kind: str, summary: str, *, source: str, time: float, **details: Any) -> Json:
        """Add one log entry from outside the loop (a control used on the dashboard)."""
        with self._lock:
            entry = self._append(kind, summary, source=source, time=time, details=details)
            self._bump()
            return entry

    def observe_inputs(self, now: float, columns: MetricColumns) -> None:
        """A tick's first step: policy changes, and health values as the components read them."""
        nodes = self._cluster.list_nodes()
        snapshot = self._policies.snapshot()
        with self._lock:
            self._log_policies(now, snapshot)
            self._log_metrics(now, columns, nodes)
            self._bump()

    def observe_placements(self, now: float, placements: Sequence[ScheduleResult]) -> None:
        """After the scheduler's pass: the extender's verdicts, then where the pods went."""
        decisions = self._new_decisions()
        # Read before taking our lock (see `observe`): why the scheduler did not ask about a node.
        unasked = [self._unasked(d) for d in decisions]
        with self._lock:
            for decision, left in zip(decisions, unasked, strict=True):
                self._log_decision(decision, left)
            scores = {d.pod: d.scores for d in decisions if d.verb is Verb.PRIORITIZE}
            self._log_placements(now, placements, scores)
            self._bump()

    def observe_cycle(self, now: float, cycle: CycleReport) -> None:
        """After a descheduling cycle: Events so far, then evictions and breaker changes."""
        events = self._cluster.events
        evictions = self._cluster.evictions
        nodes = self._cluster.list_nodes() if cycle.calibration is not None else []
        with self._lock:
            if cycle.calibration is not None and self._curve_source is not None:
                self._take_curves(now, cycle.calibration.curves, nodes)
            self._log_events(events)
            self._evicted_this_tick += self._log_cycle(now, cycle, evictions)
            self._seen.evictions = len(evictions)
            self._last_cycle = now
            for classification in cycle.classifications.values():
                self._classification = classification
                self._track_overutilized(now, classification)
                break
            self._kept = _kept_reasons(cycle)
            self._bump()

    def _take_curves(
        self, now: float, curves: Mapping[NodeName, NodeCurve], nodes: Sequence[Node]
    ) -> None:
        """Each node's curve as the cycle predicted with it: a node the cycle reports none for
        has no usable sample yet, and is on the shared model."""
        self._curves_time = now
        self._curves = {}
        for node in nodes:
            cores = node.allocatable.get("cpu", 0.0)
            if not (math.isfinite(cores) and cores > 0):
                continue
            found = curves.get(node.name)
            self._curves[node.name] = found or NodeCurve(
                servers=servers_of(cores), samples=0, fallback=True
            )

    def _track_overutilized(self, now: float, classification: Classification) -> None:
        """Since when each overutilized node has been so, and when it was last above its high
        threshold (not only held there by the hysteresis): what explains its class."""
        over = set(classification.overutilized)
        for node in [n for n in self._over if n not in over]:
            del self._over[node]
        for node in over:
            seen = self._over.setdefault(str(node), {"since": now, "lastAbove": now})
            if node not in classification.held:
                seen["lastAbove"] = now

    def observe(self, tick: Tick) -> None:
        """A tick's end: whatever the step hooks above were not told, then the state and a
        history point. Give a `Tick` its placements and cycle, or the step hooks; not both."""
        self.observe_inputs(tick.now, tick.columns)
        self.observe_placements(tick.now, tick.placements)
        if tick.cycle is not None:
            self.observe_cycle(tick.now, tick.cycle)
        nodes = self._cluster.list_nodes()
        pods = self._cluster.list_pods()
        snapshot = self._policies.snapshot()
        events = self._cluster.events
        # Read before taking our lock: the cluster's listeners take it while the cluster writes.
        statuses = {key: self._policy_status(key) for key in snapshot.policies}
        times = self._metric_times.sample_times() if self._metric_times is not None else {}
        with self._lock:
            self._log_events(events)
            self._ages = self._metric_ages(times, nodes)
            self._state = self._build_state(tick, nodes, pods, snapshot, statuses)
            # One point per moment of the world's clock: a tick at which it stood still (a
            # scenario that ended, a wall tick between two scenario steps) adds none, so a
            # reader asking for the points after the newest it has misses none; what such a
            # tick saw evicted goes into the next point.
            if not self._history or tick.now > self._history[-1]["time"]:
                self._history.append(self._point(tick, nodes, self._evicted_this_tick))
                self._evicted_this_tick = 0
                self._evicted_by = {}
            self._bump()

    def _bump(self) -> None:
        self.version += 1

    # ------------------------------------------------------------------ reading

    def state(self) -> Json:
        with self._lock:
            return self._state

    def log(
        self, *, after: int = 0, limit: int | None = None, kinds: set[str] | None = None
    ) -> list[Json]:
        """Entries with id > `after`, oldest first (the newest `limit` of them)."""
        with self._lock:
            entries = [
                e for e in self._log if e["id"] > after and (kinds is None or e["kind"] in kinds)
            ]
        return entries[-limit:] if limit is not None else entries

    def history(self, *, after: float | None = None) -> list[Json]:
        with self._lock:
            return [p for p in self._history if after is None or p["time"] > after]

    # ------------------------------------------------------------------ the log

    def _append(
        self,
        kind: str,
        summary: str,
        *,
        source: str,
        details: Mapping[str, Any],
        time: float | None = None,
    ) -> Json:
        """Log one entry; without a `time`, it happened now (a write seen as it is made).
        Never earlier than the entry before it (the module docstring says why)."""
        stamp = self._clock.now().timestamp() if time is None else time
        self._last_time = stamp = max(stamp, self._last_time)
        entry = {
            "id": self._next_id,
            "time": stamp,
            "kind": kind,
            "source": source,
            "summary": summary,
            "details": dict(details),
        }
        self._next_id += 1
        self._log.append(entry)
        return entry

    def _new_decisions(self) -> list[Decision]:
        """Extender decisions recorded since the last tick, oldest first."""
        recent = self._decisions.recent()
        fresh: list[Decision] = []
        for decision in recent:  # newest first
            if decision is self._seen.decision:
                break
            fresh.append(decision)
        if recent:
            self._seen.decision = recent[0]
        fresh.reverse()
        return fresh

    def _unasked(self, decision: Decision) -> dict[str, str]:
        """The nodes a filter call left out, each with why: kube-scheduler's own filters (node
        affinity, taints, resources: `tas.fit.rejection`) removed them before it called the
        extender, which only ever hears of the nodes left."""
        if decision.verb is not Verb.FILTER:
            return {}
        asked = {str(n) for n in decision.candidates}
        nodes = [n for n in self._cluster.list_nodes() if n.name not in asked]
        if not nodes:
            return {}
        namespace, _, name = decision.pod.partition("/")
        try:
            pod = self._cluster.get_pod(Namespace(namespace), name)
        except NotFoundError:
            return {}  # gone (evicted, scaled away): its placement rules are not known here
        left: dict[str, str] = {}
        for node in nodes:
            why = rejection(pod, node, pods_on_node=self._cluster.list_pods(node=node.name))
            left[node.name] = why or "the scheduler's own filters removed it"
        return left

    def _log_decision(self, decision: Decision, unasked: Mapping[str, str]) -> None:
        data = decision.to_json()
        if decision.verb is Verb.FILTER:
            kept = [n["node"] for n in data["nodes"] if n["verdict"] == "pass"]
            failed = [f"{n['node']} ({n['reason']})" for n in data["nodes"] if "reason" in n]
            summary = f"filter {decision.pod}: kept {', '.join(kept) or 'none'}" + (
                f"; removed {'; '.join(failed)}" if failed else ""
            )
            if unasked:
                said = "; ".join(f"{n} ({why})" for n, why in sorted(unasked.items()))
                summary += f"; not asked, kube-scheduler's own filters removed them first: {said}"
                data = {**data, "notAsked": dict(unasked)}
        else:
            scores = ", ".join(f"{n['node']} {n['score']}" for n in data["nodes"])
            summary = f"prioritize {decision.pod}: {scores or 'no candidates'}"
        if decision.reason and not decision.candidates:
            summary += f" ({decision.reason})"
        self._append(
            decision.verb.value, summary, source="extender", time=decision.time, details=data
        )

    def _log_placements(
        self,
        now: float,
        placements: Sequence[ScheduleResult],
        scores: Mapping[str, Mapping[NodeName, int]],
    ) -> None:
        for placement in placements:
            if placement.node is not None:
                self._seen.pending.pop(placement.pod, None)
                summary = f"scheduled {placement.pod} on {placement.node}"
                predicted = self._predicted.pop(placement.pod, None)
                if predicted is not None and predicted != placement.node:
                    summary += (
                        f" (its eviction predicted {predicted}; the scheduler chose"
                        f" {placement.node}: {_why_chosen(scores.get(placement.pod))})"
                    )
                self._append(
                    "schedule",
                    summary,
                    source="scheduler",
                    time=now,
                    details={"pod": placement.pod, "node": placement.node, "predicted": predicted},
                )
            elif self._seen.pending.get(placement.pod) != placement.reason:
                self._seen.pending[placement.pod] = placement.reason
                self._append(
                    "schedule",
                    f"{placement.pod} stays pending: {placement.reason}",
                    source="scheduler",
                    time=now,
                    details={"pod": placement.pod, "node": None, "reason": placement.reason},
                )

    def _on_change(self, change: ClusterChange) -> None:
        """Labels and taints, as they are written: a violating pod is often evicted within the
        sync period it was labelled in, and the log should show each write where it happened."""
        if change.type is ChangeType.DELETED:
            with self._lock:
                if change.kind is ResourceKind.POD:
                    self._seen.pod_labels.pop(f"{change.namespace}/{change.name}", None)
            return
        try:
            if change.kind is ResourceKind.NODE:
                node = self._cluster.get_node(NodeName(change.name))
            elif change.kind is ResourceKind.POD and change.namespace is not None:
                pod = self._cluster.get_pod(Namespace(change.namespace), change.name)
            else:
                return
        except NotFoundError:
            return
        with self._lock:
            if change.kind is ResourceKind.NODE:
                self._log_node_change(node)
            else:
                self._log_pod_change(pod)

    def _log_node_change(self, node: Node) -> None:
        seen = self._seen
        labels = dict(node.labels)
        before = seen.node_labels.get(node.name)
        seen.node_labels[node.name] = labels
        if before is not None:
            added = {k: v for k, v in labels.items() if before.get(k) != v}
            removed = [k for k in before if k not in labels]
            if added or removed:
                parts = [f"set {k}={v}" for k, v in sorted(added.items())]
                parts += [f"removed {k}" for k in sorted(removed)]
                self._append(
                    "label",
                    f"node {node.name}: {', '.join(parts)}",
                    source="controller",
                    details={"node": node.name, "set": added, "removed": removed},
                )
        taints = sorted(_taint_text(t) for t in node.taints)
        before_taints = seen.node_taints.get(node.name)
        seen.node_taints[node.name] = taints
        if before_taints is not None and before_taints != taints:
            added_t = [t for t in taints if t not in before_taints]
            removed_t = [t for t in before_taints if t not in taints]
            parts = [f"tainted {t}" for t in added_t] + [f"untainted {t}" for t in removed_t]
            self._append(
                "taint",
                f"node {node.name}: {', '.join(parts)}",
                source="descheduler",
                details={"node": node.name, "added": added_t, "removed": removed_t},
            )
        self._bump()

    def _log_pod_change(self, pod: Pod) -> None:
        key = f"{pod.namespace}/{pod.name}"
        value = pod.labels.get(POD_VIOLATION_LABEL)
        known = key in self._seen.pod_labels
        before = self._seen.pod_labels.get(key)
        self._seen.pod_labels[key] = value
        if not known or before == value:
            return  # a new pod, or a change that is not ours to explain
        text = (
            f"set {POD_VIOLATION_LABEL}={value}"
            if value is not None
            else f"removed {POD_VIOLATION_LABEL}"
        )
        self._append(
            "label",
            f"pod {key} on {pod.node_name}: {text}",
            source="controller",
            details={"pod": key, "node": pod.node_name, POD_VIOLATION_LABEL: value},
        )
        self._bump()

    def _log_events(self, events: Sequence[Any]) -> None:
        for event in events[self._seen.events :]:
            involved = f"{event.involved.kind} {event.involved.name}"
            self._append(
                "event",
                f"{event.reason} ({involved}): {event.message}",
                source="controller",
                time=event.time.timestamp(),
                details={
                    "involved": {"kind": event.involved.kind, "name": event.involved.name},
                    "reason": event.reason,
                    "message": event.message,
                    "type": event.type,
                },
            )
        self._seen.events = len(events)

    def _log_cycle(
        self, now: float, cycle: CycleReport, evictions: Sequence[EvictionRecord]
    ) -> int:
        """Evictions and breaker changes of a cycle; returns how many were made."""
        replacements = {
            f"{r.namespace}/{r.name}": r.replacement
            for r in evictions[self._seen.evictions :]
            if r.replacement is not None
        }
        made = 0
        for decision in cycle.decisions:
            key = f"{decision.namespace}/{decision.name}"
            evicted = decision.result == Result.EVICTED
            made += evicted
            if evicted:
                by_node = self._evicted_by.setdefault(decision.strategy, {})
                node = str(decision.node)
                by_node[node] = by_node.get(node, 0) + 1
            verb = "evicted" if evicted else f"eviction {decision.result}:"
            replacement = replacements.get(key)
            summary = f"{verb} {key} from {decision.node} ({decision.strategy}): {decision.reason}"
            predicted = _predicted_destination(decision.reason, decision.node)
            if predicted is not None:
                summary += (
                    " (a prediction: the scheduler, not the descheduler, places its replacement;"
                    " the log says where and why)"
                )
            if replacement is not None:
                summary += f"; its owner created {decision.namespace}/{replacement}"
                if evicted and predicted is not None:
                    self._predicted[f"{decision.namespace}/{replacement}"] = predicted
            self._append(
                "eviction",
                summary,
                source="descheduler",
                time=now,
                details={
                    "pod": key,
                    "node": decision.node,
                    "strategy": decision.strategy,
                    "reason": decision.reason,
                    "result": decision.result,
                    "replacement": replacement,
                },
            )
        self._evictions_total += made
        if cycle.circuit_breaker != self._seen.breaker:
            opened = cycle.circuit_breaker is not None
            self._append(
                "breaker",
                f"circuit breaker open: {cycle.circuit_breaker}"
                if opened
                else "circuit breaker closed: evictions resume",
                source="descheduler",
                time=now,
                details={"open": opened, "reason": cycle.circuit_breaker},
            )
            self._seen.breaker = cycle.circuit_breaker
        return made

    def _log_metrics(self, now: float, columns: MetricColumns, nodes: Sequence[Node]) -> None:
        column = columns.get(MetricName("health_metric"), {})
        for node in nodes:
            value = column.get(node.name)
            if node.name in self._seen.health and self._seen.health[node.name] != value:
                before = self._seen.health[node.name]
                self._append(
                    "metric",
                    f"node {node.name}: health_metric {_num(before)} -> {_num(value)}",
                    source="telemetry",
                    time=now,
                    details={"node": node.name, "metric": "health_metric", "from": before,
                             "to": value},
                )  # fmt: skip
            self._seen.health[node.name] = value

    def _log_policies(self, now: float, snapshot: PolicySnapshot) -> None:
        if snapshot.generation == self._seen.policy_generation:
            return
        self._seen.policy_generation = snapshot.generation
        names = ", ".join(str(k) for k in sorted(snapshot.policies, key=str)) or "none"
        summary = f"policies loaded: {names}"
        if snapshot.problems:
            summary += f"; {len(snapshot.problems)} invalid skipped"
        self._append(
            "policy",
            summary,
            source="policies",
            time=now,
            details={
                "policies": [str(k) for k in snapshot.policies],
                "problems": [str(p) for p in snapshot.problems],
            },
        )

    # ------------------------------------------------------------------ state and history

    def _build_state(
        self,
        tick: Tick,
        nodes: Sequence[Node],
        pods: Sequence[Pod],
        snapshot: PolicySnapshot,
        statuses: Mapping[PolicyKey, Mapping[str, Any] | None],
    ) -> Json:
        pod_cpu = tick.telemetry.pod_cpu if tick.telemetry is not None else {}
        classification = self._classification
        pods_on: dict[str, list[str]] = {}
        for p in pods:
            if p.node_name is not None:
                pods_on.setdefault(p.node_name, []).append(f"{p.namespace}/{p.name}")
        node_json = []
        for node in nodes:
            load = tick.telemetry.nodes.get(node.name) if tick.telemetry else None
            category = classification.categories.get(node.name) if classification else None
            node_json.append(
                {
                    "name": node.name,
                    "ready": node.ready,
                    "allocatable": dict(node.allocatable),
                    "metrics": {
                        m: tick.columns[m][node.name]
                        for m in SHOWN_METRICS
                        if node.name in tick.columns.get(m, {})
                    },
                    "model": None
                    if load is None
                    else {
                        "cpuDemand": round(load.cpu_demand, 4),
                        "cpuUtilization": round(load.cpu_utilization, 4),
                        "cpuPressure": round(load.cpu_pressure, 4),
                        "memoryUsed": round(load.memory_used),
                        "memoryUtilization": round(load.memory_utilization, 4),
                        "memoryPressure": round(load.memory_pressure, 4),
                    },
                    "labels": dict(node.labels),
                    "violating": sorted(k for k, v in node.labels.items() if v == VIOLATING),
                    "taints": [
                        {"key": t.key, "value": t.value, "effect": str(t.effect)}
                        for t in node.taints
                    ],
                    "classification": category.value if category is not None else None,
                    "overutilized": self._overutilized_json(node.name, classification),
                    "usage": dict(classification.usages.get(node.name, {}))
                    if classification
                    else {},
                    "pods": pods_on.get(node.name, []),
                    "metricAge": self._ages.get(node.name, {}),
                    "curve": self._curve_json(node, tick.columns),
                }
            )
        pod_json = [
            {
                "namespace": p.namespace,
                "name": p.name,
                "node": p.node_name,
                "phase": p.phase,
                "app": p.labels.get("app"),
                "policy": p.labels.get(POLICY_LABEL),
                "violates": p.labels.get(POD_VIOLATION_LABEL),
                "owner": None
                if p.controller is None
                else {"kind": p.controller.kind, "name": p.controller.name},
                "cpu": round(pod_cpu.get((p.namespace, p.name), 0.0), 4),
                "requests": dict(p.requests),
            }
            for p in pods
        ]
        thresholds = None
        if classification is not None:
            bounds = classification.thresholds
            thresholds = {
                "low": dict(bounds.low),
                "high": dict(bounds.high),
                # Deviation thresholds: the fleet average they move with (None: fixed bounds).
                "average": None if bounds.average is None else dict(bounds.average),
            }
        return {
            "time": tick.now,
            **self._info,
            "scenario": self._scenario(),
            "nodes": node_json,
            "pods": pod_json,
            "policies": [
                self._policy_json(policy, node_json, statuses.get(policy.key), tick.columns)
                for policy in snapshot.policies.values()
            ],
            "policyProblems": [str(p) for p in snapshot.problems],
            "metricMaxAge": None if self._metric_times is None else self._metric_times.max_age,
            "workloads": self._workloads(),
            "descheduler": {
                "thresholds": thresholds,
                "circuitBreaker": self._seen.breaker,
                "evictions": self._evictions_total,
                "lastCycle": self._last_cycle,
                "servedDemand": self._served,
            },
        }

    def _overutilized_json(
        self, node: NodeName, classification: Classification | None
    ) -> Json | None:
        """Why an overutilized node is so: since when, whether only the hysteresis holds it
        (`descheduler.classify.hold_overutilized`: it stays overutilized until every signal is
        at or below its low threshold, or `holdSeconds` after it was last above its high one),
        and when that hold ends at the latest. None for a node in another class."""
        seen = self._over.get(node)
        if classification is None or seen is None:
            return None
        hold = classification.hold_seconds
        return {
            "since": seen["since"],
            "lastAbove": seen["lastAbove"],
            "held": node in classification.held,
            "holdSeconds": hold,
            "holdUntil": seen["lastAbove"] + hold if hold > 0 else None,
            "keptBy": self._kept.get(node),
        }

    def _curve_json(self, node: Node, columns: MetricColumns) -> Json | None:
        """The node's pressure curve in numbers (docs/dashboard.md, `NODE.curve`), and the PSI
        it predicts at the node's CPU utilization now, by its curve and by the shared model.
        None: no LoadAware learns curves here, or none has run yet."""
        curve = self._curves.get(node.name)
        if curve is None or self._curve_source is None:
            return None
        cores = node.allocatable.get("cpu", 0.0)
        utilization = columns.get(_CPU_UTILIZATION, {}).get(node.name)
        if utilization is not None and not math.isfinite(utilization):
            utilization = None
        load = 0.0 if utilization is None else utilization * cores
        known = utilization is not None
        measured = columns.get(_CPU_PRESSURE, {}).get(node.name)
        return {
            "learned": not curve.fallback,
            "servers": curve.servers,
            "sharedServers": servers_of(cores),
            "fitted": None if curve.fitted is None else round(curve.fitted, 2),
            "samples": curve.samples,
            "minSamples": self._curve_source.min_samples,
            "window": self._curve_source.window,
            "cores": cores,
            "utilization": None if utilization is None else round(utilization, 4),
            "predicted": round(pressure(load, cores, curve.override), 4) if known else None,
            "shared": round(pressure(load, cores), 4) if known else None,
            "measured": None if measured is None else round(measured, 4),
            "cycle": self._curves_time,
        }

    def _policy_status(self, key: PolicyKey) -> Mapping[str, Any] | None:
        try:
            return self._cluster.policy_status(key)
        except NotFoundError:
            return None  # a policy read from files has no object to carry a status

    def _policy_json(
        self,
        policy: TASPolicy,
        nodes: list[Json],
        status: Mapping[str, Any] | None,
        columns: MetricColumns,
    ) -> Json:
        names = [NodeName(n["name"]) for n in nodes]
        return {
            "namespace": policy.namespace,
            "name": policy.name,
            "strategies": {
                str(name): {
                    "logicalOperator": str(strategy.logical_operator),
                    "rules": [
                        {
                            "metricname": rule.metricname,
                            "operator": str(rule.operator),
                            "target": rule.target,
                            "text": rule.describe(),
                        }
                        for rule in strategy.rules
                    ],
                }
                for name, strategy in policy.strategies.items()
            },
            "status": status,
            "labelledNodes": [n["name"] for n in nodes if policy.name in n["violating"]],
            # The nodes each strategy acts on now, judged on the values the node cards show:
            # the one source of the page's header, policy card and card colours (the status is
            # the controller's, written a sync period later).
            "nodes": {
                str(name): sorted(violations(strategy, columns, names))
                for name, strategy in policy.strategies.items()
                if name in (StrategyName.DONTSCHEDULE, StrategyName.DESCHEDULE)
            },
        }

    def _point(self, tick: Tick, nodes: Sequence[Node], evicted: int) -> Json:
        names = [n.name for n in nodes]
        classification = self._classification
        point: Json = {"time": tick.now, "evictions": evicted}
        if self._evicted_by:
            point["evicted"] = {s: dict(by_node) for s, by_node in self._evicted_by.items()}
        if self._ages:
            point["metric_age"] = {n: max(a.values()) for n, a in self._ages.items() if a}
        for metric in ("cpu_utilization", "cpu_pressure"):
            column = tick.columns.get(MetricName(metric), {})
            known = {str(n): round(column[n], 4) for n in names if n in column}
            fleet = round(sum(known.values()) / len(known), 4) if known else None
            point[metric] = {**known, FLEET: fleet}
        if classification is not None:
            signal = next(iter(classification.thresholds.high), None)
            point["signal"] = signal
            point["usage"] = {
                n: round(u[signal], 2)
                for n, u in classification.usages.items()
                if signal is not None and signal in u
            }
            point["low"] = classification.thresholds.low.get(signal) if signal else None
            point["high"] = classification.thresholds.high.get(signal) if signal else None
            point["classification"] = {
                n: CATEGORY_VALUE[c] for n, c in classification.categories.items()
            }
        return point

    def _metric_ages(
        self, times: Mapping[MetricName, Mapping[NodeName, float]], nodes: Sequence[Node]
    ) -> dict[str, dict[str, float]]:
        """node -> metric -> age of the newest value measured, fresh or gone stale."""
        for metric, column in times.items():
            seen = self._sampled.setdefault(metric, {})
            for node, stamp in column.items():
                seen[node] = max(stamp, seen.get(node, stamp))
        now = self._metric_clock.now().timestamp()
        names = {n.name for n in nodes}
        ages: dict[str, dict[str, float]] = {}
        for metric, seen in self._sampled.items():
            for node in seen.keys() - names:  # a node gone: forget it
                del seen[node]
            for node, stamp in seen.items():
                # str(): a descheduler signal's name is an enum, and JSON keys are plain str.
                ages.setdefault(node, {})[str(metric)] = round(max(0.0, now - stamp), 1)
        return ages


#: "0.22 -> 0.63 on node-a": a load-aware reason's predicted figure on a node the pod would go to.
_PREDICTED = re.compile(r"-> [0-9.]+ on ([A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])")


def _predicted_destination(reason: str, source: NodeName | None) -> str | None:
    """The node a load-aware eviction's reason predicts its pod goes to ("pressure 0.72 -> 0.27
    on node-e, 0.22 -> 0.63 on node-a": node-a, the one that is not the source), if it names
    one. A prediction: the scheduler, asking the extender, chooses."""
    named = [n for n in _PREDICTED.findall(reason) if n != source]
    return named[-1] if named else None


def _why_chosen(scores: Mapping[NodeName, int] | None) -> str:
    if not scores:
        return "the predicted node was not among those it could choose, or scored lower"
    ranked = ", ".join(f"{n} {v}" for n, v in sorted(scores.items(), key=lambda s: -s[1]))
    return f"the extender's scores {ranked}, with kube-scheduler's own (resources, soft taints)"


def _taint_text(taint: Any) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def _num(value: float | None) -> str:
    if value is None:
        return "missing"
    return f"{value:g}"


__all__ = [
    "FLEET",
    "HISTORY_POINTS",
    "KINDS",
    "SHOWN_METRICS",
    "CurveSource",
    "Recorder",
    "SampleTimes",
    "ServedDemand",
    "Tick",
    "served_demand",
]


def _kept_reasons(cycle: CycleReport) -> dict[str, str]:
    """Per node none of whose pods left in the cycle: the reason its pods stayed that the cycle
    recorded most often (the rail, or the plugin's own reason), and how many more there were."""
    left = {d.node for d in cycle.decisions if d.result in (Result.EVICTED, Result.DRY_RUN)}
    reasons: dict[str, Counter[str]] = {}
    for blocked in cycle.blocked:
        if blocked.node is None or blocked.node in left:
            continue
        # A prediction's figures differ pod by pod: its rule is what names the reason.
        rule = blocked.rule or blocked.why
        reasons.setdefault(blocked.node, Counter())[f"{blocked.strategy}: {rule}"] += 1
    kept = {}
    for node, counted in reasons.items():
        (top, times), *others = counted.most_common()
        more = sum(n for _, n in others)
        kept[node] = f"{top} ({times} pod(s)" + (
            f"; {more} held for other reasons)" if more else ")"
        )
    return kept
