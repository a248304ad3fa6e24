"""PodLifeTime rows (pod_lifetime_test.go: TestPodLifeTime and its _EvictorConfiguration,
_GenericFiltering, _EvictionLimits, _ContainerWaitingReasons, _PodStatusReasons,
_AgeThreshold, _PodPhaseStates, and TestStatesWithTerminatedReasons, TestConditionFiltering,
TestTransitionTimeFiltering, TestOwnerKindsFiltering, TestStatesWithEphemeralContainers,
TestExitCodesFiltering, TestCombinedFilters)."""

from __future__ import annotations

from typing import Any

from tests.descheduler.upstream.harness import Case, Json
from tests.descheduler.upstream.objects import RS_OWNER, ago, node, pod, pvc_volume

OLD = "2009-11-10T23:00:00Z"
NEW = ago(0)
OLD_TRANSITION = ago(2 * 3600)
NEW_TRANSITION = ago(60)
JOB = [{"apiVersion": "batch/v1", "kind": "Job", "name": "job1", "uid": ""}]
LIFETIME = {"maxPodLifeTimeSeconds": 600}


def rs(name: str, created: str = OLD, **changes: Any) -> Json:
    return pod(name, 100, 0, "n1", owners=RS_OWNER, created=created, **changes)


def pending(name: str, created: str = OLD, **changes: Any) -> Json:
    return rs(name, created, phase="Pending", **changes)


def built(name: str, **changes: Any) -> Json:
    """upstream's `buildPod`: 1m CPU, 1 byte, a ReplicaSet owner, node1."""
    return pod(name, 1, 1, "node1", **{"owners": RS_OWNER, **changes})


def waiting(reason: str) -> list[dict[str, Any]]:
    return [{"name": "c", "state": {"waiting": {"reason": reason}}}]


def terminated(reason: str = "", exit_code: int = 0) -> list[dict[str, Any]]:
    state: dict[str, Any] = {"exitCode": exit_code}
    if reason:
        state["reason"] = reason
    return [{"name": "c", "state": {"terminated": state}}]


def condition(type_: str, status: str = "", reason: str = "", since: str = "") -> dict[str, str]:
    found = {"type": type_}
    if status:
        found["status"] = status
    if reason:
        found["reason"] = reason
    if since:
        found["lastTransitionTime"] = since
    return found


def case(name: str, pods: list[Json], evicted: int, args: dict[str, Any], **more: Any) -> Case:
    node_name = "node1" if pods and pods[0]["spec"]["nodeName"] == "node1" else "n1"
    return Case(
        name=name,
        plugin="PodLifeTime",
        nodes=[node(node_name, 2000, 3000, 10)],
        pods=pods,
        args=args,
        evicted=evicted,
        spare_node=True,
        **more,
    )


def states(*names: str, **more: Any) -> dict[str, Any]:
    return {**LIFETIME, "states": list(names), **more}


