"""Building the explanations (`tas_explain.explanation`) from plain values, pure (no I/O): why a
pod runs where it does, and why it would move; what a node looks like to every policy.

The wiring (`tas_explain.facts`) gathers the facts (the cluster's nodes and pods, the metric
view's fresh values and their sample times, the policies, the extender's decision log as
`/debug/decisions` serves it, the Events, and a dry run of the descheduler's current cycle as a
`MoveVerdict`) and hands them to `explain_pod` or `explain_node`; what it could not read goes
in `missing`, so an unreachable extender still leaves the rest explained.

Verdicts come from the rule engine (`tas.rules`), never from a second reading of the rules:
a node's dontschedule and deschedule verdicts are `tas.rules.violations`, its scheduleonmetric
score is `tas.rules.score_nodes` over every node, exactly what the extender computes.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tas.calibration.curve import NodeCurve
from tas.cluster.model import Node, Pod
from tas.fit import rejection
from tas.policies.model import StrategyName, TASPolicy, format_number
from tas.pressure import NodeLoad
from tas.rules import ScoreMode, labeling_labels, score_nodes, violation_reason, violations
from tas.types import MetricColumns, MetricName, NodeName, PolicyKey, PolicyName
from tas.vocabulary import POLICY_LABEL
from tas_explain.explanation import (
    GONE,
    Candidate,
    CurveReading,
    EventFact,
    Eviction,
    ExtenderDecision,
    ExtenderRecord,
    MetricReading,
    MoveVerdict,
    NodeExplanation,
    NotOffered,
    PodExplanation,
    PolicyVerdict,
    UnknownObjectError,
)
from tas_herd.placements import still_runs

#: The message prefix of the Event the descheduler's evictor writes on every pod it evicts
#: (descheduler.evictor: "pod eviction from NODE node by ..."), upstream's words
#: (kubernetes-sigs/descheduler pkg/descheduler/evictions/evictions.go, EvictPod).
EVICTION_MESSAGE = "pod eviction from {node} node by "
#: How many near matches an unknown name lists.
NEAR_MATCHES = 5


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
    runs_pods: bool = True,
) -> list[PolicyVerdict]:
    """Every strategy of `policy` on `node`; scheduleonmetric ranked among `nodes`.

    `runs_pods`: whether any pod runs on the node. A node without a value that runs none is
    scored as the extender's herd control scores it, as a typical node (`_without_value`)."""
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
                # Scored as a newcomer: what the extender gives it while it runs only recent
                # placements (a duplicate candidate counts once).
                typical = score_nodes(
                    policy, metrics, [*nodes, node], mode=score_mode, newcomers={node}
                )[node]
                found.append(_without_value(name, kind, rule.metricname, typical, runs_pods))
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


def _without_value(
    policy: str, strategy: str, metric: MetricName, typical: int, runs_pods: bool
) -> PolicyVerdict:
    """scheduleonmetric on a node without a fresh value, as the extender scores it
    (docs/recent-placements.md, "Nodes without a value"): 0, as in TAS, unless herd control
    knows the node runs nothing but its recent placements; then `typical`, the valued nodes'
    median score.

    Which pods are recent placements only the extender knows, so the score is certain only for
    a node that runs no pod at all (one that just joined). For one that runs pods both scores
    are said, and the extender's decision log has the one it gave."""
    if not runs_pods:
        detail = (
            "it runs no pod, so the extender takes it as a typical node: "
            f"score {typical}/10, the valued nodes' median (0 with --recent-placements off)"
        )
        return PolicyVerdict(
            policy, strategy, "no value", f"{metric}: no fresh value; {detail}", score=typical
        )
    detail = (
        f"the extender scores it 0, or {typical}/10 (the valued nodes' median) while every pod "
        "on it is one it placed recently; its decision log has the score it gave"
    )
    return PolicyVerdict(policy, strategy, "no value", f"{metric}: no fresh value; {detail}")


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
            policies[key],
            node.name,
            metrics,
            [n.name for n in nodes],
            score_mode=score_mode,
            runs_pods=any(p.node_name == node.name and still_runs(p) for p in pods),
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
