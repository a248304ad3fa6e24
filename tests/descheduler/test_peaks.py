"""A node's recent peak of a metric (`descheduler.plugins.load_aware.peaks`): what LoadAware
judges a destination at, so the window must be exact and the memory must forget."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from descheduler.plugins.load_aware import LoadAware
from descheduler.plugins.load_aware.peaks import RecentPeaks
from tas.types import MetricName
from tests.descheduler.builders import (
    START,
    cluster_with,
    make_descheduler,
    make_node,
    policy_config,
)

CPU = MetricName("cpu_utilization")
HOUR = 3600.0


def readings(peaks: RecentPeaks, values: list[dict[str, float]], *, every: float = 60) -> None:
    """One reading per cycle, `every` seconds apart, the last at START."""
    for index, column in enumerate(values):
        at = START - timedelta(seconds=every * (len(values) - 1 - index))
        peaks.record(at, {CPU: column})


@pytest.mark.parametrize(
    ("within", "expected"),
    [
        pytest.param(0, 0.2, id="this cycle only"),
        pytest.param(60, 0.5, id="the cycle before"),
        pytest.param(180, 0.9, id="three cycles back"),
        pytest.param(3600, 0.9, id="everything read"),
    ],
)
def test_the_peak_is_the_highest_reading_within_the_window(within: float, expected: float) -> None:
    peaks = RecentPeaks({CPU}, keep_seconds=HOUR)
    readings(peaks, [{"n": 0.9}, {"n": 0.3}, {"n": 0.5}, {"n": 0.2}])
    assert peaks.peak(CPU, within=within, now=START) == {"n": expected}


def test_a_node_without_a_reading_in_the_window_has_no_peak() -> None:
    peaks = RecentPeaks({CPU}, keep_seconds=HOUR)
    readings(peaks, [{"a": 0.4, "b": 0.7}, {"a": 0.1}])
    assert peaks.peak(CPU, within=30, now=START) == {"a": 0.1}
    assert peaks.peak(CPU, within=60, now=START) == {"a": 0.4, "b": 0.7}


def test_readings_older_than_kept_are_forgotten_and_so_are_nodes_gone() -> None:
    peaks = RecentPeaks({CPU}, keep_seconds=120)
    readings(peaks, [{"a": 0.9, "gone": 1.0}, {"a": 0.2}, {"a": 0.3}, {"a": 0.1}])
    assert peaks.peak(CPU, within=3600, now=START) == {"a": 0.3}


def test_metrics_not_followed_are_not_kept() -> None:
    peaks = RecentPeaks({CPU}, keep_seconds=HOUR)
    peaks.record(START, {MetricName("memory_utilization"): {"a": 0.9}})
    assert peaks.peak(MetricName("memory_utilization"), within=60, now=START) == {}


@pytest.mark.parametrize(
    ("payback", "kept"),
    [
        pytest.param(None, 300.0, id="LoadAware's default payback horizon"),
        pytest.param(900, 900.0, id="a longer payback horizon keeps longer"),
    ],
)
def test_loadaware_keeps_readings_for_its_payback_horizon_only(
    payback: int | None, kept: float
) -> None:
    # Kept for an hour, readings falling at every 30 s cycle held 121 per node and metric
    # where the 300 s LoadAware asks about needs 11.
    args: dict[str, Any] = {"deviationThresholds": "AsymmetricLow", "resources": ["cpu_combined"]}
    if payback is not None:
        args["paybackSeconds"] = payback
    config = policy_config("LoadAware", args={"LoadAware": args})
    descheduler = make_descheduler(cluster_with(make_node("node-a")), config)
    (plugin,) = [p for p in descheduler.plugins.values() if isinstance(p, LoadAware)]
    assert plugin.peaks.keep_seconds == kept


def test_without_loadaware_no_peak_is_kept() -> None:
    config = policy_config("RemovePodsViolatingNodeTaints")
    descheduler = make_descheduler(cluster_with(make_node("node-a")), config)
    assert not [p for p in descheduler.plugins.values() if isinstance(p, LoadAware)]
