"""The PSI profile keeps a VM from migrating again within its cooldown, as the operator's
KubevirtMigrationAware filter does (tas_simulator.baselines.KubevirtMigrationAware).

Covered:
- the profile enables it as the operator renders KubeVirtRelieveAndMigrate: a `pluginConfig`
  entry of its own, at `filter` (beside the DefaultEvictor) and `preEvictionFilter`, with the
  plugin's defaults (15m, 6h cap, 48h window); its arguments are validated (none negative, the
  cap not below the floor), every problem listed;
- the cooldown: max(15m, the migration's duration), doubled for each further completion in
  the window, capped at 6h; a VM mid-migration is refused outright; a pod without a VMI passes;
- in a run, one hot VM that would be migrated every cycle is migrated again only after 15
  minutes, then only after 30: the doubling; without the filter it moves within minutes.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import yaml

from descheduler.config import ConfigError, parse_config
from tas.cluster.model import Pod
from tas.types import Namespace, NodeName
from tas_simulator.baselines import (
    DEFAULT_MAX_MIGRATION_COOLDOWN,
    DEFAULT_MIGRATION_COOLDOWN,
    DEFAULT_MIGRATION_HISTORY_WINDOW,
    MIGRATION_AWARE_PLUGIN,
    KubevirtMigrationAware,
    MigrationAwareArgs,
    VmiState,
    registry_for,
)
from tas_simulator.contenders import PSI_PROFILE
from tas_simulator.runner import run_contender
from tas_simulator.scenario import load_scenario_text
from tests.tas_simulator import worlds

MINUTE = 60.0

# One VM that uses nearly all of a node, and two empty nodes: wherever it runs, its node is
# the only one over the PSI profile's deviation thresholds, so the profile wants to migrate it
# at every cycle (every minute here) once its move shows in the metrics.
RESTLESS_VM = """
name: restless-vm
duration: 75m
step: 5s
seed: 1
warmup: 1m
startupDelay: 10s
syncPeriod: 10s
metrics: {scrapeInterval: 15s, window: 1m, delay: 15s}
liveMigration: {bandwidth: 1Gi, pause: 500ms}
contenders:
  psi-profile: {deschedulingInterval: 60s}
nodes:
  - {name: "worker-{i}", count: 3, cpu: 4, memory: 16Gi}
workloads:
  - name: vm
    replicas: 1
    migration: live
    requests: {cpu: "1", memory: 2Gi}
    usage: {cpu: {profile: steady, value: "3.6"}, memory: {profile: steady, value: 2Gi}}
