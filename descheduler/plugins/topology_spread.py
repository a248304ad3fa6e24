"""RemovePodsViolatingTopologySpreadConstraint: evict pods so that the topology domains of each
spread constraint get within its `maxSkew` again, as upstream balances them.

Per namespace, every distinct constraint the pods carry (only `DoNotSchedule` ones unless
`constraints` lists `ScheduleAnyway` too) is checked: pods matching its selector are counted
per domain (nodes carrying the topology key, filtered by the constraint's node inclusion
policies); if the largest and smallest domains differ by more than `maxSkew`, pods move from
the largest domains towards the ideal average, never more than half the excess skew at a time.
With `topologyBalanceNodeFit` (default), only pods that fit a node in a domain below the
average are chosen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from descheduler.args import FieldReader, PodSelection
from descheduler.framework import (
    EvictOptions,
    ExtensionPoint,
    Outcome,
    Plugin,
    PluginContext,
    PluginName,
)
from tas.cluster.model import LabelSelector, Node, Pod, Requirement, Toleration
from tas.fit import matches_node_selection, untolerated_taint

NAME = PluginName("RemovePodsViolatingTopologySpreadConstraint")
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"


@dataclass(frozen=True, slots=True)
class TopologySpreadArgs:
    constraints: frozenset[str] = frozenset({DO_NOT_SCHEDULE})
    topology_balance_node_fit: bool = True
    pods: PodSelection = field(default_factory=PodSelection)


def parse_args(r: FieldReader) -> TopologySpreadArgs:
    constraints = r.strings_of("constraints", (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY))
    return TopologySpreadArgs(
        constraints=frozenset(constraints or (DO_NOT_SCHEDULE,)),
        topology_balance_node_fit=r.boolean("topologyBalanceNodeFit", True),
        pods=r.pod_selection(),
    )


@dataclass(frozen=True)
class _Constraint:
    """A constraint as the plugin compares them: two pods' equal ones are checked once."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    node_affinity_policy: str
    node_taints_policy: str
    #: The pod's node selection, when the affinity policy honours it.
    node_selection: tuple[object, ...] | None
    tolerations: tuple[Toleration, ...] | None

    def selects(self, pod: Pod) -> bool:
        return self.selector.matches(pod.labels)

    def includes(self, node: Node, owner: Pod) -> bool:
        if self.node_selection is not None and not matches_node_selection(owner, node):
            return False
        if self.tolerations is not None:
            probe = Pod(namespace=owner.namespace, name=owner.name, tolerations=self.tolerations)
            if untolerated_taint(probe, node.taints) is not None:
                return False
        return True


def _constraints_of(pod: Pod, allowed: frozenset[str]) -> list[tuple[_Constraint, Pod]]:
    found = []
    for c in pod.topology_spread_constraints:
        if c.when_unsatisfiable not in allowed:
            continue
        if c.label_selector is None:
            # A constraint without a selector selects no pod (Kubernetes' nil selector).
            selector = LabelSelector(match_expressions=(Requirement("", "In", ()),))
        else:
            extra = tuple(
                Requirement(k, "In", (pod.labels[k],))
                for k in c.match_label_keys
                if k in pod.labels
            )
            selector = LabelSelector(
                match_labels=c.label_selector.match_labels,
                match_expressions=(*extra, *c.label_selector.match_expressions),
            )
        affinity = c.node_affinity_policy or HONOR
        taints = c.node_taints_policy or IGNORE
        found.append(
            (
                _Constraint(
                    max_skew=c.max_skew,
                    topology_key=c.topology_key,
                    selector=selector,
                    node_affinity_policy=affinity,
                    node_taints_policy=taints,
                    node_selection=(
                        (tuple(sorted(pod.node_selector.items())), pod.required_node_affinity)
                        if affinity == HONOR
                        else None
                    ),
                    tolerations=pod.tolerations if taints == HONOR else None,
                ),
                pod,
            )
        )
    return found


def _balanced(domains: Mapping[str, Sequence[Pod]], max_skew: int) -> bool:
    sizes = [len(p) for p in domains.values()]
    return not sizes or max(sizes) - min(sizes) <= max_skew


def _has_selector_or_affinity(pod: Pod) -> bool:
    return bool(pod.node_selector or pod.required_node_affinity or pod.preferred_node_affinity)


