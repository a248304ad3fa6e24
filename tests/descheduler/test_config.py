"""The DeschedulerPolicy file: what loads, what each plugin's arguments become, and that every
problem is reported at once with its path. Every example under deploy/descheduler/ loads.
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
from descheduler.plugins import load_aware, pod_life_time, soft_tainter, tas_violations
from descheduler.plugins.registry import default_registry
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
nodeSelector: "pool=workers"
evictionCooldownSeconds: 60
circuitBreaker: {maxViolatingNodeShare: 0.3}
profiles:
  - name: all
    pluginConfig:
      - name: DefaultEvictor
        args: {evictLocalStoragePods: true, priorityThreshold: {value: 100}}
      - name: TASViolations
        args: {violationSource: Both}
      - name: LowNodeUtilization
        args:
          thresholds: {cpu_pressure: 10}
          targetThresholds: {cpu_pressure: 30}
          numberOfNodes: 1
      - name: PodLifeTime
        args: {maxPodLifeTimeSeconds: 3600}
    plugins:
      deschedule: {enabled: [TASViolations, PodLifeTime]}
      balance: {enabled: [LowNodeUtilization, SoftTainter]}
      filter: {enabled: [DefaultEvictor]}
"""
    )
    assert isinstance(config, DeschedulerConfig)
    assert (config.limits.per_node, config.limits.per_namespace, config.limits.total) == (2, 3, 4)
    assert config.node_selector == {"pool": "workers"}
    assert config.cooldown_seconds == 60
    assert config.max_violating_node_share == 0.3
    (profile,) = config.profiles
    assert profile.deschedule == (tas_violations.PLUGIN, pod_life_time.PLUGIN)
    assert profile.balance == (load_aware.PLUGIN, soft_tainter.PLUGIN)
    assert profile.evictor.evict_local_storage_pods
    assert profile.evictor.priority_threshold is not None
    assert profile.evictor.priority_threshold.value == 100
    assert profile.args_of(tas_violations.PLUGIN).source is ViolationSource.BOTH
    load = profile.args_of(load_aware.PLUGIN)
    assert load.thresholds == {Signal.CPU_PRESSURE: 10}
    assert load.target_thresholds == {Signal.CPU_PRESSURE: 30}
    assert load.number_of_nodes == 1
    assert profile.args_of(pod_life_time.PLUGIN).max_pod_life_time_seconds == 3600
    assert profile.args_of(soft_tainter.PLUGIN).taint_key == (
        "telemetry.aware.scheduling/overutilized"
    )


def test_defaults_are_safe() -> None:
    config = parse_config(document(plugins={"deschedule": {"enabled": ["TASViolations"]}}))
    assert config.cooldown_seconds == 300
    assert config.max_violating_node_share == 0.5
    evictor = config.profiles[0].evictor
    assert evictor.node_fit
    assert not evictor.evict_local_storage_pods
    assert not evictor.evict_system_critical_pods


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
        "profiles[0].pluginConfig[0].args.thresholds.cpu: unknown signal 'cpu'",
        "profiles[0].pluginConfig[0].args.thresholds.cpu_pressure: must be a percentage 0..100",
        "profiles[0].pluginConfig[1].args.maxPodLifeTimeSeconds: must be an integer",
        "profiles[0].pluginConfig[2].name: unknown plugin 'Frobnicate'",
        "profiles[0].pluginConfig[3].args.nodeFit: must be true or false",
        "profiles[0].pluginConfig[3].args.typo: unknown field",
        "profiles[0].plugins.deschedule.enabled[0]: unknown plugin 'NotAPlugin'",
        "profiles[0].plugins.deschedule.enabled[1]: LoadAware is not a deschedule plugin",
        "profiles[0].plugins.balance: SoftTainter taints what LoadAware classifies",
    ]
    for text in expected:
        assert any(p.startswith(text) for p in problems), (text, problems)


@pytest.mark.parametrize(
    ("profile", "problem"),
    [
        pytest.param(
            {"plugins": {"deschedule": {"enabled": ["PodLifeTime"]}}},
            "maxPodLifeTimeSeconds: is required",
            id="PodLifeTime needs its age",
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
