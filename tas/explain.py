"""`tas explain`: why a pod runs where it does, and why it would move; what a node looks like to
every policy. Built once, here, from plain values (pure: no I/O), and used by the command line,
the dashboard's `/api/explain/...` and the page.

The wiring layer gathers the facts (the cluster's nodes and pods, the metric view's fresh
values and their sample times, the policies, the extender's decision log as `/debug/decisions`
serves it, the Events, and a dry run of the descheduler's current cycle as a `MoveVerdict`)
and hands them to `explain_pod` or `explain_node`; what it could not read goes in `missing`,
so an unreachable extender still leaves the rest explained. The results are frozen dataclasses
that turn into JSON (`to_json`) and back (`pod_from_json`, `node_from_json`), and into the text
`tas explain` prints (`render_pod`, `render_node`).

Verdicts come from the rule engine (`tas.rules`), never from a second reading of the rules:
a node's dontschedule and deschedule verdicts are `tas.rules.violations`, its scheduleonmetric
score is `tas.rules.score_nodes` over every node, exactly what the extender computes.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from tas.calibration.curve import NodeCurve
from tas.cluster.model import Node, Pod
from tas.fit import rejection
from tas.policies.model import StrategyName, TASPolicy, format_number
from tas.pressure import NodeLoad
from tas.rules import ScoreMode, labeling_labels, score_nodes, violation_reason, violations
from tas.types import MetricColumns, MetricName, NodeName, PolicyKey, PolicyName
from tas.vocabulary import POLICY_LABEL

#: The message prefix of the Event the descheduler's evictor writes on every pod it evicts
#: (descheduler.evictor: "pod eviction from NODE node by ..."), upstream's words
#: (kubernetes-sigs/descheduler pkg/descheduler/evictions/evictions.go, EvictPod).
EVICTION_MESSAGE = "pod eviction from {node} node by "
#: The phase of a pod that no longer exists, explained by its eviction Events.
GONE = "Gone"
#: How many near matches an unknown name lists.
NEAR_MATCHES = 5


# ------------------------------------------------------------------------------ the results


@dataclass(frozen=True, slots=True)
class MetricReading:
    """One metric on one node: its fresh value and how old it is (None: no fresh value)."""

    metric: str
    value: float | None
    age_seconds: float | None


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """One strategy of one policy on one node."""

    policy: str
    strategy: str
    #: "violates", "passes", "no value" (a rule's metric has no fresh value: fails open),
    #: "score" (scheduleonmetric) or "labels" (labeling).
    verdict: str
    #: The rules and values behind the verdict, e.g. `health_metric Equals 2 (value 2)`.
    detail: str
    score: int | None = None
    rank: int | None = None
    of: int | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate node of the extender's decision for the pod."""

    node: str
    #: "pass" or "fail" (filter); None when only scored.
    verdict: str | None = None
    reason: str | None = None
    score: int | None = None
    #: The metric values the decision read on the node (metric -> value).
    metrics: Mapping[str, float] = field(default_factory=dict)
    #: What recent placements added to them (herd control).
    estimates: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExtenderRecord:
    """One entry of the extender's decision log (`extender.decisions.Decision.to_json`)."""

    time: float
    verb: str
    pod: str
    pod_uid: str
    policy: str
    outcome: str
    reason: str
    nodes: tuple[Candidate, ...]


@dataclass(frozen=True, slots=True)
class ExtenderDecision:
    """The extender's last filter and prioritize decisions for the pod, merged per node (what
    `tas explain` shows under "Placement"; not the scheduler model's `ScheduleResult` nor herd
    control's `tas.placements.Placement`)."""

    filter_time: float | None
    prioritize_time: float | None
    policy: str
    #: Why every node passed or scored alike, when the extender did not apply a policy.
    outcome: str
    reason: str
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True, slots=True)
class NotOffered:
    """A node kube-scheduler did not send the extender for the pod, and why, as its own filters
    judge the node now (node selection, taints, resources, readiness)."""

    node: str
    reason: str


@dataclass(frozen=True, slots=True)
class MoveVerdict:
    """Whether the descheduler's current cycle, run dry, would evict the pod, and why."""

    would_move: bool
    summary: str
    strategy: str | None = None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EventFact:
    """An Event, as both clusters record it."""

    time: float | None
    kind: str
    namespace: str
    name: str
    reason: str
    message: str
    type: str = "Normal"


