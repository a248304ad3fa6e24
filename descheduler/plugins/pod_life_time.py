"""PodLifeTime: evict pods older than `maxPodLifeTimeSeconds`, oldest first; optionally only
pods in some `states` (phase, status reason, or a container's waiting or terminated reason),
of some owner kinds, with some pod `conditions` or container `exitCodes` (upstream's
arguments, every one). At least one of maxPodLifeTimeSeconds, states, conditions and exitCodes
is required."""

from __future__ import annotations

from dataclasses import dataclass, field

from descheduler.args import FieldReader, PodSelection
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName
from descheduler.state import CycleState
from tas.cluster.model import ContainerStatus, Pod

NAME = PluginName("PodLifeTime")

STATES = (
    "Running",
    "Pending",
    "Succeeded",
    "Failed",
    "Unknown",
    "NodeAffinity",
    "NodeLost",
    "Shutdown",
    "UnexpectedAdmissionError",
    "PodInitializing",
    "ContainerCreating",
    "ImagePullBackOff",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "ErrImagePull",
    "CreateContainerError",
    "InvalidImageName",
    "OOMKilled",
    "Error",
    "Completed",
    "DeadlineExceeded",
    "Evicted",
    "ContainerCannotRun",
    "StartError",
)


@dataclass(frozen=True, slots=True)
class ConditionFilter:
    type: str = ""
    status: str = ""
    reason: str = ""
    min_time_since_last_transition_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class PodLifeTimeArgs:
    max_pod_life_time_seconds: int | None = None
    states: frozenset[str] = frozenset()
    including_init_containers: bool = False
    including_ephemeral_containers: bool = False
    owner_kinds_include: frozenset[str] = frozenset()
    owner_kinds_exclude: frozenset[str] = frozenset()
    conditions: tuple[ConditionFilter, ...] = ()
    exit_codes: frozenset[int] = frozenset()
    pods: PodSelection = field(default_factory=PodSelection)


def _conditions(r: FieldReader) -> tuple[ConditionFilter, ...]:
    found = []
    for c in r.each("conditions"):
        condition = ConditionFilter(
            type=c.string("type"),
            status=c.string("status"),
            reason=c.string("reason"),
            min_time_since_last_transition_seconds=c.integer(
                "minTimeSinceLastTransitionSeconds", None
            ),
        )
        c.finish()
        if condition == ConditionFilter():
            c.problem(
                c.path,
                "give at least one of type, status, reason, minTimeSinceLastTransitionSeconds",
            )
        found.append(condition)
    return tuple(found)


def parse_args(r: FieldReader) -> PodLifeTimeArgs:
    seconds = r.integer("maxPodLifeTimeSeconds", None)
    states = r.strings_of("states", STATES, what="state")
    kinds = r.child("ownerKinds")
    include, exclude = kinds.strings("include"), kinds.strings("exclude")
    kinds.finish()
    if include and exclude:
        r.problem(r.at("ownerKinds"), "give include or exclude, not both")
    conditions = _conditions(r)
    exit_codes = r.integers("exitCodes")
    if seconds is None and not states and not conditions and not exit_codes:
        r.problem(
            r.path,
            "give at least one of maxPodLifeTimeSeconds, states, conditions or exitCodes",
        )
    return PodLifeTimeArgs(
        max_pod_life_time_seconds=seconds,
        states=frozenset(states),
        including_init_containers=r.boolean("includingInitContainers", False),
        including_ephemeral_containers=r.boolean("includingEphemeralContainers", False),
        owner_kinds_include=frozenset(include),
        owner_kinds_exclude=frozenset(exclude),
        conditions=conditions,
        exit_codes=frozenset(exit_codes),
        pods=r.pod_selection(),
    )


def _state_match(statuses: tuple[ContainerStatus, ...], states: frozenset[str]) -> bool:
    return any(s.waiting_reason in states or s.terminated_reason in states for s in statuses)


def matches(pod: Pod, args: PodLifeTimeArgs, state: CycleState) -> bool:
    """Every criterion the arguments set holds for the pod."""
    if args.max_pod_life_time_seconds is not None:
        if pod.creation_timestamp is None:
            return False
        age = (state.now - pod.creation_timestamp).total_seconds()
        if age < 0 or int(age) <= args.max_pod_life_time_seconds:
            return False
    if args.states and not _in_states(pod, args):
        return False
    kinds = {o.kind for o in pod.owners}
    if args.owner_kinds_include and not kinds & args.owner_kinds_include:
        return False
    if args.owner_kinds_exclude and kinds & args.owner_kinds_exclude:
        return False
    if args.conditions and not any(_condition_match(pod, c, state) for c in args.conditions):
        return False
    if args.exit_codes:
        statuses = pod.container_statuses
        if args.including_init_containers:
            statuses = (*statuses, *pod.init_container_statuses)
        if not any(
            s.exit_code in args.exit_codes for s in statuses if s.terminated_reason is not None
        ):
            return False
    return True


def _in_states(pod: Pod, args: PodLifeTimeArgs) -> bool:
    states = args.states
    if pod.phase in states or pod.reason in states:
        return True
    if _state_match(pod.container_statuses, states):
        return True
    if args.including_init_containers and _state_match(pod.init_container_statuses, states):
        return True
    return args.including_ephemeral_containers and _state_match(
        pod.ephemeral_container_statuses, states
    )


def _condition_match(pod: Pod, wanted: ConditionFilter, state: CycleState) -> bool:
    for condition in pod.conditions:
        if wanted.type and condition.type != wanted.type:
            continue
        if wanted.status and condition.status != wanted.status:
            continue
        if wanted.reason and condition.reason != wanted.reason:
            continue
        if wanted.min_time_since_last_transition_seconds is not None:
            since = condition.last_transition_time
            if since is None:
                continue
            idle = (state.now - since).total_seconds()
            if idle < 0 or int(idle) < wanted.min_time_since_last_transition_seconds:
                continue
        return True
    return False


def run(args: PodLifeTimeArgs, context: PluginContext) -> None:
    state = context.state
    found = [
        pod
        for pod in state.ready_node_pods(include_finished=True)
        if context.selected(pod, args.pods)
        and matches(pod, args, state)
        and context.evictor.filter(pod)
        and context.evictor.pre_eviction_filter(pod)
    ]
    # Oldest first; pods without a creation time (none from the API) last.
    found.sort(key=lambda p: (p.creation_timestamp is None, p.creation_timestamp or state.now))
    limit = args.max_pod_life_time_seconds
    beyond = f" exceeds maxPodLifeTimeSeconds {limit}" if limit is not None else ""

    def reason(pod: Pod) -> str:
        created = pod.creation_timestamp
        age = f"{(state.now - created).total_seconds():.0f}s" if created else "unknown"
        return f"age {age}{beyond}"

    # Oldest first over every node (upstream's order), so no node's limit ends the loop.
    candidates = [(None, ((pod, reason(pod)) for pod in found))]
    context.evict_node_by_node(strategy=NAME, candidates=candidates)


PLUGIN = Plugin.serving(
    ExtensionPoint.DESCHEDULE, NAME, args=(PodLifeTimeArgs, parse_args), run=run
)
