"""TASViolations: evict pods whose node violates their TASPolicy's `deschedule` rules.

This is TAS's own loop, closed here: the policy controller labels violating nodes; this
plugin evicts the pods that link the policy (label `telemetry-policy=<name>`, the policy in
the pod's namespace) from those nodes. `violationSource` says where violations are read from
(`descheduler.violations`): fresh metrics, the controller's node labels, or both agreeing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.evictor import sort_candidates
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName
from descheduler.violations import ViolationSource, violating_nodes
from tas.types import NodeName, PolicyKey

NAME = PluginName("TASViolations")


@dataclass(frozen=True, slots=True)
class TASViolationsArgs:
    source: ViolationSource = ViolationSource.METRICS
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)


def parse_args(r: FieldReader) -> TASViolationsArgs:
    raw = r.get("violationSource")
    source = ViolationSource.METRICS
    if raw is not None:
        if raw in {s.value for s in ViolationSource}:
            source = ViolationSource(raw)
        else:
            known = ", ".join(s.value for s in ViolationSource)
            r.problem(r.at("violationSource"), f"unknown source {raw!r}; known: {known}")
    return TASViolationsArgs(source=source, namespaces=r.namespaces())


def run(args: TASViolationsArgs, context: PluginContext) -> None:
    evictor = context.evictor
    state = evictor.state
    cache: dict[PolicyKey, dict[NodeName, str]] = {}
    for pod in sort_candidates(state.running_in_scope()):
        policy = state.policy_of(pod)
        if policy is None or pod.node_name is None:
            continue
        if not args.namespaces.allows(pod.namespace):
            continue
        if policy.key not in cache:
            cache[policy.key] = violating_nodes(policy, state, args.source)
        reason = cache[policy.key].get(pod.node_name)
        if reason is None:
            continue
        evictor.evict(pod, strategy=NAME, reason=f"node {pod.node_name} violates policy {reason}")
        if evictor.stopped:
            return


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.DESCHEDULE}),
    args_type=TASViolationsArgs,
    parse_args=parse_args,
    run=run,
)