"""


def _pod() -> Pod:
    return Pod(namespace=Namespace("vms"), name="virt-launcher-vm-1", node_name=NodeName("w1"))


def _migrated(end: float) -> Any:
    """A lookup answering a VMI whose last migration took 5 s and ended at `end`."""
    return lambda pod: VmiState("vm-1", end - 5.0, end)


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _aware(vmi: VmiState | None, clock: Clock, **args: float) -> KubevirtMigrationAware:
    return KubevirtMigrationAware(MigrationAwareArgs(**args), lambda pod: vmi, clock)


# ---------------------------------------------------------------- the profile's document


def test_the_profile_enables_it_at_both_filter_points_with_its_defaults() -> None:
    document = yaml.safe_load(PSI_PROFILE)
    (profile,) = document["profiles"]
    assert {"name": "KubevirtMigrationAware", "args": {}} in profile["pluginConfig"]
    assert profile["plugins"]["filter"]["enabled"] == ["DefaultEvictor", "KubevirtMigrationAware"]
    assert profile["plugins"]["preEvictionFilter"]["enabled"] == ["KubevirtMigrationAware"]
    config = parse_config(document, registry=registry_for("psi-profile"))
    assert config.profiles[0].args_of(MIGRATION_AWARE_PLUGIN) == MigrationAwareArgs(
        migration_cooldown=15 * MINUTE,
        max_migration_cooldown=6 * 60 * MINUTE,
        migration_history_window=48 * 60 * MINUTE,
    )
    assert (DEFAULT_MIGRATION_COOLDOWN, DEFAULT_MAX_MIGRATION_COOLDOWN) == (900.0, 21600.0)
    assert DEFAULT_MIGRATION_HISTORY_WINDOW == 172800.0


def test_its_arguments_are_validated_with_every_problem_listed() -> None:
    document = yaml.safe_load(PSI_PROFILE)
    (profile,) = document["profiles"]
    entry = next(c for c in profile["pluginConfig"] if c["name"] == "KubevirtMigrationAware")
    entry["args"] = {
        "migrationCooldown": "2h",
        "maxMigrationCooldown": "1h",
        "migrationHistoryWindow": "-1h",
        "cooldown": "5m",
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(document, registry=registry_for("psi-profile"))
    problems = "\n".join(caught.value.problems)
    assert "maxMigrationCooldown: must be at least migrationCooldown" in problems
    assert "migrationHistoryWindow: duration '-1h' must not be negative" in problems
    assert "cooldown" in problems


def test_only_the_psi_profile_knows_the_plugin() -> None:
    document: dict[str, Any] = yaml.safe_load(PSI_PROFILE)
    with pytest.raises(ConfigError, match="KubevirtMigrationAware"):
        parse_config(document, registry=registry_for("requests-lnu"))
    parse_config(document, registry=registry_for("psi-profile-60s"))


# -------------------------------------------------------------------------- its rules


@pytest.mark.parametrize(
    ("completions", "cooldown"),
    [
        pytest.param(1, 15 * MINUTE, id="once: 15m"),
        pytest.param(2, 30 * MINUTE, id="twice: 30m"),
        pytest.param(3, 60 * MINUTE, id="three times: 1h"),
        pytest.param(5, 4 * 60 * MINUTE, id="five times: 4h"),
        pytest.param(6, 6 * 60 * MINUTE, id="six times: capped at 6h"),
        pytest.param(9, 6 * 60 * MINUTE, id="nine times: still 6h"),
    ],
)
def test_the_cooldown_doubles_with_each_completion_in_the_window_up_to_its_cap(
    completions: int, cooldown: float
) -> None:
    clock = Clock()
    aware = _aware(None, clock)
    for index in range(completions):
        clock.t = index * 10 * MINUTE
        aware.vmis = _migrated(clock.t)
        aware.filter(_pod())
    vmi = VmiState("vm-1", clock.t - 5.0, clock.t)
    assert aware.effective_cooldown(vmi) == cooldown


def test_a_migration_longer_than_the_cooldown_is_the_floor() -> None:
    clock = Clock()
    vmi = VmiState("vm-1", migration_start=0.0, migration_end=25 * MINUTE)
    aware = _aware(vmi, clock)
    clock.t = 25 * MINUTE
    assert aware.pre_eviction_filter(_pod()) is False
    assert aware.effective_cooldown(vmi) == 25 * MINUTE


def test_a_vm_waits_out_its_cooldown_and_one_mid_migration_is_refused() -> None:
    clock = Clock()
    aware = _aware(VmiState("vm-1", migration_start=100.0, migration_end=110.0), clock)
    clock.t = 110.0 + 15 * MINUTE - 1
    assert aware.filter(_pod()) is True
    assert aware.pre_eviction_filter(_pod()) is False
    clock.t = 110.0 + 15 * MINUTE
    assert aware.pre_eviction_filter(_pod()) is True
    migrating = _aware(VmiState("vm-1", migration_start=100.0), clock)
    assert migrating.filter(_pod()) is False
    assert migrating.blocks == {"migration_in_progress": 1}
    assert aware.blocks == {"cooldown": 1}


def test_a_pod_without_a_vmi_or_without_a_migration_passes() -> None:
    clock = Clock()
    for vmi in (None, VmiState("vm-1")):
        aware = _aware(vmi, clock)
        assert aware.filter(_pod())
        assert aware.pre_eviction_filter(_pod())


def test_completions_older_than_the_window_no_longer_double_the_cooldown() -> None:
    clock = Clock()
    aware = _aware(None, clock, migration_history_window=3600.0)
    for end in (0.0, 1000.0):
        clock.t = end
        aware.vmis = _migrated(end)
        aware.filter(_pod())
    assert aware.effective_cooldown(VmiState("vm-1", 995.0, 1000.0)) == 30 * MINUTE
    clock.t = 3700.0
    assert aware.effective_cooldown(VmiState("vm-1", 995.0, 1000.0)) == 15 * MINUTE


# ------------------------------------------------------------------------------ a run


def test_one_vm_is_not_migrated_again_within_its_cooldown_which_doubles() -> None:
    scenario = load_scenario_text(RESTLESS_VM)
    times = run_contender(
        scenario, worlds.contender("psi-profile", scenario), seed=1
    ).eviction_times
    assert len(times) == 3, times
    first, second = times[1] - times[0], times[2] - times[1]
    assert 15 * MINUTE <= first < 17 * MINUTE, times
    assert 30 * MINUTE <= second < 32 * MINUTE, times


def test_without_the_filter_the_same_vm_moves_again_within_minutes() -> None:
    document = yaml.safe_load(PSI_PROFILE)
    (profile,) = document["profiles"]
    del profile["plugins"]["filter"], profile["plugins"]["preEvictionFilter"]
    raw = yaml.safe_load(RESTLESS_VM)
    raw["contenders"]["psi-profile"]["descheduler"] = document
    scenario = load_scenario_text(yaml.safe_dump(raw))
    times = run_contender(
        scenario, worlds.contender("psi-profile", scenario), seed=1
    ).eviction_times
    assert len(times) > 3
    assert min(b - a for a, b in itertools.pairwise(times)) < 5 * MINUTE
