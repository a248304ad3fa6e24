"""nodeFit: would another node accept this pod? Evicting a pod that cannot land anywhere only
turns a running pod into a pending one.

The check is kube-scheduler's filters (`tas.fit`, shared with the in-memory scheduler model, so
the descheduler and the scheduler agree about a placement), the upstream descheduler's
inter-pod anti-affinity check against the pods already on the node, and the one upstream cannot
do: the pod's TASPolicy `dontschedule` rules must pass on the node. A node without a value of
a metric that gets estimates (one that just joined: no sample yet) is judged, as the extender
judges it (`tas_herd.placements`), at its estimated load: what its pods request, as a share of its
allocatable. So a fresh node is a valid target while it has room, and stops being one once
what already landed there would violate; missing data alone never rules it out.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import replace

from descheduler.state import CycleState
from tas.cluster.model import LabelSelector, Node, Pod, workload_of
from tas.fit import NodeLoad, holds_resources, rejection
from tas.policies.model import TASPolicy
from tas.rules import filter_nodes
from tas.types import MetricColumns, MetricName, NodeName
from tas.vocabulary import POLICY_LABEL
from tas_herd.placements import DEFAULT_RESOURCES, Placement, add_estimates, estimate_load


def anti_affinity_clash(pod: Pod, node: Node, pods_on_node: Iterable[Pod]) -> Pod | None:
    """A pod on `node` that one of `pod`'s required anti-affinity terms forbids, if any.

    As upstream's nodeFit: a term counts when the node carries its topology key at all.
    """
    for term in pod.required_pod_anti_affinity:
        if term.topology_key not in node.labels:
            continue
        namespaces = term.namespaces or (pod.namespace,)
        for other in pods_on_node:
            if other.name == pod.name or other.namespace not in namespaces:
                continue
            if holds_resources(other) and term.label_selector.matches(other.labels):
                return other
    return None


def fitting_nodes(
    pod: Pod,
    candidates: Iterable[Node],
    *,
    pods_by_node: Mapping[NodeName, Sequence[Pod]],
    policy: TASPolicy | None,
    metrics: MetricColumns,
    include_current: bool = False,
    load_by_node: Mapping[NodeName, NodeLoad] | None = None,
) -> tuple[NodeName, ...]:
    """Candidates (other than the pod's own node, unless `include_current`) that would accept
    the pod, in order. `load_by_node` is what `pods_by_node` holds per node, when the caller
    keeps it (`CycleState.load_by_node`)."""
    loads = load_by_node or {}
    fit = [
        node.name
        for node in candidates
        if (include_current or node.name != pod.node_name)
        and rejection(
            pod,
            node,
            pods_on_node=pods_by_node.get(node.name, ()),
            load=loads.get(node.name),
        )
        is None
        and anti_affinity_clash(pod, node, pods_by_node.get(node.name, ())) is None
    ]
    if policy is None or not fit:
        return tuple(fit)
    passed = set(fit)
    fitting = [n for n in candidates if n.name in passed]
    unmeasured = _unmeasured_at_estimate(metrics, fitting, pods_by_node)
    cores = {n.name: n.allocatable.get("cpu", 0.0) for n in fitting}
    return filter_nodes(
        policy, add_estimates(metrics, unmeasured, lambda node: cores.get(node, 0.0)), fit
    ).passed


def _unmeasured_at_estimate(
    metrics: MetricColumns,
    nodes: Sequence[Node],
    pods_by_node: Mapping[NodeName, Sequence[Pod]],
    resources: Mapping[MetricName, str] = DEFAULT_RESOURCES,
) -> dict[MetricName, dict[NodeName, float]]:
    """For the nodes without a value of a metric others report, their pods' requests as a
    share of their allocatable (`tas_herd.placements.estimate_load` with every pod uncovered)."""
    missing = [
        node
        for node in nodes
        if any(metrics.get(m) and node.name not in metrics.get(m, {}) for m in resources)
    ]
    if not missing:
        return {}
    placements = [
        Placement(pod.namespace, pod.name, node.name, 0.0, workload_of(pod), pod.requests)
        for node in missing
        for pod in pods_by_node.get(node.name, ())
        if holds_resources(pod)
    ]
    return estimate_load(
        placements,
        sample_times={m: dict.fromkeys(metrics.get(m, {}), 0.0) for m in resources},
        window=0.0,
        resources=resources,
        capacity={node.name: node.allocatable for node in missing},
        default_capacity={},
        usage={},
        only_placed=frozenset(node.name for node in missing),
    )


def _shape(pod: Pod) -> Hashable | None:
    """What nodeFit reads of a pod: its namespace and policy, its requests, node selection and
    tolerations. None when it reads more: a pod with required anti-affinity is judged against
    the pods on each node by its own name and labels."""
    if pod.required_pod_anti_affinity:
        return None
    shape = (
        pod.namespace,
        pod.labels.get(POLICY_LABEL),
        tuple(sorted(pod.requests.items())),
        tuple(sorted(pod.node_selector.items())),
        pod.required_node_affinity,
        pod.tolerations,
    )
    try:
        hash(shape)
    except TypeError:  # a selector term holding a mapping: asked afresh, never wrongly shared
        return None
    return shape


class NodeFitter:
    """nodeFit over one cycle's snapshot (`descheduler.framework.NodeFit`), for one profile's
    node selector.

    Each answer scans every Ready node and the pods on it, and a rebalancing cycle asks for
    every pod it weighs: the answers are kept for the cycle per pod shape (`_shape`), so the
    pods of one workload cost one scan until an eviction changes the nodes."""

    def __init__(self, state: CycleState, node_selector: LabelSelector | None = None) -> None:
        self._state = state
        self._node_selector = node_selector
        self._fits: dict[Hashable, tuple[NodeName, ...]] = {}

    def fitting_nodes(
        self,
        pod: Pod,
        *,
        among: Collection[NodeName] | None = None,
        include_current: bool = False,
    ) -> tuple[NodeName, ...]:
        """The Ready nodes (among `among`) that would accept the pod: other than its own,
        unless `include_current`."""
        shape = _shape(pod)
        if include_current or shape is None:
            return self._scan(pod, among=among, include_current=include_current)
        wanted = among if among is None or isinstance(among, frozenset) else frozenset(among)
        key = (shape, wanted, len(self._state.evicted))
        found = self._fits.get(key)
        if found is None:
            # Asked for a pod of that shape bound nowhere, so no node discounts its requests.
            found = self._scan(replace(pod, name="", node_name=None), among=wanted)
            self._fits[key] = found
        return tuple(n for n in found if n != pod.node_name)

    def _scan(
        self,
        pod: Pod,
        *,
        among: Collection[NodeName] | None,
        include_current: bool = False,
    ) -> tuple[NodeName, ...]:
        state, selector = self._state, self._node_selector
        candidates = [
            n
            for n in state.ready_nodes
            if (among is None or n.name in among)
            and (selector is None or selector.matches(n.labels))
        ]
        return fitting_nodes(
            pod,
            candidates,
            pods_by_node=state.pods_by_node(),
            policy=state.policy_of(pod),
            metrics=state.metrics,
            include_current=include_current,
            load_by_node=state.load_by_node(),
        )
