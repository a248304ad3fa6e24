"""The DeschedulerPolicy file: what loads, what each plugin's arguments become, and that every
problem is reported at once with its path. Every example under deploy/descheduler/ loads.

Covered beyond that: upstream's top-level fields (the string nodeSelector, read as the
DefaultEvictor's is, in either form; failure Events, the grace period, metrics providers), the
DefaultEvictor's podProtections form and its refusal to be mixed with the deprecated booleans,
every new plugin's bad arguments with their paths, the profile's `ownerCooldown`, and that
`LowNodeUtilization` is upstream's plugin on requests (its telemetry namesake is `LoadAware`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from descheduler.config import (
    ConfigError,
    DeschedulerConfig,
    load_config_file,
    load_config_text,
    parse_config,
)
from descheduler.framework import RUN_POINTS
from descheduler.plugins import (
    load_aware,
    low_node_utilization,
    pod_life_time,
    soft_tainter,
    tas_violations,
)
from descheduler.plugins.default_evictor import DEFAULT_PROTECTIONS, Protection
from descheduler.plugins.registry import default_registry
from descheduler.profiles import OwnerCooldown
from descheduler.signals import Signal
from descheduler.violations import ViolationSource

EXAMPLES = Path(__file__).parents[2] / "deploy" / "descheduler"


def document(**profile: Any) -> dict[str, Any]:
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [{"name": "p", **profile}],
    }


def problems_of(raw: Any) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    return caught.value.problems


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_loads(path: Path) -> None:
    config = load_config_file(path)
    assert config.profiles
    assert any(p.deschedule or p.balance for p in config.profiles)


def test_there_is_an_example_for_every_strategy() -> None:
    enabled = {
        plugin.name
        for path in EXAMPLES.glob("*.yaml")
        for profile in load_config_file(path).profiles
        for plugin in (*profile.deschedule, *profile.balance)
    }
    runnable = {p.name for p in default_registry() if p.points & set(RUN_POINTS)}
    assert enabled == runnable


def test_a_full_file_reads_into_values() -> None:
    config = load_config_text(
        """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 2
maxNoOfPodsToEvictPerNamespace: 3
maxNoOfPodsToEvictTotal: 4
nodeSelector: "pool=workers,tier in (a,b),!legacy"
evictionCooldownSeconds: 60
evictionFailureEventNotification: true
gracePeriodSeconds: 5
metricsProviders: [{source: Prometheus, prometheus: {url: "http://prometheus:9090"}}]
circuitBreaker: {maxViolatingNodeShare: 0.3}
profiles:
  - name: all
    pluginConfig:
      - name: DefaultEvictor
        args: {evictLocalStoragePods: true, priorityThreshold: {value: 100}}
      - name: TASViolations
        args: {violationSource: Both}
      - name: LoadAware
        args:
          thresholds: {cpu_pressure: 10}
          targetThresholds: {cpu_pressure: 30}
          numberOfNodes: 1
      - name: PodLifeTime
        args: {maxPodLifeTimeSeconds: 3600, states: [Running], labelSelector: {matchLabels: {a: b}}}
      - name: LowNodeUtilization
        args:
          thresholds: {MetricResource: 10}
          targetThresholds: {MetricResource: 10}
          useDeviationThresholds: true
          metricsUtilization: {source: Prometheus, prometheus: {query: "q"}}
    plugins:
      deschedule: {enabled: [TASViolations, PodLifeTime]}
      balance: {enabled: [LoadAware, SoftTainter, LowNodeUtilization]}
      filter: {enabled: [DefaultEvictor]}