@dataclass(frozen=True, slots=True)
class Eviction:
    """A pod evicted from a node, from the Event the descheduler wrote on it."""

    time: float | None
    pod: str
    strategy: str
    message: str


@dataclass(frozen=True, slots=True)
class PodExplanation:
    namespace: str
    name: str
    node: str | None
    phase: str
    #: The pod's `telemetry-policy` label (None: no TAS policy applies).
    policy_label: str | None
    #: Whether the labelled policy exists in the pod's namespace.
    policy_found: bool
    #: Every strategy of the pod's policy on the node it runs on.
    policies: tuple[PolicyVerdict, ...]
    placement: ExtenderDecision | None
    move: MoveVerdict | None
    evictions: tuple[Eviction, ...]
    #: What could not be read, each with why (the rest is still explained).
    missing: tuple[str, ...] = ()
    #: The cluster's other nodes, which the extender never saw for this pod, each with why.
    not_offered: tuple[NotOffered, ...] = ()


@dataclass(frozen=True, slots=True)
class CurveReading:
    """The node's pressure curve as the descheduler learned it (`tas.calibration.curve`), and
    what it predicts for a move of one core off the node, beside the shared model's."""

    #: Effective servers (its cores on the fallback).
    servers: int
    #: Informative (utilization, PSI) samples fitted on.
    samples: int
    #: Too few samples: the shared model predicts for the node.
    fallback: bool
    cores: float
    #: The node's pressure now, read on its curve (None: no CPU reading).
    pressure: float | None = None
    #: ... and once one core of its load moved away, on its curve and on the shared model.
    pressure_after_move: float | None = None
    shared_pressure_after_move: float | None = None
    #: Stalled cores one core's move takes off the node, on its curve and on the shared model.
    relief: float | None = None
    shared_relief: float | None = None


def curve_reading(
    curve: NodeCurve, *, cores: float, utilization: float | None, psi: float | None
) -> CurveReading:
    """The node's curve and what it predicts for moving one core off it."""
    found = CurveReading(curve.servers, curve.samples, curve.fallback, cores)
    if cores <= 0 or (utilization is None and psi is None):
        return found
    own = NodeLoad.measured(cores, utilization=utilization, psi=psi, servers=curve.override)
    shared = NodeLoad.measured(cores, utilization=utilization, psi=psi)
    return dataclasses.replace(
        found,
        pressure=own.pressure,
        pressure_after_move=own.plus(-1.0).pressure,
        shared_pressure_after_move=shared.plus(-1.0).pressure,
        relief=own.stalled - own.plus(-1.0).stalled,
        shared_relief=shared.stalled - shared.plus(-1.0).stalled,
    )


@dataclass(frozen=True, slots=True)
class NodeExplanation:
    name: str
    ready: bool
    labels: Mapping[str, str]
    taints: tuple[str, ...]
    metrics: tuple[MetricReading, ...]
    policies: tuple[PolicyVerdict, ...]
    pods: tuple[str, ...]
    evictions: tuple[Eviction, ...]
    missing: tuple[str, ...] = ()
    #: Its learned pressure curve (None: no descheduler learns one here).
    curve: CurveReading | None = None


class UnknownObjectError(LookupError):
    """No pod or node of that name; `near` lists the names most like it."""

    def __init__(self, kind: str, name: str, near: Sequence[str]) -> None:
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        super().__init__(f"no {kind} named {name}{hint}")
        self.kind = kind
        self.name = name
        self.near = tuple(near)


# ------------------------------------------------------------------------------ building


def near_matches(wanted: str, names: Iterable[str], *, count: int = NEAR_MATCHES) -> list[str]:
    """The names most like `wanted`: those it starts (a Deployment's pods from its name),
    then close spellings."""
    pool = sorted(set(names))
    prefixed = [n for n in pool if n.startswith(wanted) or n.split("/")[-1].startswith(wanted)]
    close = difflib.get_close_matches(wanted, pool, n=count, cutoff=0.5)
    found = list(dict.fromkeys([*prefixed, *close]))
    return found[:count]


