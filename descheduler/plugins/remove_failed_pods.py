"""RemoveFailedPods: evict (that is, clean up) pods in phase Failed, older than
`minPodLifetimeSeconds` (default 3600, as upstream), optionally only those failed for some
`reasons` (the pod's status reason or a container's waiting or terminated reason) or
`exitCodes`, and not of `excludeOwnerKinds`. Bare failed pods are protected by the
DefaultEvictor unless `evictFailedBarePods` (or the FailedBarePods protection is disabled)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from descheduler.args import FieldReader, PodSelection
from descheduler.framework import Plugin, PluginContext, PluginName
from descheduler.state import CycleState
from tas.cluster.model import ContainerStatus, Node, Pod

NAME = PluginName("RemoveFailedPods")
DEFAULT_MIN_POD_LIFETIME_SECONDS = 3600


@dataclass(frozen=True, slots=True)
class RemoveFailedPodsArgs:
    min_pod_lifetime_seconds: int | None = DEFAULT_MIN_POD_LIFETIME_SECONDS
    exclude_owner_kinds: frozenset[str] = frozenset()
    reasons: frozenset[str] = frozenset()
    exit_codes: frozenset[int] = frozenset()
    including_init_containers: bool = False
    pods: PodSelection = field(default_factory=PodSelection)


def parse_args(r: FieldReader) -> RemoveFailedPodsArgs:
    return RemoveFailedPodsArgs(
        min_pod_lifetime_seconds=r.integer(
            "minPodLifetimeSeconds", DEFAULT_MIN_POD_LIFETIME_SECONDS
        ),
        exclude_owner_kinds=frozenset(r.strings("excludeOwnerKinds")),
        reasons=frozenset(r.strings("reasons")),
        exit_codes=frozenset(r.integers("exitCodes")),
        including_init_containers=r.boolean("includingInitContainers", False),
        pods=r.pod_selection(),
    )


def _reasons(statuses: tuple[ContainerStatus, ...]) -> set[str]:
    found = set()
    for status in statuses:
        if status.waiting_reason:
            found.add(status.waiting_reason)
        if status.terminated_reason:
            found.add(status.terminated_reason)
    return found


def _exit_codes(statuses: tuple[ContainerStatus, ...]) -> set[int]:
    return {
        s.exit_code for s in statuses if s.terminated_reason is not None and s.exit_code is not None
    }


def why_not(pod: Pod, args: RemoveFailedPodsArgs, state: CycleState) -> str | None:
    """Why the failed pod is to be left alone, or None."""
    if args.min_pod_lifetime_seconds is not None:
        created = pod.creation_timestamp
        age = int((state.now - created).total_seconds()) if created is not None else 0
        if age < args.min_pod_lifetime_seconds:
            return f"younger than minPodLifetimeSeconds {args.min_pod_lifetime_seconds}"
    if args.exclude_owner_kinds and any(o.kind in args.exclude_owner_kinds for o in pod.owners):
        return "owner kind excluded"
    inits = pod.init_container_statuses if args.including_init_containers else ()
    if args.reasons:
        reasons = _reasons(pod.container_statuses) | _reasons(inits)
        if pod.reason:
            reasons.add(pod.reason)
        if not reasons & args.reasons:
            return "no matching reason"
    if args.exit_codes:
        codes = _exit_codes(pod.container_statuses) | _exit_codes(inits)
        if not codes & args.exit_codes:
            return "no matching exit code"
    return None


def _candidates(
    args: RemoveFailedPodsArgs, node: Node, context: PluginContext
) -> Iterator[tuple[Pod, str]]:
    state = context.state
    for pod in state.pods_on_ready_node(node.name, include_finished=True):
        if pod.phase != "Failed" or not context.selected(pod, args.pods):
            continue
        if why_not(pod, args, state) is not None:
            continue
        if context.evictor.filter(pod) and context.evictor.pre_eviction_filter(pod):
            yield pod, "pod failed" + (f" ({pod.reason})" if pod.reason else "")


PLUGIN = Plugin.node_by_node(NAME, args=(RemoveFailedPodsArgs, parse_args), candidates=_candidates)
