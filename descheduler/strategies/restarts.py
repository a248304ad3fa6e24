"""RemovePodsHavingTooManyRestarts: evict pods restarted at least `podRestartThreshold` times
(init containers counted with `includingInitContainers`), as upstream does."""

from __future__ import annotations

from descheduler.config import TooManyRestartsArgs
from descheduler.evictor import Evictor, sort_candidates
from tas.cluster.model import Pod

STRATEGY = "RemovePodsHavingTooManyRestarts"


def restarts(pod: Pod, *, including_init_containers: bool) -> int:
    extra = pod.init_container_restarts if including_init_containers else 0
    return pod.container_restarts + extra


def run(args: TooManyRestartsArgs, evictor: Evictor) -> None:
    for pod in sort_candidates(evictor.state.running_in_scope()):
        count = restarts(pod, including_init_containers=args.including_init_containers)
        if count < args.pod_restart_threshold:
            continue
        if not evictor.evictable(pod, namespaces=args.namespaces):
            continue
        evictor.evict(
            pod,
            strategy=STRATEGY,
            reason=f"{count} restarts, threshold {args.pod_restart_threshold}",
        )
        if evictor.stopped:
            return