"""
    )
    assert isinstance(config, DeschedulerConfig)
    assert (config.limits.per_node, config.limits.per_namespace, config.limits.total) == (2, 3, 4)
    assert config.node_selector is not None
    assert config.node_selector.matches({"pool": "workers", "tier": "a"})
    assert not config.node_selector.matches({"pool": "workers", "tier": "a", "legacy": "x"})
    assert not config.node_selector.matches({"pool": "workers", "tier": "c"})
    assert config.cooldown_seconds == 60
    assert config.max_violating_node_share == 0.3
    assert config.eviction_failure_events
    assert config.grace_period_seconds == 5
    assert config.prometheus_url == "http://prometheus:9090"
    (profile,) = config.profiles
    assert profile.deschedule == (tas_violations.PLUGIN, pod_life_time.PLUGIN)
    assert profile.balance == (load_aware.PLUGIN, soft_tainter.PLUGIN, low_node_utilization.PLUGIN)
    assert not profile.evictor.protects(Protection.PODS_WITH_LOCAL_STORAGE)
    assert profile.evictor.priority_threshold is not None
    assert profile.evictor.priority_threshold.value == 100
    assert profile.args_of(tas_violations.PLUGIN).source is ViolationSource.BOTH
    load = profile.args_of(load_aware.PLUGIN)
    assert load.thresholds == {Signal.CPU_PRESSURE: 10}
    assert load.target_thresholds == {Signal.CPU_PRESSURE: 30}
    assert load.number_of_nodes == 1
    lifetime = profile.args_of(pod_life_time.PLUGIN)
    assert lifetime.max_pod_life_time_seconds == 3600
    assert lifetime.states == {"Running"}
    assert lifetime.pods.labels is not None
    assert lifetime.pods.labels.matches({"a": "b"})
    lnu = profile.args_of(low_node_utilization.PLUGIN)
    assert lnu.metrics_source is low_node_utilization.MetricsSource.PROMETHEUS
    assert lnu.prometheus_query == "q"
    assert profile.args_of(soft_tainter.PLUGIN).taint_key == (
        "telemetry.aware.scheduling/overutilized"
    )


def test_defaults_are_safe() -> None:
    config = parse_config(document(plugins={"deschedule": {"enabled": ["TASViolations"]}}))
    assert config.cooldown_seconds == 300
    assert config.max_violating_node_share == 0.5
    evictor = config.profiles[0].evictor
    assert evictor.node_fit
    assert evictor.protections == set(DEFAULT_PROTECTIONS)
    assert config.profiles[0].owner_cooldown is OwnerCooldown.TELEMETRY_PLUGINS


@pytest.mark.parametrize(
    "selector",
    [
        pytest.param("pool=workers,tier=a", id="upstream's string"),
        pytest.param({"pool": "workers", "tier": "a"}, id="a mapping, for convenience"),
    ],
)
def test_the_policy_and_the_default_evictor_read_a_node_selector_alike(
    selector: str | dict[str, str],
) -> None:
    config = parse_config(
        {
            "apiVersion": "descheduler/v1alpha2",
            "kind": "DeschedulerPolicy",
            "nodeSelector": selector,
            "profiles": [
                {
                    "name": "p",
                    "pluginConfig": [
                        {"name": "DefaultEvictor", "args": {"nodeSelector": selector}},
                        {"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": 60}},
                    ],
                    "plugins": {"deschedule": {"enabled": ["PodLifeTime"]}},
                }
            ],
        }
    )
    wanted, other = {"pool": "workers", "tier": "a"}, {"pool": "workers", "tier": "b"}
    for read in (config.node_selector, config.profiles[0].evictor.node_selector):
        assert read is not None
        assert read.matches(wanted)
        assert not read.matches(other)


def test_a_deviation_preset_sets_both_spans_for_the_named_signals() -> None:
    config = parse_config(
        document(
            pluginConfig=[
                {
                    "name": "LoadAware",
                    "args": {
                        "deviationThresholds": "AsymmetricMedium",
                        "resources": ["cpu_pressure", "memory_pressure"],
                    },
                }
            ],
            plugins={"balance": {"enabled": ["LoadAware"]}},
        )
    )
    args = config.profiles[0].args_of(load_aware.PLUGIN)
    assert args.use_deviation_thresholds
    assert args.thresholds == {Signal.CPU_PRESSURE: 0, Signal.MEMORY_PRESSURE: 0}
    assert args.target_thresholds == {Signal.CPU_PRESSURE: 20, Signal.MEMORY_PRESSURE: 20}


def load_aware_with(**extra: object) -> dict[str, object]:
    return document(
        pluginConfig=[
            {
                "name": "LoadAware",
                "args": {"deviationThresholds": "AsymmetricLow", "resources": ["cpu_combined"]}
                | extra,
            }
        ],
        plugins={"balance": {"enabled": ["LoadAware"]}},
    )


def test_the_crest_a_node_must_reach_to_be_rebalanced_defaults_to_half_and_is_a_pressure() -> None:
    parsed = parse_config(load_aware_with()).profiles[0].args_of(load_aware.PLUGIN)
    assert parsed.at_risk_crest_pressure == 0.5
    lowered = parse_config(load_aware_with(atRiskCrestPressure=0.3))
    assert lowered.profiles[0].args_of(load_aware.PLUGIN).at_risk_crest_pressure == 0.3
    problems = problems_of(load_aware_with(atRiskCrestPressure=1.5))
    assert any("atRiskCrestPressure" in p and "1.5" in p for p in problems), problems


def test_every_problem_is_reported_at_once_with_its_path() -> None:
    raw = {
        "apiVersion": "descheduler/v1alpha1",
        "kind": "DeschedulerPolicy",
        "maxNoOfPodsToEvictTotal": -1,
        "surprise": 1,
        "profiles": [
            {
                "name": "p",
                "pluginConfig": [
                    {"name": "LoadAware", "args": {"thresholds": {"cpu": 10, "cpu_pressure": 120}}},
                    {"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": "a day"}},
                    {"name": "Frobnicate", "args": {}},
                    {"name": "DefaultEvictor", "args": {"nodeFit": "yes", "typo": True}},
                ],
                "plugins": {
                    "deschedule": {"enabled": ["NotAPlugin", "LoadAware"]},
                    "balance": {"enabled": ["SoftTainter"]},
                },
            }
        ],
    }
    problems = problems_of(raw)
    expected = [
        "apiVersion: expected 'descheduler/v1alpha2', got 'descheduler/v1alpha1'",
        "maxNoOfPodsToEvictTotal: must be at least 0, got -1",
        "surprise: unknown field",
        "profiles[0].pluginConfig[0].args.thresholds.cpu: unknown signal 'cpu'; known:",
        "profiles[0].pluginConfig[0].args.thresholds.cpu_pressure: must be a percentage 0..100",
        "profiles[0].pluginConfig[1].args.maxPodLifeTimeSeconds: must be an integer",
        "profiles[0].pluginConfig[2].name: unknown plugin 'Frobnicate'",
        "profiles[0].pluginConfig[3].args.nodeFit: must be true or false",
        "profiles[0].pluginConfig[3].args.typo: unknown field",
        "profiles[0].plugins.deschedule.enabled[0]: unknown plugin 'NotAPlugin'",
        "profiles[0].plugins.deschedule.enabled[1]: LoadAware is not a deschedule plugin",
        "profiles[0].plugins.balance: SoftTainter acts on what LoadAware or LowNodeUtilization",
    ]
    for text in expected:
        assert any(p.startswith(text) for p in problems), (text, problems)


@pytest.mark.parametrize(
    ("profile", "problem"),
    [
        pytest.param(
            {"plugins": {"deschedule": {"enabled": ["PodLifeTime"]}}},
            "give at least one of maxPodLifeTimeSeconds, states, conditions or exitCodes",
            id="PodLifeTime needs a criterion",
        ),
        pytest.param(
            {"plugins": {"deschedule": {"enabled": ["RemovePodsHavingTooManyRestarts"]}}},
            "podRestartThreshold: is required",
            id="restarts need a threshold",
        ),
        pytest.param(
            {"plugins": {"balance": {"enabled": ["LoadAware"]}}},
            "thresholds and targetThresholds (or deviationThresholds) are required",
            id="LoadAware needs thresholds",
        ),
        pytest.param(
            {
                "pluginConfig": [
                    {
                        "name": "LoadAware",
                        "args": {
                            "thresholds": {"cpu_pressure": 50},
                            "targetThresholds": {"cpu_pressure": 40},
                        },
                    }
                ],
                "plugins": {"balance": {"enabled": ["LoadAware"]}},
            },
            "50 is above targetThresholds.cpu_pressure 40",
            id="static thresholds must not cross",
        ),
        pytest.param(
            {
                "pluginConfig": [{"name": "LoadAware", "args": {"deviationThresholds": "Extreme"}}],
                "plugins": {"balance": {"enabled": ["LoadAware"]}},
            },
            "unknown preset 'Extreme'",
            id="unknown preset",
        ),
        pytest.param(
            {
                "pluginConfig": [
                    {
                        "name": "DefaultEvictor",
                        "args": {"priorityThreshold": {"value": 1, "name": "x"}},
                    }
                ],
            },
            "give value or name, not both",
            id="priority threshold value or name",
        ),
        pytest.param(
            {
                "pluginConfig": [
                    {
                        "name": "DefaultEvictor",
                        "args": {"namespaces": {"include": ["a"], "exclude": ["b"]}},
                    }
                ],
            },
            "give include or exclude, not both",
            id="namespaces include or exclude",
        ),
        pytest.param(
            {"plugins": {"balance": {"enabled": ["RemoveDuplicates", "RemoveDuplicates"]}}},
            "RemoveDuplicates is enabled twice",
            id="a plugin enabled twice",
        ),
        pytest.param(
            {"ownerCooldown": "Sometimes"},
            "profiles[0].ownerCooldown: unknown value 'Sometimes'; known: TelemetryPlugins, "
            "AllPlugins",
            id="ownerCooldown is an enum",
        ),
    ],
)
def test_bad_arguments_are_clear_errors(profile: dict[str, Any], problem: str) -> None:
    problems = problems_of(document(**profile))
    assert any(problem in p for p in problems), problems


def test_a_file_that_is_not_yaml_says_so_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("profiles: [\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: not valid YAML"):
        load_config_file(path)


def test_problems_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n")
    with pytest.raises(ConfigError) as caught:
        load_config_file(path)
    assert caught.value.problems == (f"{path}: profiles: at least one profile is required",)


def test_low_node_utilization_is_upstreams_plugin_on_requests() -> None:
    config = parse_config(
        document(
            pluginConfig=[
                {
                    "name": "LowNodeUtilization",
                    "args": {
                        "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
                        "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
                        "evictableNamespaces": {"exclude": ["kube-system"]},
                        "evictionLimits": {"node": 3},
                    },
                }
            ],
            plugins={"balance": {"enabled": ["LowNodeUtilization"]}},
        )
    )
    (profile,) = config.profiles
    assert profile.balance == (low_node_utilization.PLUGIN,)
    args = profile.args_of(low_node_utilization.PLUGIN)
    assert args.thresholds == {"cpu": 20, "memory": 20, "pods": 20}
    assert args.node_eviction_limit == 3
    assert not args.evictable_namespaces.allows("kube-system")


def test_every_bad_argument_of_the_upstream_plugins_is_listed_with_its_path() -> None:
    raw = document(
        pluginConfig=[
            {
                "name": "DefaultEvictor",
                "args": {
                    "evictLocalStoragePods": True,
                    "podProtections": {
                        "defaultDisabled": ["PodsWithPVC"],
                        "extraEnabled": ["PodsWithoutPDB", "PodsWithoutPDB"],
                    },
                    "noEvictionPolicy": "Sometimes",
                    "minPodAge": "soon",
                    "nodeSelector": "a b",
                    "labelSelector": {"matchExpressions": [{"key": "k", "operator": "Near"}]},
                    "priorityThreshold": {"value": 3_000_000_000},
                },
            },
            {
                "name": "LowNodeUtilization",
                "args": {
                    "thresholds": {"cpu": 60, "memory": 120, "pods": 10},
                    "targetThresholds": {"cpu": 50},
                    "evictableNamespaces": {"include": ["a"]},
                    "metricsUtilization": {"source": "Prometheus"},
                },
            },
            {"name": "HighNodeUtilization", "args": {"evictionModes": ["Everything"]}},
            {
                "name": "RemovePodsViolatingNodeTaints",
                "args": {"includedTaints": ["a"], "excludedTaints": ["b"]},
            },
            {
                "name": "RemovePodsViolatingNodeAffinity",
                "args": {"nodeAffinityType": ["sometimes"]},
            },
            {
                "name": "RemovePodsHavingTooManyRestarts",
                "args": {"podRestartThreshold": 0, "states": ["Lost"]},
            },
            {"name": "PodLifeTime", "args": {"states": ["Bored"], "conditions": [{}]}},
            {
                "name": "RemovePodsViolatingTopologySpreadConstraint",
                "args": {"constraints": ["Never"]},
            },
            {"name": "RemoveFailedPods", "args": {"exitCodes": ["one"]}},
        ],
        plugins={"filter": {"enabled": ["DefaultEvictor"]}},
    )
    problems = problems_of(raw)
    at = "profiles[0].pluginConfig"
    expected = [
        f"{at}[0].args.podProtections.defaultDisabled[0]: unknown protection 'PodsWithPVC'",
        f"{at}[0].args.podProtections.extraEnabled[1]: PodsWithoutPDB is listed twice",
        f"{at}[0].args.podProtections: cannot be combined with the deprecated fields",
        f"{at}[0].args.noEvictionPolicy: unknown value 'Sometimes'",
        f"{at}[0].args.minPodAge: 'soon' is not a duration",
        f"{at}[0].args.nodeSelector: 'a b' is not a label selector term",
        f"{at}[0].args.labelSelector.matchExpressions[0].operator: unknown operator 'Near'",
        f"{at}[0].args.priorityThreshold.value: must be at most 2000000000",
        f"{at}[1].args.thresholds.memory: must be a percentage 0..100",
        f"{at}[1].args: thresholds and targetThresholds must name the same resources",
        f"{at}[1].args.evictableNamespaces.include: only exclude is supported",
        f"{at}[1].args.metricsUtilization.prometheus.query: is required with source: Prometheus",
        f"{at}[2].args.thresholds: no resource threshold is configured",
        f"{at}[2].args.evictionModes[0]: unknown mode 'Everything'",
        f"{at}[3].args: give includedTaints or excludedTaints, not both",
        f"{at}[4].args.nodeAffinityType[0]: unknown 'sometimes'",
        f"{at}[5].args.podRestartThreshold: must be at least 1, got 0",
        f"{at}[5].args.states[0]: unknown state 'Lost'",
        f"{at}[6].args.states[0]: unknown state 'Bored'",
        f"{at}[6].args.conditions[0]: give at least one of type, status, reason",
        f"{at}[7].args.constraints[0]: unknown 'Never'",
        f"{at}[8].args.exitCodes: must be a list of integers",
    ]
    for text in expected:
        assert any(p.startswith(text) for p in problems), (text, problems)


def test_a_prometheus_query_needs_a_prometheus_provider() -> None:
    raw = document(
        pluginConfig=[
            {
                "name": "LowNodeUtilization",
                "args": {
                    "thresholds": {"MetricResource": 20},
                    "targetThresholds": {"MetricResource": 50},
                    "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": "q"}},
                },
            }
        ],
        plugins={"balance": {"enabled": ["LowNodeUtilization"]}},
    )
    assert any(
        p.startswith("profiles[0]: LowNodeUtilization reads Prometheus: add metricsProviders")
        for p in problems_of(raw)
    )
