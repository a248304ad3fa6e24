"""From a pod, the current policies and metric values to a filter or prioritize decision.

Pure: no I/O and no clock of its own. Pods that do not use a policy, policies missing from the
pod's namespace and policies without the verb's strategy are not errors: every node passes
(filter) or every node gets the same score (prioritize), and the decision says why. When
dontschedule would remove every candidate while most of the fleet violates, the metric is taken
for broken and every candidate is kept (`tas.breaker`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from extender.decisions import Decision, Outcome, Verb
from extender.wire import PodInfo
from tas.breaker import DEFAULT_MAX_SHARE, judge_strategy
from tas.policies.model import StrategyName, TASPolicy
from tas.policies.store import PolicySnapshot
from tas.rules import ScoreMode, filter_nodes, score_nodes
from tas.types import MetricColumn, MetricColumns, MetricName, NodeName, PolicyKey, PolicyName
from tas.vocabulary import POLICY_LABEL
from tas_herd.placements import Estimates, add_estimates, only_metrics

_STRATEGY = {Verb.FILTER: StrategyName.DONTSCHEDULE, Verb.PRIORITIZE: StrategyName.SCHEDULEONMETRIC}


@dataclass(frozen=True, slots=True)
class Resolution:
    """The policy a pod uses for one verb, or why there is none."""

    policy: TASPolicy | None
    name: str
    outcome: Outcome
    reason: str


def resolve_policy(pod: PodInfo, snapshot: PolicySnapshot, verb: Verb) -> Resolution:
    name = pod.labels.get(POLICY_LABEL)
    if name is None:
        return Resolution(None, "", Outcome.NO_POLICY_LABEL, f"pod has no {POLICY_LABEL} label")
    policy = snapshot.get(PolicyKey(pod.namespace, PolicyName(name)))
    if policy is None:
        return Resolution(
            None,
            name,
            Outcome.POLICY_NOT_FOUND,
            f"policy {name!r} not found in namespace {pod.namespace!r}",
        )
    strategy = _STRATEGY[verb]
    if policy.strategy(strategy) is None:
        return Resolution(
            None, name, Outcome.NO_STRATEGY, f"policy {name!r} has no {strategy.value} strategy"
        )
    return Resolution(policy, name, Outcome.APPLIED, "")


def _read_columns(
    policy: TASPolicy, verb: Verb, metrics: MetricColumns
) -> dict[MetricName, MetricColumn]:
    strategy = policy.strategy(_STRATEGY[verb])
    assert strategy is not None
    return {rule.metricname: metrics.get(rule.metricname, {}) for rule in strategy.rules}


def _decision(
    verb: Verb,
    pod: PodInfo,
    candidates: Sequence[NodeName],
    resolution: Resolution,
    now: float,
    *,
    reason: str,
    failed: Mapping[NodeName, str] | None = None,
    scores: Mapping[NodeName, int] | None = None,
    metrics: Mapping[MetricName, MetricColumn] | None = None,
    estimates: Estimates | None = None,
) -> Decision:
    return Decision(
        time=now,
        verb=verb,
        pod=str(pod),
        pod_uid=pod.uid,
        policy=resolution.name,
        outcome=resolution.outcome,
        reason=reason,
        candidates=tuple(candidates),
        failed=failed or {},
        scores=scores or {},
        metrics=metrics or {},
        estimates=estimates or {},
    )


def decide_filter(
    *,
    pod: PodInfo,
    candidates: Sequence[NodeName],
    snapshot: PolicySnapshot,
    metrics: MetricColumns,
    now: float,
    max_violating_share: float = DEFAULT_MAX_SHARE,
    estimates: Estimates | None = None,
    cores: Callable[[NodeName], float] | None = None,
    servers: Callable[[NodeName], int] | None = None,
) -> Decision:
    """`estimates` are applied when given: the caller passes them for policies that filter
    on recent placements only. `cores` (a node's CPU cores) puts pressure estimates on the
    stall curve (`tas_herd.placements.add_estimates`), the node's own where `servers` has one."""
    resolution = resolve_policy(pod, snapshot, Verb.FILTER)
    if resolution.policy is None:
        return _decision(Verb.FILTER, pod, candidates, resolution, now, reason=resolution.reason)
    read = _read_columns(resolution.policy, Verb.FILTER, metrics)
    used: Estimates = {}
    if estimates:
        used = only_metrics(estimates, read)
    estimated = add_estimates(metrics, used, cores, servers)
    result = filter_nodes(resolution.policy, estimated, candidates)
    if used and candidates and not result.passed:
        # Estimates are a guess: they never leave a pod without every node its measured
        # values allow. Filter on measured values alone (and judge the breaker on them).
        used = {}
        result = filter_nodes(resolution.policy, metrics, candidates)
    if candidates and not result.passed:
        # Only now is the fleet looked at (a rare case, so the common one stays cheap).
        strategy = resolution.policy.strategy(StrategyName.DONTSCHEDULE)
        assert strategy is not None
        verdict = judge_strategy(strategy, metrics, max_share=max_violating_share)
        if verdict.open:
            return _decision(
                Verb.FILTER,
                pod,
                candidates,
                Resolution(resolution.policy, resolution.name, Outcome.BREAKER_OPEN, ""),
                now,
                reason=f"dontschedule would remove every node, and {verdict.describe()}: "
                f"all {len(candidates)} kept (fail open)",
                metrics=read,
            )
    kept = len(candidates) - len(result.failed)
    return _decision(
        Verb.FILTER,
        pod,
        candidates,
        resolution,
        now,
        reason=f"{len(result.failed)} of {len(candidates)} nodes violate dontschedule, {kept} kept",
        failed=result.failed,
        metrics=read,
        estimates=used,
    )


def decide_prioritize(
    *,
    pod: PodInfo,
    candidates: Sequence[NodeName],
    snapshot: PolicySnapshot,
    metrics: MetricColumns,
    mode: ScoreMode,
    now: float,
    estimates: Estimates | None = None,
    cores: Callable[[NodeName], float] | None = None,
    servers: Callable[[NodeName], int] | None = None,
    newcomers: Collection[NodeName] = (),
) -> Decision:
    """`newcomers`: herd control's nodes that run nothing but recent placements; one without a
    value scores as a typical node (`tas.rules.score_values`)."""
    resolution = resolve_policy(pod, snapshot, Verb.PRIORITIZE)
    measured: dict[MetricName, MetricColumn] = {}
    used: Estimates = {}
    if resolution.policy is None:
        reason, scores = resolution.reason, dict.fromkeys(candidates, 0)
    else:
        measured = _read_columns(resolution.policy, Verb.PRIORITIZE, metrics)
        if estimates:
            used = only_metrics(estimates, measured)
            metrics = add_estimates(metrics, used, cores, servers)
        reason = f"scheduleonmetric, {mode.value} scores" + (
            ", with recent placements" if used else ""
        )
        scores = score_nodes(resolution.policy, metrics, candidates, mode=mode, newcomers=newcomers)
    return _decision(
        Verb.PRIORITIZE,
        pod,
        candidates,
        resolution,
        now,
        reason=reason,
        scores=scores,
        metrics=measured,
        estimates=used,
    )
