"""Properties that hold whatever the cluster and the metrics (hypothesis).

Covered: with every strategy enabled and random pods (protected or not), random metric values
and random limits, in both modes: no protected pod is ever evicted (nor reported as a dry-run
eviction), and the per-node, per-namespace and total limits are never exceeded.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from descheduler.config import parse_config
from descheduler.cycle import Mode
from descheduler.plugins.default_evictor import ProtectionRules
from tas.cluster.model import OwnerReference, Pod, Volume
from tas.vocabulary import (
    CONFIG_SOURCE_ANNOTATION,
    EVICT_ANNOTATION,
    MIRROR_ANNOTATION,
    POLICY_LABEL,
)
from tests.builders import make_policy, rule
from tests.descheduler.builders import START, cluster_with, make_descheduler, make_node, make_pod

NODES = [f"node-{i}" for i in range(4)]
NAMESPACES = ["default", "kube-system", "apps"]
POLICY = make_policy("p", namespace="default", deschedule=[rule("health", "GreaterThan", 5)])
POLICY_APPS = make_policy("p", namespace="apps", deschedule=[rule("health", "GreaterThan", 5)])


@st.composite
def pods(draw: st.DrawFn, index: int) -> Pod:
    owner_kind = draw(st.sampled_from([None, "ReplicaSet", "DaemonSet", "StatefulSet"]))
    owners = (
        (OwnerReference(owner_kind, f"o{draw(st.integers(0, 3))}", controller=True),)
        if owner_kind
        else ()
    )
    annotations: dict[str, str] = {}
    for key in (MIRROR_ANNOTATION, EVICT_ANNOTATION):
        if draw(st.booleans()):
            annotations[key] = "x"
    if draw(st.booleans()):
        annotations[CONFIG_SOURCE_ANNOTATION] = draw(st.sampled_from(["api", "file"]))
    volumes = tuple(
        Volume(f"v{i}", kind)
        for i, kind in enumerate(
            draw(
                st.lists(
                    st.sampled_from(["emptyDir", "hostPath", "persistentVolumeClaim"]), max_size=2
                )
            )
        )
    )
    pod = make_pod(
        f"pod-{index}",
        node=draw(st.sampled_from(NODES)),
        namespace=draw(st.sampled_from(NAMESPACES)),
        owner=None,
        cpu=draw(st.sampled_from([0.0, 0.5, 2.0])),
        labels={POLICY_LABEL: "p"} if draw(st.booleans()) else {},
    )
    return dataclasses.replace(
        pod,
        owners=owners,
        annotations=annotations,
        volumes=volumes,
        priority=draw(st.sampled_from([0, 100, 10_000, 2_000_000_000])),
        phase=draw(st.sampled_from(["Running", "Running", "Failed"])),
        deletion_timestamp=START if draw(st.integers(0, 9)) == 0 else None,
        container_restarts=draw(st.integers(0, 20)),
        creation_timestamp=START - timedelta(hours=draw(st.integers(0, 72))),
    )


def config_document(evictor: dict[str, Any], limits: dict[str, int]) -> dict[str, Any]:
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "evictionCooldownSeconds": 0,
        "circuitBreaker": {"maxViolatingNodeShare": 1.0},
        **limits,
        "profiles": [
            {
                "name": "all",
                "pluginConfig": [
                    {"name": "DefaultEvictor", "args": evictor},
                    {"name": "RemovePodsHavingTooManyRestarts", "args": {"podRestartThreshold": 5}},
                    {"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": 3600}},
                    {
                        "name": "LowNodeUtilization",
                        "args": {
                            "thresholds": {"cpu": 20, "pods": 20},
                            "targetThresholds": {"cpu": 50, "pods": 50},
                        },
                    },
                    {
                        "name": "LoadAware",
                        "args": {"deviationThresholds": "Low", "resources": ["cpu_utilization"]},
                    },
                ],
                "plugins": {
                    "deschedule": {
                        "enabled": [
                            "TASViolations",
                            "RemovePodsViolatingNodeTaints",
                            "RemovePodsHavingTooManyRestarts",
                            "PodLifeTime",
                            "RemoveFailedPods",
                        ]
                    },
                    "balance": {
                        "enabled": [
                            "RemoveDuplicates",
                            "LoadAware",
                            "LowNodeUtilization",
                            "RemovePodsViolatingTopologySpreadConstraint",
                        ]
                    },
                },
            }
        ],
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    count=st.integers(0, 12),
    evictor=st.fixed_dictionaries(
        {},
        optional={
            "evictLocalStoragePods": st.booleans(),
            "evictSystemCriticalPods": st.booleans(),
            "evictFailedBarePods": st.booleans(),
            "evictDaemonSetPods": st.booleans(),
            "ignorePvcPods": st.booleans(),
            "nodeFit": st.booleans(),
            "priorityThreshold": st.builds(lambda v: {"value": v}, st.sampled_from([50, 5000])),
            "namespaces": st.just({"exclude": ["kube-system"]}),
        },
    ),
    limits=st.fixed_dictionaries(
        {},
        optional={
            "maxNoOfPodsToEvictPerNode": st.integers(0, 3),
            "maxNoOfPodsToEvictPerNamespace": st.integers(0, 3),
            "maxNoOfPodsToEvictTotal": st.integers(0, 5),
        },
    ),
    health=st.dictionaries(st.sampled_from(NODES), st.floats(0, 10)),
    utilization=st.dictionaries(st.sampled_from(NODES), st.floats(0, 1)),
    mode=st.sampled_from(list(Mode)),
)
def test_no_protected_pod_is_ever_evicted_and_limits_are_never_exceeded(
    data: st.DataObject,
    count: int,
    evictor: dict[str, Any],
    limits: dict[str, int],
    health: dict[str, float],
    utilization: dict[str, float],
    mode: Mode,
) -> None:
    all_pods = [data.draw(pods(i)) for i in range(count)]
    cluster = cluster_with(*(make_node(n, cpu=4) for n in NODES), pods=tuple(all_pods))
    config = parse_config(config_document(evictor, limits))
    rules = ProtectionRules.resolve(config.profiles[0].evictor, cluster=cluster, pods=all_pods)
    protected = {
        (p.namespace, p.name) for p in all_pods if rules.protection(p, now=START) is not None
    }
    report = make_descheduler(
        cluster,
        config,
        metrics={"health": health, "cpu_utilization": utilization},
        policies={POLICY.key: POLICY, POLICY_APPS.key: POLICY_APPS},
        mode=mode,
    ).run_cycle()
    done = [d for d in report.decisions if d.result in ("evicted", "dry-run")]
    event(f"evictions: {min(len(done), 3)}+")
    assert not {(d.namespace, d.name) for d in done} & protected
    assert not {(r.namespace, r.name) for r in cluster.evictions} & protected
    if mode is Mode.PREDICTIVE:
        assert cluster.evictions == ()
    per_node = Counter(d.node for d in done)
    per_namespace = Counter(d.namespace for d in done)
    if "maxNoOfPodsToEvictTotal" in limits:
        assert len(done) <= limits["maxNoOfPodsToEvictTotal"]
    if "maxNoOfPodsToEvictPerNode" in limits:
        assert all(c <= limits["maxNoOfPodsToEvictPerNode"] for c in per_node.values())
    if "maxNoOfPodsToEvictPerNamespace" in limits:
        assert all(c <= limits["maxNoOfPodsToEvictPerNamespace"] for c in per_namespace.values())
