"""Upstream's own plugin test tables, replayed through `tas descheduler` against the API
emulator: the same nodes, pods and arguments must give the same evictions.

The rows are kubernetes-sigs/descheduler's (`pkg/framework/plugins/*/*_test.go`), written
down as data in the `cases_*` modules, one per plugin; `harness` runs each through the real
command line (`tas_cli.main.main`, Automatic mode, run once) and reads the evictions from the
emulator's request log. A row that differs on purpose says why and configures the difference.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.descheduler.upstream import (
    cases_default_evictor,
    cases_high_node_utilization,
    cases_inter_pod_anti_affinity,
    cases_low_node_utilization,
    cases_node_affinity,
    cases_node_taints,
    cases_pod_life_time,
    cases_remove_duplicates,
    cases_remove_failed_pods,
    cases_too_many_restarts,
    cases_topology_spread,
)
from tests.descheduler.upstream.harness import Case, matches, replay

TABLES: dict[str, list[Case]] = {
    "DefaultEvictor": cases_default_evictor.CASES,
    "HighNodeUtilization": cases_high_node_utilization.CASES,
    "LowNodeUtilization": cases_low_node_utilization.CASES,
    "PodLifeTime": cases_pod_life_time.CASES,
    "RemovePodsViolatingInterPodAntiAffinity": cases_inter_pod_anti_affinity.CASES,
    "RemovePodsViolatingNodeAffinity": cases_node_affinity.CASES,
    "RemovePodsViolatingNodeTaints": cases_node_taints.CASES,
    "RemoveDuplicates": cases_remove_duplicates.CASES,
    "RemoveFailedPods": cases_remove_failed_pods.CASES,
    "RemovePodsHavingTooManyRestarts": cases_too_many_restarts.CASES,
    "RemovePodsViolatingTopologySpreadConstraint": cases_topology_spread.CASES,
}

CASES = [
    pytest.param(case, id=f"{table}: {case.name}")
    for table, cases in TABLES.items()
    for case in cases
]


@pytest.mark.parametrize("case", CASES)
def test_the_descheduler_evicts_what_upstream_evicts_on_its_own_test_rows(
    case: Case, tmp_path: Path
) -> None:
    outcome = replay(case, tmp_path)
    assert matches(case, outcome), outcome.explain(case)
