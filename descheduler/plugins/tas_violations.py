"""TASViolations: evict pods whose node violates their TASPolicy's `deschedule` rules.

This is TAS's own loop, closed here: the policy controller labels violating nodes and the
pods on them; this plugin evicts the pods that link the policy (label
`telemetry-policy=<name>`, the policy in the pod's namespace), or that the controller labelled
`violate=<policy>`, from those nodes. `violationSource` says where violations are read from
(`descheduler.violations`): fresh metrics (the rules as the cycle evaluated them once, the
evaluation the circuit breaker judged), the controller's labels (node `<policy>=violating`, pod
`violate=<policy>`), or both agreeing. The per-owner cooldown guards it.

Where per-pod usage is measured, a pod leaves only for a node with measured CPU room for it
(`measuredRoom`, on by default; `descheduler.room`): nodeFit by requests alone let an
evacuation push pods onto nodes already full in use. A pod held back stays until room appears,
and the cycle's report says why (`tas explain`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.framework import (
    EvictOptions,
    ExtensionPoint,
    Outcome,
    Plugin,
    PluginContext,
    PluginName,
    sort_candidates,
)
from descheduler.room import MeasuredRoom
from descheduler.state import CycleState
from descheduler.violations import ViolationSource, violating_nodes
from tas.cluster.model import Pod
from tas.policies.model import TASPolicy
from tas.types import NodeName, PolicyKey, PolicyName
from tas.vocabulary import POD_VIOLATION_LABEL

NAME = PluginName("TASViolations")


@dataclass(frozen=True, slots=True)
class TASViolationsArgs:
    source: ViolationSource = ViolationSource.METRICS
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)
    #: Evict a pod only to a node with measured CPU room for it (`descheduler.room`), where
    #: per-pod usage is measured; false: wherever nodeFit lets it go, as TAS's descheduler does.
    measured_room: bool = True


def parse_args(r: FieldReader) -> TASViolationsArgs:
    raw = r.get("violationSource")
    source = ViolationSource.METRICS
    if raw is not None:
        if raw in {s.value for s in ViolationSource}:
            source = ViolationSource(raw)
        else:
            known = ", ".join(s.value for s in ViolationSource)
            r.problem(r.at("violationSource"), f"unknown source {raw!r}; known: {known}")
    return TASViolationsArgs(
        source=source,
        namespaces=r.namespaces(),
        measured_room=r.boolean("measuredRoom", True),
    )


def run(args: TASViolationsArgs, context: PluginContext) -> None:
    candidates = _candidates(args, context.state)
    measured = context.usage.pod_usage() if args.measured_room else None
    if measured is None:
        # Lowest priority first over every node, so no node's limit ends the loop.
        context.evict_node_by_node(strategy=NAME, candidates=[(None, candidates)])
        return
    room = MeasuredRoom(context.state, measured)
    for pod, reason in candidates:
        among = room.nodes_for(pod)
        if not among:
            context.declined(
                pod,
                NAME,
                f"no other node has {room.cpu_of(pod):.2f} cores of measured room for it",
                rule="no other node has measured room for it",
            )
            continue
        attempt = context.evictor.evict(
            pod, EvictOptions(strategy=NAME, reason=reason, among=among)
        )
        if attempt.done:
            room.moved(pod, among)
        elif attempt.outcome is Outcome.STOPPED:
            return


def _candidates(args: TASViolationsArgs, state: CycleState) -> Iterator[tuple[Pod, str]]:
    violating: dict[PolicyKey, dict[NodeName, str]] = {}
    for pod in sort_candidates(state.running_in_scope()):
        if pod.node_name is None or not args.namespaces.allows(pod.namespace):
            continue
        for policy in _policies_of(pod, state):
            if policy.key not in violating:
                violating[policy.key] = violating_nodes(policy, state, args.source)
            reason = violating[policy.key].get(pod.node_name)
            if reason is not None:
                yield pod, f"node {pod.node_name} violates policy {reason}"
                break


def _policies_of(pod: Pod, state: CycleState) -> list[TASPolicy]:
    """The policy the pod links, and the one its `violate` label names (when another)."""
    found = []
    linked = state.policy_of(pod)
    if linked is not None:
        found.append(linked)
    named = pod.labels.get(POD_VIOLATION_LABEL)
    if named:
        policy = state.policies.get(PolicyKey(pod.namespace, PolicyName(named)))
        if policy is not None and policy not in found:
            found.append(policy)
    return found


PLUGIN = Plugin.serving(
    ExtensionPoint.DESCHEDULE,
    NAME,
    args=(TASViolationsArgs, parse_args),
    run=run,
    telemetry=True,
    evacuates=True,
)
