"""What a restart costs each workload, read from its own pods: how long they took to start.

A move loses the pod's work until its replacement is ready. LoadAware prices that at
`restartSeconds` (30 s as shipped), but pods differ: an image pull, a JVM's warm-up or a cache
fill can take minutes, and a move that pays at 30 s may not at 90. The cluster already says how
long each running pod took: its `Ready` condition turned true that long after its
`PodScheduled` did. The median over an owner's running pods is the owner's start-up.

A KubeVirt VM's launcher pod is left out: a live migration's target pod takes the copy's time
to be ready while the VM keeps running on its source, so its start-up is not work lost.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping

from tas.cluster.model import Pod
from tas.vocabulary import VIRT_LAUNCHER


def owner_of(pod: Pod) -> tuple[str, str, str] | None:
    """The pod's controlling owner (namespace, kind, name); None for a pod without one."""
    owner = pod.controller
    return None if owner is None else (str(pod.namespace), owner.kind, owner.name)


def started_in(pod: Pod) -> float | None:
    """Seconds from the pod's scheduling to its readiness; None until both are true, and for
    a VM's launcher pod."""
    if all(pod.labels.get(k) == v for k, v in VIRT_LAUNCHER.items()):
        return None
    when = {
        c.type: c.last_transition_time
        for c in pod.conditions
        if c.status == "True" and c.last_transition_time is not None
    }
    scheduled, ready = when.get("PodScheduled"), when.get("Ready")
    if scheduled is None or ready is None or ready < scheduled:
        return None
    return (ready - scheduled).total_seconds()


def owner_startups(pods: Iterable[Pod]) -> Mapping[tuple[str, str, str], float]:
    """Each owner's start-up: the median over its pods that have started."""
    seen: dict[tuple[str, str, str], list[float]] = {}
    for pod in pods:
        owner, seconds = owner_of(pod), started_in(pod)
        if owner is not None and seconds is not None:
            seen.setdefault(owner, []).append(seconds)
    return {owner: statistics.median(values) for owner, values in seen.items()}
