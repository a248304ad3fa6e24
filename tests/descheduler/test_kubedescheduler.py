"""The OpenShift operator's `KubeDescheduler`, expanded into the policy it stands for.

Covered: every profile, alone and with the two modifiers, expands to a DeschedulerPolicy this
descheduler reads; the KubeVirtRelieveAndMigrate profile as the operator builds it (node
selector, eviction limits, AsymmetricLow deviation on a Prometheus query, mandatory
no-eviction, the per-owner cooldown for the operator's migration-aware filter); the
customizations (devDeviationThresholds, devLowNodeUtilizationThresholds,
devActualUtilizationProfile, devEnableSoftTainter, thresholdPriority and its class name,
podLifetime, namespaces, evictionLimits, mode, interval); every problem of a bad document
listed with its path; the shipped examples expand and load; and a KubeVirtRelieveAndMigrate
file runs a cycle through `tas descheduler` against the API emulator and a Prometheus.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from descheduler.config import parse_config
from descheduler.kubedescheduler import (
    PROTECTED_NAMESPACES,
    KubeDeschedulerError,
    Profile,
    expand,
)
from descheduler.plugins import low_node_utilization
from descheduler.profiles import OwnerCooldown
from tests.descheduler.upstream.harness import evictions, prometheus_serving, run_cli
from tests.descheduler.upstream.objects import DS_OWNER, node, pod
from tests.k8s_emulator import KubeEmulator

EXAMPLES = Path(__file__).parents[2] / "deploy" / "descheduler" / "kubedescheduler"
PROMETHEUS = "http://prometheus.example:9090"


def document(*profiles: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "KubeDescheduler",
        "metadata": {"name": "cluster", "namespace": "openshift-kube-descheduler-operator"},
        "spec": {"deschedulingIntervalSeconds": 3600, "profiles": list(profiles), **spec},
    }


def plugin_args(policy: dict[str, Any], profile: str, plugin: str) -> dict[str, Any]:
    (found,) = [p for p in policy["profiles"] if p["name"] == profile]
    (config,) = [c for c in found["pluginConfig"] if c["name"] == plugin]
    args: dict[str, Any] = config["args"]
    return args


@pytest.mark.parametrize(
    "profile",
    [
        p
        for p in Profile
        if p not in (Profile.EVICT_PODS_WITH_PVC, Profile.EVICT_PODS_WITH_LOCAL_STORAGE)
    ],
)
def test_every_profile_expands_to_a_policy_the_descheduler_reads(profile: Profile) -> None:
    policy, interval, mode = expand(
        document(profile, "EvictPodsWithPVC", "EvictPodsWithLocalStorage"),
        prometheus_url=PROMETHEUS,
    )
    config = parse_config(policy)
    assert len(config.profiles) == 1
    evictor = config.profiles[0].evictor
    assert not evictor.node_fit  # the operator leaves nodeFit off
    assert (interval, mode) == (3600.0, "Predictive")


def test_kubevirt_relieve_and_migrate_is_what_the_operator_builds() -> None:
    policy, _, _ = expand(document("KubeVirtRelieveAndMigrate"), prometheus_url=PROMETHEUS)
    assert policy["nodeSelector"] == "kubevirt.io/schedulable=true"
    assert (policy["maxNoOfPodsToEvictTotal"], policy["maxNoOfPodsToEvictPerNode"]) == (5, 2)
    assert policy["metricsProviders"] == [
        {"source": "Prometheus", "prometheus": {"url": PROMETHEUS}}
    ]
    args = plugin_args(policy, "KubeVirtRelieveAndMigrate", "LowNodeUtilization")
    assert args["useDeviationThresholds"] is True
    assert args["thresholds"] == {"MetricResource": 0}
    assert args["targetThresholds"] == {"MetricResource": 10}
    assert args["evictionLimits"] == {"node": 2}
    assert args["metricsUtilization"]["prometheus"]["query"] == (
        "descheduler:node:linear_amplified_ideal_point_positive_distance:k3:avg1m"
    )
    assert args["evictableNamespaces"] == {"exclude": list(PROTECTED_NAMESPACES)}
    evictor = plugin_args(policy, "KubeVirtRelieveAndMigrate", "DefaultEvictor")
    assert evictor["noEvictionPolicy"] == "Mandatory"
    assert evictor["evictLocalStoragePods"]
    assert not evictor["ignorePvcPods"]
    config = parse_config(policy)
    (profile,) = config.profiles
    assert profile.owner_cooldown is OwnerCooldown.ALL_PLUGINS
    # KubevirtMigrationAware's own default (defaults.go), 15 minutes.
    assert config.cooldown_seconds == 900
    lnu = profile.args_of(low_node_utilization.PLUGIN)
    assert lnu.metrics_source is low_node_utilization.MetricsSource.PROMETHEUS


@pytest.mark.parametrize(
    ("customizations", "thresholds", "deviation"),
    [
        pytest.param({"devDeviationThresholds": "Medium"}, (20, 20), True, id="deviation Medium"),
        pytest.param({"devDeviationThresholds": ""}, (20, 50), False, id="deviation off"),
        pytest.param(
            {"devLowNodeUtilizationThresholds": "High"}, (40, 70), False, id="static High"
        ),
        pytest.param({"devLowNodeUtilizationThresholds": ""}, (0, 10), True, id="static empty"),
    ],
)
def test_kubevirt_thresholds_follow_the_customizations(
    customizations: dict[str, str], thresholds: tuple[int, int], deviation: bool
) -> None:
    raw = document("KubeVirtRelieveAndMigrate", profileCustomizations=customizations)
    policy, _, _ = expand(raw, prometheus_url=PROMETHEUS)
    args = plugin_args(policy, "KubeVirtRelieveAndMigrate", "LowNodeUtilization")
    assert (args["thresholds"]["MetricResource"], args["targetThresholds"]["MetricResource"]) == (
        thresholds
    )
    assert args["useDeviationThresholds"] is deviation


def test_customizations_reach_every_profile() -> None:
    raw = document(
        "AffinityAndTaints",
        "LifecycleAndUtilization",
        "TopologyAndDuplicates",
        mode="Automatic",
        evictionLimits={"total": 7, "node": 3},
        profileCustomizations={
            "podLifetime": "12h",
            "thresholdPriority": 1000,
            "devActualUtilizationProfile": "PrometheusCPUPSIPressure",
            "devEnableSoftTainter": True,
            "namespaces": {"included": ["apps"]},
        },
    )
    policy, interval, mode = expand(raw, prometheus_url=PROMETHEUS)
    assert (interval, mode) == (3600.0, "Automatic")
    assert (policy["maxNoOfPodsToEvictTotal"], policy["maxNoOfPodsToEvictPerNode"]) == (7, 3)
    lifetime = plugin_args(policy, "LifecycleAndUtilization", "PodLifeTime")
    assert lifetime == {"maxPodLifeTimeSeconds": 43200, "namespaces": {"include": ["apps"]}}
    lnu = plugin_args(policy, "LifecycleAndUtilization", "LowNodeUtilization")
    assert lnu["metricsUtilization"]["prometheus"]["query"] == (
        "rate(node_pressure_cpu_waiting_seconds_total[1m])"
    )
    assert lnu["thresholds"] == {"MetricResource": 20}
    assert lnu["evictionLimits"] == {"node": 3}
    # LowNodeUtilization takes exclusions only: the protected namespaces stay excluded.
    assert lnu["evictableNamespaces"] == {"exclude": list(PROTECTED_NAMESPACES)}
    for profile in policy["profiles"]:
        evictor = next(c for c in profile["pluginConfig"] if c["name"] == "DefaultEvictor")
        assert evictor["args"]["priorityThreshold"] == {"value": 1000}
        assert evictor["args"]["ignorePvcPods"] is True
    (lifecycle,) = [p for p in policy["profiles"] if p["name"] == "LifecycleAndUtilization"]
    assert lifecycle["plugins"]["balance"]["enabled"] == ["LowNodeUtilization", "SoftTainter"]
    config = parse_config(policy)
    assert [p.name for p in config.profiles] == [
        "AffinityAndTaints",
        "LifecycleAndUtilization",
        "TopologyAndDuplicates",
    ]


def test_excluded_namespaces_add_to_the_protected_ones() -> None:
    raw = document(
        "TopologyAndDuplicates", profileCustomizations={"namespaces": {"excluded": ["a"]}}
    )
    policy, _, _ = expand(raw)
    args = plugin_args(policy, "TopologyAndDuplicates", "RemoveDuplicates")
    assert args == {"namespaces": {"exclude": [*PROTECTED_NAMESPACES, "a"]}}
    config = parse_config(policy)
    rules = config.profiles[0]
    assert rules.name == "TopologyAndDuplicates"


def test_long_lifecycle_is_lifecycle_without_pod_life_time() -> None:
    policy, _, _ = expand(document("LongLifecycle"))
    (profile,) = policy["profiles"]
    assert profile["plugins"]["deschedule"]["enabled"] == ["RemovePodsHavingTooManyRestarts"]
    assert "PodLifeTime" not in {c["name"] for c in profile["pluginConfig"]}


def test_every_problem_of_a_bad_document_is_listed_with_its_path() -> None:
    raw = document(
        "LifecycleAndUtilization",
        "KubeVirtRelieveAndMigrate",
        "Nonsense",
        "LifecycleAndUtilization",
        mode="Sometimes",
        deschedulingIntervalSeconds=0,
        surprise=True,
        profileCustomizations={
            "thresholdPriority": 1,
            "thresholdPriorityClassName": "x",
            "devDeviationThresholds": "Extreme",
            "devActualUtilizationProfile": "Guess",
            "namespaces": {"included": ["openshift-etcd"], "excluded": ["b"]},
            "podLifetime": "a while",
        },
    )
    raw["apiVersion"] = "v1"
    with pytest.raises(KubeDeschedulerError) as caught:
        expand(raw)
    problems = caught.value.problems
    expected = [
        "apiVersion: expected 'operator.openshift.io/v1', got 'v1'",
        "spec.profiles[2]: unknown profile 'Nonsense'",
        "spec.profiles[3]: LifecycleAndUtilization is listed twice",
        "spec.profiles: LifecycleAndUtilization and KubeVirtRelieveAndMigrate cannot be declared",
        "spec.deschedulingIntervalSeconds: must be at least 1, got 0",
        "spec.mode: unknown value 'Sometimes'",
        "spec.surprise: unknown field",
        "spec.profileCustomizations.podLifetime: 'a while' is not a duration",
        "spec.profileCustomizations.devDeviationThresholds: unknown value 'Extreme'",
        "spec.profileCustomizations.devActualUtilizationProfile: unknown profile 'Guess'",
        "spec.profileCustomizations: give thresholdPriority or thresholdPriorityClassName",
        "spec.profileCustomizations.namespaces: give included or excluded, not both",
        "spec.profileCustomizations.namespaces.included[0]: openshift-etcd is a protected "
        "namespace",
        "spec: the profiles read Prometheus",
    ]
    for text in expected:
        assert any(p.startswith(text) for p in problems), (text, problems)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_the_shipped_kubedescheduler_examples_expand_and_load(path: Path) -> None:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    policy, interval, mode = expand(raw, prometheus_url=PROMETHEUS)
    assert parse_config(policy).profiles
    assert interval > 0
    assert mode in ("Predictive", "Automatic")


def test_a_kubevirt_relieve_and_migrate_file_runs_a_cycle_through_the_command_line(
    kube_emulator: KubeEmulator, tmp_path: Path
) -> None:
    raw = yaml.safe_load((EXAMPLES / "kubevirt-relieve-and-migrate.yaml").read_text())
    raw = copy.deepcopy(raw)
    api = kube_emulator
    schedulable = {"kubevirt.io/schedulable": "true"}
    for name in ("worker-1", "worker-2", "worker-3"):
        api.create("nodes", node(name, 4000, 8_000_000_000, 110, labels=schedulable))
    api.create("nodes", node("infra-1", 4000, 8_000_000_000, 110))
    for index in range(4):
        vmi = [
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachineInstance",
                "name": f"vm-{index}",
                "uid": f"vm-{index}",
                "controller": True,
            }
        ]
        api.create("pods", pod(f"virt-launcher-{index}", 500, 0, "worker-1", owners=vmi))
    api.create("pods", pod("node-agent", 100, 0, "worker-1", owners=DS_OWNER))
    pressure = {"worker-1": 0.9, "worker-2": 0.2, "worker-3": 0.1, "infra-1": 0.0}
    with prometheus_serving(pressure) as (url, queries):
        policy, _, mode = expand(raw, prometheus_url=url)
        # Predictive, as the file says: reported, not evicted.
        code, log = run_cli(api, policy, tmp_path)
        assert code == 0, log
    assert mode == "Predictive"
    assert queries == ["descheduler:combined_utilization_and_pressure:avg1m"]
    # (run_cli runs Automatic mode: the file's mode is for the lead's --kubedescheduler flag.)
    evicted = evictions(api)
    # avg 0.4 -> low 40, high 50: worker-1 (90) is overutilized; at most 2 per node.
    assert len(evicted) == 2, log
    assert all(name.startswith("virt-launcher-") for name in evicted)
    assert '"Node has been classified" category="overutilized" node="worker-1"' in log
    assert "infra-1" not in log  # outside kubevirt.io/schedulable=true
