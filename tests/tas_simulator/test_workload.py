"""The workload model (tas_inmemory.workload) is what the spec says it is.

Covered:
- Erlang C pressure: the spec's reference points for 8 cores, 0 when idle, 1 at saturation,
  rising with load; the vectorized table agrees with the exact formula;
- usage profiles: bursty keeps its mean over time and stays between base and peak, ramp and
  trace interpolate, every pod's stream is reproducible from its seed;
- memory pressure from 85% to 100%, and the OOM killer's choice (largest first);
- work lost is demand above the cores.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas_inmemory.workload import (
    ProfileKind,
    UsageBank,
    UsageProfile,
    cpu_pressure,
    cpu_pressures,
    erlang_c,
    memory_pressure,
    oom_victims,
    slot_seed,
    trace_value,
    work_lost,
)


@pytest.mark.parametrize(
    ("utilization", "expected"),
    [
        pytest.param(0.5, 0.06, id="50% of 8 cores: about 0.06"),
        pytest.param(0.8, 0.46, id="80%: about 0.46"),
        pytest.param(0.95, 0.84, id="95%: about 0.84"),
    ],
)
def test_cpu_pressure_matches_the_spec_for_eight_cores(utilization: float, expected: float) -> None:
    assert cpu_pressure(8 * utilization, 8) == pytest.approx(expected, abs=0.006)


def test_pressure_is_zero_when_idle_and_one_at_saturation() -> None:
    assert cpu_pressure(0.0, 8) == 0.0
    assert cpu_pressure(8.0, 8) == 1.0
    assert cpu_pressure(12.0, 8) == 1.0


@settings(max_examples=60, deadline=None)
@given(
    cores=st.integers(min_value=1, max_value=128),
    shares=st.lists(st.floats(min_value=0, max_value=1.2), min_size=2, max_size=2),
)
def test_pressure_rises_with_load_and_the_table_agrees_with_the_formula(
    cores: int, shares: list[float]
) -> None:
    low, high = sorted(shares)
    assert cpu_pressure(low * cores, cores) <= cpu_pressure(high * cores, cores) + 1e-9
    exact = erlang_c(cores, low * cores)
    assert cpu_pressures(np.array([low * cores]), np.array([float(cores)]))[0] == pytest.approx(
        exact, abs=2e-3
    )


def test_a_bursty_profile_keeps_its_mean_and_stays_within_base_and_peak() -> None:
    profile = UsageProfile(ProfileKind.BURSTY, mean=1.0, peak=3.0, period=60.0, jitter=0.5)
    bank = UsageBank()
    for i in range(400):
        bank.add(profile, seed=slot_seed(1, i))
    samples = np.array([bank.values(float(t)) for t in range(0, 3600, 5)])
    assert samples.mean() == pytest.approx(1.0, rel=0.03)
    assert samples.min() >= 0.5 - 1e-9
    assert samples.max() <= 3.0 + 1e-9


def usage_at(profile: UsageProfile, t: float, *, seed: int = 0) -> float:
    """One profile's value at `t`, as the bank computes it for one pod."""
    bank = UsageBank()
    bank.add(profile, seed=seed)
    return float(bank.values(t)[0])


def test_a_pods_usage_stream_is_reproducible_from_its_seed() -> None:
    profile = UsageProfile(ProfileKind.BURSTY, mean=1.0, peak=2.0, period=30.0, jitter=1.0)
    first = [usage_at(profile, t, seed=42) for t in range(0, 300, 7)]
    again = [usage_at(profile, t, seed=42) for t in range(0, 300, 7)]
    other = [usage_at(profile, t, seed=43) for t in range(0, 300, 7)]
    assert first == again
    assert first != other


def test_ramp_and_trace_interpolate() -> None:
    ramp = UsageProfile(ProfileKind.RAMP, start=0.0, end=2.0, ramp_from=100.0, ramp_to=200.0)
    assert usage_at(ramp, 0.0) == 0.0
    assert usage_at(ramp, 150.0) == pytest.approx(1.0)
    assert usage_at(ramp, 500.0) == 2.0
    points = ((0.0, 1.0), (10.0, 3.0))
    assert trace_value(points, 5.0) == pytest.approx(2.0)
    assert trace_value(points, 15.0, loop=True) == pytest.approx(2.0)


def test_the_expected_value_is_a_bursts_time_average_and_otherwise_the_value_at_t() -> None:
    bursty = UsageProfile(ProfileKind.BURSTY, mean=1.0, peak=3.0, period=60.0, jitter=0.5)
    ramp = UsageProfile(ProfileKind.RAMP, start=0.0, end=2.0, ramp_from=100.0, ramp_to=200.0)
    trace = UsageProfile(ProfileKind.TRACE, points=((0.0, 1.0), (10.0, 3.0)))
    bank = UsageBank()
    for profile in (bursty, ramp, trace, UsageProfile(ProfileKind.STEADY, value=0.7)):
        bank.add(profile, seed=7)
    for t in (0.0, 5.0, 150.0, 3599.0):
        expected = bank.expected(t)
        assert expected[0] == pytest.approx(1.0)  # wherever the burst is
        assert list(expected[1:]) == pytest.approx(list(bank.values(t)[1:]))
    # The instant value of the bursty pod is its base or its peak, never the average.
    assert {round(float(bank.values(float(t))[0]), 6) for t in range(0, 600, 5)} == {0.5, 3.0}


def test_memory_pressure_rises_from_85_to_100_percent_and_the_largest_pod_is_killed() -> None:
    assert memory_pressure(80, 100) == 0.0
    assert memory_pressure(92.5, 100) == pytest.approx(0.5)
    assert memory_pressure(120, 100) == 1.0
    assert oom_victims([("small", 10.0), ("big", 70.0), ("mid", 30.0)], 100.0) == ["big"]
    assert oom_victims([("a", 10.0)], 100.0) == []


def test_work_lost_is_the_demand_above_the_cores() -> None:
    assert work_lost(10.0, 8.0) == 2.0
    assert work_lost(6.0, 8.0) == 0.0
