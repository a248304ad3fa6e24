"""Load-aware classification, tested against the spec's formulas exactly.

Covered: static thresholds (underutilized when every signal <= thresholds, overutilized when any
signal > targetThresholds, underutilized winning), deviation thresholds (low = clamp(avg - t),
high = clamp(avg + T)) for every named preset, the order nodes are reported in, capacity to
move, nodes without fresh values, and every "nothing to do" case in the upstream wording
(no underutilized node, numberOfNodes not exceeded, all underutilized, none overutilized). Also
the combined CPU signal and the 0..1 -> 0..100 scaling.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from descheduler.classify import ThresholdSpec, classify, hold_overutilized, thresholds_for
from descheduler.node_classes import Category
from descheduler.plugins.load_aware.args import PRESETS, DeviationPreset
from descheduler.signals import Signal, combined_cpu, metric_names, node_usages
from tas.types import MetricName, NodeName

N = NodeName


def usages(**values: float) -> dict[NodeName, dict[str, float]]:
    return {N(name.replace("_", "-")): {"cpu": v} for name, v in values.items()}


STATIC = ThresholdSpec(thresholds={"cpu": 20}, target_thresholds={"cpu": 50})


def test_static_thresholds_classify_at_and_around_the_bounds() -> None:
    c = classify(usages(a=20, b=21, c=50, d=50.5, e=0), STATIC)
    assert c.categories == {
        N("a"): Category.UNDERUTILIZED,  # <= thresholds
        N("b"): Category.APPROPRIATE,
        N("c"): Category.APPROPRIATE,  # > target only counts
        N("d"): Category.OVERUTILIZED,
        N("e"): Category.UNDERUTILIZED,
    }
    assert c.underutilized == (N("e"), N("a"))  # least used first
    assert c.overutilized == (N("d"),)
    assert c.capacity_to_move == {"cpu": (50 - 0) + (50 - 20)}
    assert c.nothing_to_do is None


def test_with_several_signals_underutilized_needs_all_and_overutilized_needs_any() -> None:
    spec = ThresholdSpec(
        thresholds={"cpu": 20, "mem": 20}, target_thresholds={"cpu": 50, "mem": 50}
    )
    c = classify(
        {
            N("low-both"): {"cpu": 10, "mem": 10},
            N("low-one"): {"cpu": 10, "mem": 30},
            N("high-one"): {"cpu": 10, "mem": 60},
        },
        spec,
    )
    assert c.categories[N("low-both")] is Category.UNDERUTILIZED
    assert c.categories[N("low-one")] is Category.APPROPRIATE
    assert c.categories[N("high-one")] is Category.OVERUTILIZED
    assert c.capacity_to_move == {"cpu": 40, "mem": 40}


def test_overutilized_nodes_are_reported_most_used_first() -> None:
    c = classify(usages(a=60, b=90, c=70, d=0), STATIC)
    assert c.overutilized == (N("b"), N("c"), N("a"))


@pytest.mark.parametrize("preset", list(DeviationPreset), ids=lambda p: p.value)
def test_deviation_presets_follow_the_formula(preset: DeviationPreset) -> None:
    low_span, high_span = PRESETS[preset]
    values = {"a": 10.0, "b": 30.0, "c": 50.0, "d": 90.0}
    spec = ThresholdSpec(
        thresholds={"cpu": low_span},
        target_thresholds={"cpu": high_span},
        use_deviation_thresholds=True,
    )
    c = classify({N(k): {"cpu": v} for k, v in values.items()}, spec)
    avg = sum(values.values()) / len(values)
    low = min(100.0, max(0.0, avg - low_span))
    high = min(100.0, max(0.0, avg + high_span))
    assert c.thresholds.average == {"cpu": avg}
    assert c.thresholds.low == {"cpu": low}
    assert c.thresholds.high == {"cpu": high}
    for node, value in values.items():
        expected = (
            Category.UNDERUTILIZED
            if value <= low
            else Category.OVERUTILIZED
            if value > high
            else Category.APPROPRIATE
        )
        assert c.categories[N(node)] is expected, node
    assert c.capacity_to_move == {"cpu": sum(high - v for v in values.values() if v <= low)}


def test_the_named_presets_have_the_openshift_values() -> None:
    assert {p.value: PRESETS[p] for p in DeviationPreset} == {
        "Low": (10, 10),
        "Medium": (20, 20),
        "High": (30, 30),
        "AsymmetricLow": (0, 10),
        "AsymmetricMedium": (0, 20),
        "AsymmetricHigh": (0, 30),
    }


def test_deviation_thresholds_are_clamped_to_0_and_100() -> None:
    spec = ThresholdSpec(
        thresholds={"cpu": 30}, target_thresholds={"cpu": 30}, use_deviation_thresholds=True
    )
    assert thresholds_for({N("a"): {"cpu": 10}, N("b"): {"cpu": 20}}, spec).low == {"cpu": 0}
    assert thresholds_for({N("a"): {"cpu": 90}, N("b"): {"cpu": 95}}, spec).high == {"cpu": 100}


@pytest.mark.parametrize(
    ("values", "number_of_nodes", "reason"),
    [
        pytest.param(
            {"a": 30, "b": 90}, 0, "No node is underutilized, nothing to do here", id="no under"
        ),
        pytest.param(
            {"a": 10, "b": 15, "c": 90},
            2,
            "Number of nodes underutilized is less or equal than NumberOfNodes, nothing to do here",
            id="numberOfNodes not exceeded",
        ),
        pytest.param(
            {"a": 10, "b": 15}, 0, "All nodes are underutilized, nothing to do here", id="all under"
        ),
        pytest.param(
            {"a": 10, "b": 40},
            0,
            "All nodes are under target utilization, nothing to do here",
            id="no over",
        ),
        pytest.param({"a": 10, "b": 15, "c": 90}, 1, None, id="numberOfNodes exceeded"),
    ],
)
def test_nothing_to_do_cases(
    values: dict[str, float], number_of_nodes: int, reason: str | None
) -> None:
    spec = ThresholdSpec(
        thresholds={"cpu": 20}, target_thresholds={"cpu": 50}, number_of_nodes=number_of_nodes
    )
    assert classify({N(k): {"cpu": v} for k, v in values.items()}, spec).nothing_to_do == reason


def test_nodes_without_a_value_for_every_signal_are_not_classified() -> None:
    spec = ThresholdSpec(
        thresholds={"cpu": 20, "mem": 20}, target_thresholds={"cpu": 50, "mem": 50}
    )
    c = classify({N("a"): {"cpu": 99}, N("b"): {"cpu": 0, "mem": 0}}, spec)
    assert c.unknown == (N("a"),)
    assert N("a") not in c.categories


# ------------------------------------------------------------------------------ signals


@pytest.mark.parametrize(
    ("utilization", "pressure", "average", "expected"),
    [
        pytest.param(0.5, 0.9, 0.79, 0.5, id="fleet below 0.8: utilization"),
        pytest.param(0.9, 0.3, 0.8, 0.3, id="fleet at 0.8: pressure on a busy node"),
        pytest.param(0.7, 0.6, 0.85, 0.0, id="pressure on a node not busy (0.7) is not load"),
        pytest.param(0.71, 0.6, 0.85, 0.6, id="just busy: pressure counts"),
        pytest.param(0.9, None, 0.9, None, id="pressure needed but missing"),
    ],
)
def test_the_combined_cpu_signal(
    utilization: float, pressure: float | None, average: float, expected: float | None
) -> None:
    assert combined_cpu(utilization, pressure, average_utilization=average) == expected


def test_node_usages_scale_ratios_to_percent_and_skip_missing_values() -> None:
    metrics = {
        MetricName("cpu_pressure"): {N("a"): 0.25, N("b"): 1.2},
        MetricName("memory_pressure"): {N("a"): 0.1},
    }
    found = node_usages(metrics, [Signal.CPU_PRESSURE, Signal.MEMORY_PRESSURE], [N("a"), N("b")])
    assert found == {
        N("a"): {"cpu_pressure": 25.0, "memory_pressure": 10.0},
        N("b"): {"cpu_pressure": 100.0},
    }


def test_the_combined_signal_switches_on_the_fleet_average() -> None:
    busy = {
        MetricName("cpu_utilization"): {N("a"): 0.95, N("b"): 0.9, N("c"): 0.6},
        MetricName("cpu_pressure"): {N("a"): 0.4, N("b"): 0.05, N("c"): 0.5},
    }
    found = node_usages(busy, [Signal.CPU_COMBINED], [N("a"), N("b"), N("c")])
    # average utilization 0.8167 >= 0.8: pressure where busy, 0 on the idle-but-throttled node
    assert found == {
        N("a"): {"cpu_combined": 40.0},
        N("b"): {"cpu_combined": 5.0},
        N("c"): {"cpu_combined": 0.0},
    }
    assert metric_names([Signal.CPU_COMBINED]) == {"cpu_utilization", "cpu_pressure"}


# ------------------------------------------------------------------------------ hysteresis

HELD_SPEC = ThresholdSpec(thresholds={"cpu": 20}, target_thresholds={"cpu": 70})
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("usage", "seconds_since_over", "held"),
    [
        pytest.param(60, 30, True, id="below high, within the hold: keeps its class"),
        pytest.param(60, 120, False, id="the hold is over: follows its usage"),
        pytest.param(20, 30, False, id="fell to the low threshold: released at once"),
        pytest.param(None, 30, False, id="no fresh usage: no class to keep"),
    ],
)
def test_an_overutilized_node_keeps_its_class_for_the_hold_time_unless_it_falls_to_low(
    usage: float | None, seconds_since_over: float, held: bool
) -> None:
    values = {"node-b": 10.0, "node-c": 50.0} | ({"node-a": usage} if usage is not None else {})
    c = replace(classify(usages(**values), HELD_SPEC), hold_seconds=120)
    now = T0 + timedelta(seconds=seconds_since_over)
    settled, memory = hold_overutilized(c, {NodeName("node-a"): T0}, now)
    assert ("node-a" in settled.overutilized) is held
    assert ("node-a" in settled.held) is held
    assert (memory.get(NodeName("node-a")) == T0) is held


def test_a_node_over_its_high_threshold_is_remembered_now_and_without_a_hold_nothing_is_kept() -> (
    None
):
    c = classify(usages(**{"node-a": 90.0, "node-b": 60.0}), HELD_SPEC)
    settled, memory = hold_overutilized(c, {NodeName("node-b"): T0}, T0 + timedelta(seconds=5))
    assert settled.overutilized == ("node-a",)  # hold_seconds 0: no hysteresis
    assert memory == {"node-a": T0 + timedelta(seconds=5)}