def find_pod(pods: Sequence[Pod], namespace: str, name: str) -> Pod:
    for pod in pods:
        if pod.namespace == namespace and pod.name == name:
            return pod
    key = f"{namespace}/{name}"
    raise UnknownObjectError(
        "pod", key, near_matches(key, [f"{p.namespace}/{p.name}" for p in pods])
    )


def find_node(nodes: Sequence[Node], name: str) -> Node:
    for node in nodes:
        if node.name == name:
            return node
    raise UnknownObjectError("node", name, near_matches(name, [n.name for n in nodes]))


def parse_decisions(raw: object) -> list[ExtenderRecord]:
    """`/debug/decisions` (newest first) as records; entries of another shape are skipped."""
    records: list[ExtenderRecord] = []
    if not isinstance(raw, list):
        return records
    for entry in raw:
        if not isinstance(entry, Mapping):
            continue
        try:
            nodes = tuple(
                Candidate(
                    node=str(n["node"]),
                    verdict=n.get("verdict"),
                    reason=n.get("reason"),
                    score=n.get("score"),
                    metrics={str(k): float(v) for k, v in (n.get("metrics") or {}).items()},
                    estimates={str(k): float(v) for k, v in (n.get("estimates") or {}).items()},
                )
                for n in entry.get("nodes") or ()
            )
            records.append(
                ExtenderRecord(
                    time=float(entry["time"]),
                    verb=str(entry["verb"]),
                    pod=str(entry["pod"]),
                    pod_uid=str(entry.get("podUID") or ""),
                    policy=str(entry.get("policy") or ""),
                    outcome=str(entry.get("outcome") or ""),
                    reason=str(entry.get("reason") or ""),
                    nodes=nodes,
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return records


def placement_of(pod: Pod, records: Sequence[ExtenderRecord]) -> ExtenderDecision | None:
    """The pod's newest filter and prioritize decisions (by UID when the log has one, else by
    name: a replacement pod has a new name), merged node by node."""
    key = f"{pod.namespace}/{pod.name}"

    def mine(record: ExtenderRecord) -> bool:
        if record.pod_uid and pod.uid:
            return record.pod_uid == pod.uid
        return record.pod == key

    newest: dict[str, ExtenderRecord] = {}
    for record in records:
        if mine(record) and (record.verb not in newest or record.time > newest[record.verb].time):
            newest[record.verb] = record
    filtered, scored = newest.get("filter"), newest.get("prioritize")
    if filtered is not None and scored is not None and scored.time < filtered.time:
        scored = None  # an earlier attempt's scores: the last filter left nothing to score
    if filtered is None and scored is None:
        return None
    merged: dict[str, Candidate] = {}
    for decided in (r for r in (filtered, scored) if r is not None):
        for candidate in decided.nodes:
            before = merged.get(candidate.node)
            if before is None:
                merged[candidate.node] = candidate
            else:
                merged[candidate.node] = dataclasses.replace(
                    before,
                    score=candidate.score if candidate.score is not None else before.score,
                    metrics={**before.metrics, **candidate.metrics},
                    estimates={**before.estimates, **candidate.estimates},
                )
    main = filtered or scored
    assert main is not None
    unapplied = next(
        (r for r in (filtered, scored) if r is not None and r.outcome != "applied"), None
    )
    return ExtenderDecision(
        filter_time=filtered.time if filtered else None,
        prioritize_time=scored.time if scored else None,
        policy=main.policy,
        outcome=unapplied.outcome if unapplied else "applied",
        reason=unapplied.reason if unapplied else "",
        candidates=tuple(merged.values()),
    )


def policy_verdicts(
    policy: TASPolicy,
    node: NodeName,
    metrics: MetricColumns,
    nodes: Sequence[NodeName],
    *,
    score_mode: ScoreMode = ScoreMode.PROPORTIONAL,
) -> list[PolicyVerdict]:
    """Every strategy of `policy` on `node`; scheduleonmetric ranked among `nodes`."""
    found: list[PolicyVerdict] = []
    name = str(policy.key)
    for strategy_name, strategy in policy.strategies.items():
        kind = str(strategy_name)
        if strategy_name in (StrategyName.DONTSCHEDULE, StrategyName.DESCHEDULE):
            hits = violations(strategy, metrics, [node]).get(node)
            if hits:
                verdict, detail = "violates", violation_reason(policy.name, hits)
            else:
                verdict, detail = _not_violated(strategy.rules, metrics, node, policy.name)
                if len(strategy.rules) > 1:
                    detail += f" ({strategy.logical_operator})"
            found.append(PolicyVerdict(name, kind, verdict, detail))
        elif strategy_name is StrategyName.SCHEDULEONMETRIC:
            rule = strategy.rules[0]
            value = metrics.get(rule.metricname, {}).get(node)
            if value is None:
                found.append(
                    PolicyVerdict(name, kind, "no value", f"{rule.metricname}: no fresh value")
                )
                continue
            scores = score_nodes(policy, metrics, nodes, mode=score_mode)
            better = sum(1 for s in scores.values() if s > scores.get(node, 0))
            order = _order_words(str(rule.operator))
            found.append(
                PolicyVerdict(
                    name,
                    kind,
                    "score",
                    f"{rule.metricname} {format_number(value)} ({order})",
                    score=scores.get(node, 0),
                    rank=better + 1,
                    of=len(scores),
                )
            )
        elif strategy_name is StrategyName.LABELING:
            labels = labeling_labels(policy, metrics, [node]).get(node, {})
            detail = ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "no label"
            found.append(PolicyVerdict(name, kind, "labels", detail))
    return found


def _order_words(operator: str) -> str:
    if operator in ("GreaterThan", "GreaterOrEqual"):
        return "higher value scores higher"
    if operator in ("LessThan", "LessOrEqual"):
        return "lower value scores higher"
    return "every node with a value scores the same"


def _not_violated(
    rules: Sequence[Any], metrics: MetricColumns, node: NodeName, policy: PolicyName
) -> tuple[str, str]:
    parts: list[str] = []
    absent = 0
    for rule in rules:
        value = metrics.get(rule.metricname, {}).get(node)
        if value is None:
            absent += 1
            parts.append(f"{rule.describe()} (no fresh value: fails open)")
        else:
            parts.append(f"{rule.describe()} is false (value {format_number(value)})")
    verdict = "no value" if absent == len(rules) else "passes"
    return verdict, f"{policy}: " + ", ".join(parts)


def evictions_from(
    events: Iterable[EventFact], *, node: str | None = None, pod: str | None = None
) -> tuple[Eviction, ...]:
    """The evictions the descheduler's Events tell, from `node` or of `pod` (newest first)."""
    found: list[Eviction] = []
    for event in events:
        if event.kind != "Pod" or " node by " not in event.message:
            continue
        if not event.message.startswith("pod eviction from "):
            continue
        key = f"{event.namespace}/{event.name}"
        if node is not None and not event.message.startswith(EVICTION_MESSAGE.format(node=node)):
            continue
        if pod is not None and key != pod:
            continue
        found.append(Eviction(event.time, key, event.reason, event.message))
    found.sort(key=lambda e: -(e.time or 0.0))
    return tuple(found)


def explain_pod(
    pod: Pod,
    *,
    nodes: Sequence[Node],
    policies: Mapping[PolicyKey, TASPolicy],
    metrics: MetricColumns,
    decisions: Sequence[ExtenderRecord] | None,
    move: MoveVerdict | None,
    events: Sequence[EventFact] = (),
    score_mode: ScoreMode = ScoreMode.PROPORTIONAL,
    missing: Sequence[str] = (),
    pods: Sequence[Pod] = (),
) -> PodExplanation:
    """`decisions` None: the extender's log could not be read (say why in `missing`). `pods`:
    the cluster's pods, for why a node was not offered (its resources)."""
    label = pod.labels.get(POLICY_LABEL)
    policy = policies.get(PolicyKey(pod.namespace, PolicyName(label))) if label else None
    verdicts: list[PolicyVerdict] = []
    if policy is not None and pod.node_name is not None:
        verdicts = policy_verdicts(
            policy, pod.node_name, metrics, [n.name for n in nodes], score_mode=score_mode
        )
    placement = placement_of(pod, decisions) if decisions is not None else None
    return PodExplanation(
        namespace=pod.namespace,
        name=pod.name,
        node=pod.node_name,
        phase=pod.phase,
        policy_label=label,
        policy_found=policy is not None,
        policies=tuple(verdicts),
        placement=placement,
        move=move,
        evictions=evictions_from(events, pod=f"{pod.namespace}/{pod.name}"),
        missing=tuple(missing),
        not_offered=not_offered(pod, placement, nodes, pods) if placement is not None else (),
    )


def not_offered(
    pod: Pod, placement: ExtenderDecision, nodes: Sequence[Node], pods: Sequence[Pod]
) -> tuple[NotOffered, ...]:
    """The nodes missing from the extender's candidates for the pod, with why: kube-scheduler's
    own filters (node selection, taints, resources) as they judge the node now, or, where they
    would accept it now, that kube-scheduler did not send it then."""
    offered = {c.node for c in placement.candidates}
    by_node: dict[str, list[Pod]] = {}
    for other in pods:
        if other.node_name is not None:
            by_node.setdefault(other.node_name, []).append(other)
    found = []
    for node in sorted(nodes, key=lambda n: n.name):
        if node.name in offered:
            continue
        why = rejection(pod, node, pods_on_node=by_node.get(node.name, ()))
        found.append(
            NotOffered(
                node.name,
                why
                or "kube-scheduler did not send it (it may have joined since, or the scheduler "
                "sent only a sample of the nodes)",
            )
        )
    return tuple(found)


def explain_gone_pod(
    namespace: str, name: str, *, events: Sequence[EventFact], missing: Sequence[str] = ()
) -> PodExplanation | None:
    """A pod that no longer exists but was evicted (its Events remain): why it was moved.
    None when no eviction of it is recorded."""
    evictions = evictions_from(events, pod=f"{namespace}/{name}")
    if not evictions:
        return None
    return PodExplanation(
        namespace=namespace,
        name=name,
        node=None,
        phase=GONE,
        policy_label=None,
        policy_found=False,
        policies=(),
        placement=None,
        move=None,
        evictions=evictions,
        missing=tuple(missing),
    )


def explain_node(
    node: Node,
    *,
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    policies: Mapping[PolicyKey, TASPolicy],
    metrics: MetricColumns,
    sample_times: Mapping[MetricName, Mapping[NodeName, float]],
    now: float,
    shown: Iterable[MetricName] = (),
    events: Sequence[EventFact] = (),
    score_mode: ScoreMode = ScoreMode.PROPORTIONAL,
    missing: Sequence[str] = (),
    curve: NodeCurve | None = None,
) -> NodeExplanation:
    """`shown`: metrics to list even without a fresh value (the ones policies read);
    `curve`: the node's learned pressure curve, where a descheduler learns one."""
    names = sorted(
        {*shown, *(m for m, column in metrics.items() if node.name in column)}
        | {r.metricname for p in policies.values() for s in p.strategies.values() for r in s.rules}
    )
    readings = []
    for metric in names:
        value = metrics.get(metric, {}).get(node.name)
        sampled = sample_times.get(metric, {}).get(node.name)
        age = None if value is None or sampled is None else max(0.0, now - sampled)
        readings.append(MetricReading(metric, value, age))
    verdicts = [
        verdict
        for key in sorted(policies, key=str)
        for verdict in policy_verdicts(
            policies[key], node.name, metrics, [n.name for n in nodes], score_mode=score_mode
        )
    ]
    return NodeExplanation(
        name=node.name,
        ready=node.ready,
        labels=dict(node.labels),
        taints=tuple(_taint(t) for t in node.taints),
        metrics=tuple(readings),
        policies=tuple(verdicts),
        pods=tuple(sorted(f"{p.namespace}/{p.name}" for p in pods if p.node_name == node.name)),
        evictions=evictions_from(events, node=node.name),
        missing=tuple(missing),
        curve=(
            curve_reading(
                curve,
                cores=node.allocatable.get("cpu", 0.0),
                utilization=metrics.get(_CPU_UTILIZATION, {}).get(node.name),
                psi=metrics.get(_CPU_PRESSURE, {}).get(node.name),
            )
            if curve is not None
            else None
        ),
    )


_CPU_UTILIZATION = MetricName("cpu_utilization")
_CPU_PRESSURE = MetricName("cpu_pressure")


def _taint(taint: Any) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


# ------------------------------------------------------------------------------ JSON


def to_json(value: Any) -> Any:
    """A result as JSON-ready data, keys in camelCase as the dashboard's API has them."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_camel(f.name): to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    return value


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


T = TypeVar("T")


def _from_json(kind: Any, data: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        return None if data is None else _from_json(options[0], data)
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        if not isinstance(data, Mapping):
            raise ValueError(f"expected an object for {kind.__name__}")
        hints = typing.get_type_hints(kind)
        values = {
            f.name: _from_json(hints[f.name], data[_camel(f.name)])
            for f in dataclasses.fields(kind)
            # A field an older answer lacks keeps its default.
            if _camel(f.name) in data or f.default is dataclasses.MISSING
            if _camel(f.name) in data
        }
        return kind(**values)
    if origin is tuple:
        (item, _) = typing.get_args(kind)
        return tuple(_from_json(item, v) for v in data)
    if origin is Mapping or origin is dict:
        _, item = typing.get_args(kind)
        return {str(k): _from_json(item, v) for k, v in data.items()}
    if kind is float and isinstance(data, int | float):
        return float(data)
    return data


def pod_from_json(data: Any) -> PodExplanation:
    """What `to_json` made of a `PodExplanation` (the dashboard's answer), back."""
    found: PodExplanation = _from_json(PodExplanation, data)
    return found


def node_from_json(data: Any) -> NodeExplanation:
    found: NodeExplanation = _from_json(NodeExplanation, data)
    return found


# ------------------------------------------------------------------------------ text


def _num(value: float | None) -> str:
    return "-" if value is None else format_number(round(value, 4))


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "no fresh value"
    return f"{seconds:.1f}s old" if seconds < 120 else f"{seconds / 60:.0f}m old"


def render_pod(found: PodExplanation) -> str:
    lines = [f"Pod {found.namespace}/{found.name}"]
    if found.phase == GONE:
        lines.append(
            "  no longer exists: the descheduler evicted it (its owner, if any, made a new pod "
            "in its place, which `tas explain pod` explains too)"
        )
        lines.append("Evicted (Events):")
        lines.extend(f"  {_when(e.time)} {e.strategy}: {e.message}" for e in found.evictions)
        lines.extend(_missing_lines(found.missing))
        return "\n".join(lines)
    where = found.node or "nowhere yet (pending)"
    lines.append(f"  runs on: {where} (phase {found.phase})")
    if found.policy_label is None:
        lines.append(
            f"  policy: none (no {POLICY_LABEL} label): the extender lets every node pass and "
            "scores them alike; only the descheduler's non-TAS strategies apply"
        )
    elif not found.policy_found:
        lines.append(
            f"  policy: {found.namespace}/{found.policy_label} (label {POLICY_LABEL}) does not "
            "exist: the extender passes every node"
        )
    else:
        lines.append(f"  policy: {found.namespace}/{found.policy_label} (label {POLICY_LABEL})")
        for verdict in found.policies:
            lines.append("    " + _verdict_line(verdict, on=found.node))
    lines.append("")
    lines.extend(_placement_lines(found.placement, runs_on=found.node))
    lines.extend(_not_offered_lines(found))
    lines.append("")
    if found.move is None:
        lines.append("Would the descheduler move it now? not evaluated (see missing below)")
    else:
        answer = "yes" if found.move.would_move else "no"
        lines.append(f"Would the descheduler move it now? {answer}: {found.move.summary}")
        lines.extend(f"  - {reason}" for reason in found.move.reasons)
    if found.evictions:
        lines.append("")
        lines.append("Evicted before (Events):")
        lines.extend(f"  {_when(e.time)} {e.strategy}: {e.message}" for e in found.evictions)
    lines.extend(_missing_lines(found.missing))
    return "\n".join(lines)


def _verdict_line(verdict: PolicyVerdict, *, on: str | None) -> str:
    where = f" on {on}" if on else ""
    if verdict.verdict == "score":
        return (
            f"{verdict.strategy}: score {verdict.score}/10{where}, rank {verdict.rank} of "
            f"{verdict.of} nodes: {verdict.detail}"
        )
    return f"{verdict.strategy}: {verdict.verdict}{where}: {verdict.detail}"


def _placement_lines(placement: ExtenderDecision | None, *, runs_on: str | None) -> list[str]:
    if placement is None:
        return [
            "Placement: no decision for this pod in the extender's log (it keeps only the most "
            "recent ones; the pod may have been placed before them, or without the extender)"
        ]
    lines = [f"Placement (extender, {_when(placement.filter_time or placement.prioritize_time)}):"]
    if placement.outcome != "applied":
        lines.append(
            f"  every node passed and scored alike: {placement.outcome}: {placement.reason}"
        )
    for candidate in placement.candidates:
        parts = []
        if candidate.verdict is not None:
            parts.append("kept" if candidate.verdict == "pass" else "filtered out")
        if candidate.score is not None:
            parts.append(f"score {candidate.score}")
        if candidate.reason:
            parts.append(candidate.reason)
        elif candidate.metrics:
            values = ", ".join(f"{m} {_num(v)}" for m, v in sorted(candidate.metrics.items()))
            parts.append(values)
        if candidate.estimates:
            extra = ", ".join(f"{m} +{_num(v)}" for m, v in sorted(candidate.estimates.items()))
            parts.append(f"recent placements add {extra}")
        here = "  <- runs here" if candidate.node == runs_on else ""
        lines.append(f"  {candidate.node}: {'; '.join(parts) or 'candidate'}{here}")
    return lines


def _not_offered_lines(found: PodExplanation) -> list[str]:
    if not found.not_offered:
        return []
    return [
        "  not offered to the extender by kube-scheduler:",
        *(f"  {n.node}: {n.reason}" for n in found.not_offered),
    ]


def render_node(found: NodeExplanation) -> str:
    lines = [f"Node {found.name} ({'Ready' if found.ready else 'NotReady'})", "Metrics:"]
    if not found.metrics:
        lines.append("  none known")
    for reading in found.metrics:
        lines.append(f"  {reading.metric}: {_num(reading.value)} ({_age(reading.age_seconds)})")
    lines.append("Policies:")
    if not found.policies:
        lines.append("  none")
    for verdict in found.policies:
        lines.append(f"  {verdict.policy} " + _verdict_line(verdict, on=None))
    lines.append("Labels:")
    lines.extend(f"  {k}={v}" for k, v in sorted(found.labels.items()))
    lines.append("Taints: " + (", ".join(found.taints) or "none"))
    lines.append("Pods: " + (", ".join(found.pods) or "none"))
    lines.append("Recent evictions (Events):")
    if not found.evictions:
        lines.append("  none")
    lines.extend(f"  {_when(e.time)} {e.pod} ({e.strategy}): {e.message}" for e in found.evictions)
    if found.curve is not None:
        lines.extend(_curve_lines(found.curve))
    lines.extend(_missing_lines(found.missing))
    return "\n".join(lines)


def _curve_lines(curve: CurveReading) -> list[str]:
    if curve.fallback:
        head = (
            f"Pressure curve: the shared model ({curve.servers} servers on {curve.cores:g} "
            f"cores): {curve.samples} samples so far, too few to fit"
        )
    else:
        head = (
            f"Pressure curve: learned, {curve.servers} effective servers on {curve.cores:g} "
            f"cores (from {curve.samples} samples)"
        )
    lines = [head]
    if curve.pressure is not None:
        lines.append(
            f"  moving 1 core off: pressure {_num(curve.pressure)} -> "
            f"{_num(curve.pressure_after_move)}, relief {_num(curve.relief)} stalled cores"
            + (
                ""
                if curve.fallback
                else f" (shared model: -> {_num(curve.shared_pressure_after_move)}, relief "
                f"{_num(curve.shared_relief)})"
            )
        )
    return lines


def _missing_lines(missing: Sequence[str]) -> list[str]:
    if not missing:
        return []
    return ["", "Not explained (could not be read):", *(f"  - {m}" for m in missing)]


def _when(time: float | None) -> str:
    if time is None:
        return "at an unknown time"
    return datetime.fromtimestamp(time, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


__all__ = [
    "Candidate",
    "CurveReading",
    "EventFact",
    "Eviction",
    "ExtenderDecision",
    "ExtenderRecord",
    "MetricReading",
    "MoveVerdict",
    "NodeExplanation",
    "NotOffered",
    "PodExplanation",
    "PolicyVerdict",
    "UnknownObjectError",
    "curve_reading",
    "evictions_from",
    "explain_gone_pod",
    "explain_node",
    "explain_pod",
    "find_node",
    "find_pod",
    "near_matches",
    "node_from_json",
    "not_offered",
    "parse_decisions",
    "placement_of",
    "pod_from_json",
    "policy_verdicts",
    "render_node",
    "render_pod",
    "to_json",
]
