"""The fluid limit as the simulator's tests hold every row to it: no row loses less work than
the limit, nor less stall and work lost together (`assert_none_below_the_limit`); one row of a
scenario against the limit's run, shared by the scenario's rows
(`assert_row_not_below_the_limit`)."""

from __future__ import annotations

import pytest

from tas_simulator.contenders import CONTENDERS
from tas_simulator.figures import Figures
from tas_simulator.jobs import LIMIT, REFERENCES, JobResult, run_job
from tas_simulator.scenario import Scenario
from tas_simulator.sweep import plan_jobs

SLACK = 1e-6


def assert_none_below_the_limit(results: list[JobResult]) -> None:
    """Work lost: never below the limit's. Stall: a placement can stall less only by losing
    more work (an overloaded node stalls no more than a full one), so the bound is on the
    two together: per core of demand moved off an overloaded node or out of pending, no node's
    pressure rises by more than 1 (tested below), so stall + work lost (node-seconds +
    core-seconds) never drops below the limit's."""
    limits = {(r.scenario, r.seed): r.figures for r in results if r.contender == LIMIT}
    assert limits
    checked = 0
    for result in results:
        if result.figures is None or result.contender == LIMIT:
            continue
        limit = limits[(result.scenario, result.seed)]
        assert limit is not None
        where = f"{result.contender} on {result.scenario} seed {result.seed}"
        lost = result.figures["work_lost"]["core_seconds"]
        least = limit["work_lost"]["core_seconds"]
        assert lost >= least - SLACK, where
        assert result.figures["stall"] + lost >= limit["stall"] + least - SLACK, where
        checked += 1
    assert checked


def cut(scenario: Scenario, seconds: float) -> Scenario:
    return scenario.with_duration(min(scenario.duration, seconds))


#: The rows held against the limit: every contender and the other references.
ROWS = [*CONTENDERS, *(row for row in REFERENCES if row != LIMIT)]
#: The limit's run of each scenario (name, duration) on each seed, once per test process.
_LIMITS: dict[tuple[str, float, int], JobResult] = {}


def assert_row_not_below_the_limit(scenario: Scenario, row: str) -> Figures:
    """`row` on `scenario` (on its first seed, as a one-seed sweep runs it) loses no less than
    the limit; the row's figures, for a test to check more of the same run. One test per row,
    so a scenario's rows spread over every core (make test); the limit's run is shared by a
    scenario's rows."""
    jobs = {job.contender: job for job in plan_jobs([scenario], list(CONTENDERS), 1)}
    job = jobs[row]
    key = (scenario.name, scenario.duration, job.seed)
    if key not in _LIMITS:
        _LIMITS[key] = run_job(jobs[LIMIT])
    result = run_job(job)
    if result.figures is None:
        pytest.skip(f"{row} cannot run {scenario.name}: {result.unavailable}")
    assert_none_below_the_limit([_LIMITS[key], result])
    return result.figures
