"""RemovePodsViolatingNodeAffinity: evict pods whose node no longer matches their required
node affinity (requiredDuringSchedulingIgnoredDuringExecution), when another node does.

This is how TAS users deschedule with the upstream descheduler: the policy controller labels a
node `<policy>=violating`, and the pods' affinity says `NotIn [violating]`.
"""

from __future__ import annotations

from descheduler.config import NodeAffinityArgs
from descheduler.evictor import Evictor, sort_candidates
from descheduler.nodefit import matches_node_selection

STRATEGY = "RemovePodsViolatingNodeAffinity"


def run(args: NodeAffinityArgs, evictor: Evictor) -> None:
    state = evictor.state
    for pod in sort_candidates(state.running_in_scope()):
        if not pod.required_node_affinity or pod.node_name is None:
            continue
        if not evictor.evictable(pod, namespaces=args.namespaces):
            continue
        node = state.nodes[pod.node_name]
        if matches_node_selection(pod, node):
            continue
        # Upstream checks this even with nodeFit off: the pod must have somewhere to go.
        if not evictor.fitting_nodes(pod):
            continue
        evictor.evict(
            pod,
            strategy=STRATEGY,
            reason=f"node {node.name} no longer matches the pod's required node affinity",
        )
        if evictor.stopped:
            return