CASES: list[Case] = [
    case(
        "No pod should be evicted since pod terminating",
        [
            rs("p14", labels={"foo": "bar"}, deleting=True),
            rs("p15", labels={"foo": "bar"}, deleting=True),
        ],
        0,
        {**LIFETIME, "labelSelector": {"matchLabels": {"foo": "bar"}}},
    ),
    case(
        "Does not evict pvc pods with ignorePvcPods set to true",
        [rs("p11", volumes=[pvc_volume("foo")])],
        0,
        LIFETIME,
        evictor={"nodeFit": False, "ignorePvcPods": True},
    ),
    case(
        "Evicts pvc pods with ignorePvcPods set to false (or unset)",
        [rs("p11", volumes=[pvc_volume("foo")])],
        1,
        LIFETIME,
    ),
    case(
        "1 pod matching label selector should be evicted",
        [rs("p12", labels={"foo": "bar"}), rs("p13", labels={"foo": "bar1"})],
        1,
        {**LIFETIME, "labelSelector": {"matchLabels": {"foo": "bar"}}},
        evicted_pods=["p12"],
    ),
    case(
        "2 oldest pods should be evicted when no limits are set",
        [rs("p1", NEW), rs("p2"), pending("p9")],
        2,
        LIFETIME,
        evicted_pods=["p2", "p9"],
    ),
    case(
        "1 oldest pod should be evicted when maxPodsToEvictPerNamespace is set to 1",
        [rs("p1", NEW), rs("p2")],
        1,
        LIFETIME,
        policy={"maxNoOfPodsToEvictPerNamespace": 1},
        evicted_pods=["p2"],
    ),
    case(
        "1 oldest pod should be evicted when maxPodsToEvictTotal is set to 1",
        [rs("p1", NEW), rs("p2")],
        1,
        LIFETIME,
        policy={"maxNoOfPodsToEvictPerNamespace": 2, "maxNoOfPodsToEvictTotal": 1},
        evicted_pods=["p2"],
    ),
    case(
        "1 oldest pod should be evicted when maxPodsToEvictPerNode is set to 1",
        [rs("p1", NEW), rs("p2")],
        1,
        LIFETIME,
        policy={"maxNoOfPodsToEvictPerNode": 1},
        evicted_pods=["p2"],
    ),
    case(
        "Two pods, one with ContainerCreating state. 1 should be evicted",
        [
            pending("p9"),
            pod(
                "container-creating-stuck",
                0,
                0,
                "n1",
                owners=RS_OWNER,
                created=OLD,
                status={"containerStatuses": waiting("ContainerCreating")},
            ),
        ],
        1,
        states("ContainerCreating"),
    ),
    case(
        "Two pods, one with PodInitializing state. 1 should be evicted",
        [
            pending("p9"),
            pod(
                "pod-initializing-stuck",
                0,
                0,
                "n1",
                owners=RS_OWNER,
                created=OLD,
                status={"containerStatuses": waiting("PodInitializing")},
            ),
        ],
        1,
        states("PodInitializing"),
    ),
    *(
        case(
            f"1 pod with container status {reason} should be evicted",
            [pending("p9", status={"containerStatuses": waiting(reason)})],
            1,
            states(reason),
        )
        for reason in (
            "ImagePullBackOff",
            "CrashLoopBackOff",
            "CreateContainerConfigError",
            "ErrImagePull",
            "CreateContainerError",
            "InvalidImageName",
        )
    ),
    case(
        "1 pod with init container status CreateContainerError, without includingInitContainers",
        [pending("p9", status={"initContainerStatuses": waiting("CreateContainerError")})],
        0,
        states("CreateContainerError"),
    ),
    case(
        "1 pod with init container status CreateContainerError, with includingInitContainers",
        [pending("p9", status={"initContainerStatuses": waiting("CreateContainerError")})],
        1,
        states("CreateContainerError", includingInitContainers=True),
    ),
    case(
        "1 pod with ephemeral container status CreateContainerError, without the flag",
        [pending("p9", status={"ephemeralContainerStatuses": waiting("CreateContainerError")})],
        0,
        states("CreateContainerError"),
    ),
    case(
        "1 pod with ephemeral container status CreateContainerError, with the flag",
        [pending("p9", status={"ephemeralContainerStatuses": waiting("CreateContainerError")})],
        1,
        states("CreateContainerError", includingEphemeralContainers=True),
    ),
    case(
        "1 pod with ImagePullBackOff status is ignored when States filter is ContainerCreating",
        [pending("p9", status={"containerStatuses": waiting("ImagePullBackOff")})],
        0,
        states("ContainerCreating"),
    ),
    *(
        case(
            f"1 pod with pod status reason {reason} should be evicted",
            [pending("p9", status={"reason": reason})],
            1,
            states(reason),
        )
        for reason in ("NodeLost", "NodeAffinity", "Shutdown", "UnexpectedAdmissionError")
    ),
    case(
        "Two pods, 1 is new and 1 very is old. 1 should be evicted",
        [rs("p1", NEW), rs("p2")],
        1,
        LIFETIME,
    ),
    case("Two pods, both new. 0 should be evicted", [rs("p3", NEW), rs("p4", NEW)], 0, LIFETIME),
    case(
        "Two pods, 1 created 605 seconds ago. 1 should be evicted",
        [rs("p5", NEW), rs("p6", ago(605))],
        1,
        LIFETIME,
        evicted_pods=["p6"],
    ),
    case(
        "Two pods, 1 created 595 seconds ago. 0 should be evicted",
        [pod("p7", 100, 0, "n1", created=NEW), pod("p8", 100, 0, "n1", created=ago(595))],
        0,
        LIFETIME,
    ),
    case(
        "Two old pods with different states. 1 should be evicted",
        [pending("p9"), rs("p10")],
        1,
        states("Pending"),
    ),
    *(
        case(
            f"1 pod with pod status phase {phase} should be evicted",
            [rs("p16", phase=phase)],
            1,
            states(phase),
        )
        for phase in ("Succeeded", "Failed", "Unknown")
    ),
    case(
        "evict pod with matching terminated reason via states",
        [built("p1", phase="Failed", status={"containerStatuses": terminated("NodeAffinity")})],
        1,
        {"states": ["NodeAffinity"]},
    ),
    case(
        "evict pod with matching pod status reason via states",
        [built("p1", phase="Failed", status={"reason": "Shutdown"})],
        1,
        {"states": ["Shutdown"]},
    ),
    case(
        "states matches terminated reason on init container",
        [built("p1", status={"initContainerStatuses": terminated("CreateContainerConfigError")})],
        1,
        {"states": ["CreateContainerConfigError"], "includingInitContainers": True},
    ),
    case(
        "states does not match terminated reason on init container without flag",
        [built("p1", status={"initContainerStatuses": terminated("CreateContainerConfigError")})],
        0,
        {"states": ["CreateContainerConfigError"]},
    ),
    case(
        "evict pod with matching condition reason",
        [
            built(
                "p1",
                status={
                    "conditions": [condition("Initialized", "True", "PodCompleted", OLD_TRANSITION)]
                },
            ),
            built(
                "p2",
                status={
                    "conditions": [condition("Initialized", "True", "OtherReason", OLD_TRANSITION)]
                },
            ),
        ],
        1,
        {"conditions": [{"reason": "PodCompleted", "status": "True"}]},
    ),
    case(
        "evict pod matching condition type only",
        [built("p1", status={"conditions": [condition("Ready", "False", since=OLD_TRANSITION)]})],
        1,
        {"conditions": [{"type": "Ready"}]},
    ),
    case(
        "no matching conditions, 0 evictions",
        [built("p1", status={"conditions": [condition("Ready", "True", "SomethingElse")]})],
        0,
        {"conditions": [{"reason": "PodCompleted"}]},
    ),
    case(
        "evict pod with old transition time",
        [
            built(
                "p1",
                phase="Succeeded",
                status={
                    "conditions": [
                        condition("Initialized", "True", "PodCompleted", OLD_TRANSITION),
                        condition("Ready", "False", "PodCompleted", OLD_TRANSITION),
                    ]
                },
            )
        ],
        1,
        {
            "states": ["Succeeded"],
            "conditions": [
                {
                    "reason": "PodCompleted",
                    "status": "True",
                    "minTimeSinceLastTransitionSeconds": 300,
                }
            ],
        },
    ),
    case(
        "do not evict pod with recent transition time",
        [
            built(
                "p1",
                phase="Succeeded",
                status={"conditions": [condition("Ready", "False", since=NEW_TRANSITION)]},
            )
        ],
        0,
        {"states": ["Succeeded"], "conditions": [{"minTimeSinceLastTransitionSeconds": 4 * 3600}]},
    ),
    case(
        "transition time scoped to matching conditions only",
        [
            built(
                "p1",
                status={
                    "conditions": [
                        condition("Initialized", reason="PodCompleted", since=OLD_TRANSITION),
                        condition("Ready", reason="OtherReason", since=NEW_TRANSITION),
                    ]
                },
            )
        ],
        1,
        {"conditions": [{"reason": "PodCompleted", "minTimeSinceLastTransitionSeconds": 300}]},
    ),
    case(
        "no conditions on pod, transition time filter returns false",
        [built("p1", phase="Running")],
        0,
        {"states": ["Running"], "conditions": [{"minTimeSinceLastTransitionSeconds": 300}]},
    ),
    case(
        "exclude Job owner kind: Job-owned pod not evicted",
        [built("p1", phase="Failed", owners=JOB)],
        0,
        {"states": ["Failed"], "ownerKinds": {"exclude": ["Job"]}},
    ),
    case(
        "exclude Job owner kind: non-Job pod still evicted",
        [built("p1", phase="Failed", owners=JOB), built("p2", phase="Failed")],
        1,
        {"states": ["Failed"], "ownerKinds": {"exclude": ["Job"]}},
        evicted_pods=["p2"],
    ),
    case(
        "include only Job owner kind",
        [built("p1", phase="Failed", owners=JOB), built("p2", phase="Failed")],
        1,
        {"states": ["Failed"], "ownerKinds": {"include": ["Job"]}},
        evicted_pods=["p1"],
    ),
    case(
        "states matches terminated reason on ephemeral container",
        [built("p1", status={"ephemeralContainerStatuses": terminated("OOMKilled")})],
        1,
        {"states": ["OOMKilled"], "includingEphemeralContainers": True},
    ),
    case(
        "states does not match ephemeral container without flag",
        [built("p1", status={"ephemeralContainerStatuses": terminated("OOMKilled")})],
        0,
        {"states": ["OOMKilled"]},
    ),
    case(
        "evict pod with matching exit code",
        [built("p1", phase="Failed", status={"containerStatuses": terminated("Error", 1)})],
        1,
        {"states": ["Failed"], "exitCodes": [1]},
    ),
    case(
        "exit code not matched, 0 evictions",
        [built("p1", phase="Failed", status={"containerStatuses": terminated("Error", 1)})],
        0,
        {"states": ["Failed"], "exitCodes": [2]},
    ),
]