def _order(pods: list[Pod]) -> list[Pod]:
    """Upstream's order within a domain (the last pods are the ones moved): pods with a node
    selector or affinity first, then by priority, lowest (or none) first."""
    return sorted(
        pods,
        key=lambda p: (
            0 if _has_selector_or_affinity(p) else 1,
            p.priority if p.has_priority else -(2**32),
        ),
    )


def run(args: TopologySpreadArgs, context: PluginContext) -> None:
    evictor = context.evictor
    state = context.state
    nodes = state.ready_nodes
    by_name = {n.name: n for n in nodes}
    pods = [
        p for p in state.ready_node_pods() if context.selected(p, args.pods) and evictor.filter(p)
    ]
    namespaces: dict[str, list[Pod]] = {}
    for pod in pods:
        namespaces.setdefault(pod.namespace, []).append(pod)
    chosen: dict[tuple[str, str], Pod] = {}
    for namespace in sorted(namespaces):
        members = namespaces[namespace]
        seen: list[_Constraint] = []
        constraints: list[tuple[_Constraint, Pod]] = []
        for pod in members:
            for constraint, owner in _constraints_of(pod, args.constraints):
                if constraint not in seen:
                    seen.append(constraint)
                    constraints.append((constraint, owner))
        for constraint, owner in constraints:
            key = constraint.topology_key
            domains: dict[str, list[Pod]] = {}
            for node in nodes:
                if key in node.labels and constraint.includes(node, owner):
                    domains.setdefault(node.labels[key], [])
            for pod in members:
                if pod.deletion_timestamp is not None or not constraint.selects(pod):
                    continue
                home = by_name.get(pod.node_name) if pod.node_name else None
                if home is None or key not in home.labels:
                    continue
                domains.setdefault(home.labels[key], []).append(pod)
            if _balanced(domains, constraint.max_skew):
                continue
            total = sum(len(p) for p in domains.values())
            eligible = [n for n in nodes if constraint.includes(n, owner)]
            _balance(args, context, constraint, domains, total, eligible, chosen)
    for pod in chosen.values():
        if not args.pods.namespaces.allows(pod.namespace) or not evictor.filter(pod):
            continue
        if not evictor.pre_eviction_filter(pod):
            continue
        reason = "topology spread constraint skew above maxSkew"
        attempt = evictor.evict(pod, EvictOptions(strategy=NAME, reason=reason))
        if attempt.outcome is Outcome.STOPPED:
            return


def _balance(
    args: TopologySpreadArgs,
    context: PluginContext,
    constraint: _Constraint,
    domains: dict[str, list[Pod]],
    total: int,
    eligible: list[Node],
    chosen: dict[tuple[str, str], Pod],
) -> None:
    ideal = total / len(domains)
    ordered = sorted(
        ((value, _order(pods)) for value, pods in domains.items()),
        key=lambda item: len(item[1]),
    )
    below = {value for value, pods in ordered if len(pods) < ideal}
    targets = [n.name for n in eligible if n.labels.get(constraint.topology_key) in below]
    fits: dict[tuple[str, str], bool] = {}

    def fits_below(pod: Pod) -> bool:
        key = (pod.namespace, pod.name)
        if key not in fits:
            fits[key] = bool(context.fitting_nodes(pod, among=targets))
        return fits[key]

    i, j = 0, len(ordered) - 1
    while i < j:
        if len(ordered[j][1]) <= ideal:
            j -= 1
        skew = len(ordered[j][1]) - len(ordered[i][1])
        if skew <= constraint.max_skew:
            i += 1
            continue
        above = math.ceil(len(ordered[j][1]) - ideal)
        under = math.ceil(ideal - len(ordered[i][1]))
        half = math.ceil((skew - constraint.max_skew) / 2)
        move = int(min(above, under, half))
        if move <= 0:
            i += 1
            continue
        # Pods that fit a node below the average go last, so they are the ones moved.
        source = sorted(ordered[j][1], key=fits_below)
        moving = source[len(source) - move :]
        for pod in moving:
            if args.topology_balance_node_fit and not fits_below(pod):
                continue
            chosen[(pod.namespace, pod.name)] = pod
        ordered[j] = (ordered[j][0], source[: len(source) - move])
        ordered[i] = (ordered[i][0], ordered[i][1] + moving)


PLUGIN = Plugin.serving(
    ExtensionPoint.BALANCE, NAME, args=(TopologySpreadArgs, parse_args), run=run
)
