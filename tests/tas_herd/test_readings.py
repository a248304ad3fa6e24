"""Herd control as the extender reads it, bound in one place (`tas_herd.readings`).

Covered: `herd_readings` answers what the tracker answers, its estimates made on the view's
sample times at the clock's now, the view's samples teaching the curves first; and nothing else
in the product builds the readings or binds an estimator, so a new reading is one field and its
use (what the service does with the readings is in tests/extender and test_placements.py).
"""

from __future__ import annotations

from tas.calibration.curve import CurveLearner
from tas.types import MetricColumns, MetricName, NodeName
from tas_herd.placements import PlacementTracker, SampleTimes
from tas_herd.readings import herd_readings
from tests.product_code import construction_sites
from tests.tas_herd.builders import T0, WINDOW, bound_at, make_pod

CPU_UTILIZATION = MetricName("cpu_utilization")
NODE = NodeName("node-a")


class _View:
    """A metric view as the estimates read it: one sample of node-a's utilization."""

    def __init__(self, sample_at: float, value: float) -> None:
        self.times: SampleTimes = {CPU_UTILIZATION: {NODE: T0 + sample_at}}
        self.values: MetricColumns = {CPU_UTILIZATION: {NODE: value}}
        self.asked = 0

    def sample_times(self) -> SampleTimes:
        return self.times

    def columns(self) -> MetricColumns:
        self.asked += 1
        return self.values


def _tracker() -> PlacementTracker:
    tracker = PlacementTracker(
        window=WINDOW,
        resources={CPU_UTILIZATION: "cpu"},
        default_capacity={"cpu": 8.0},
        curves=CurveLearner(),
    )
    tracker.observe(make_pod("web-1", apply=bound_at(100)), now=T0 + 105)
    return tracker


def test_the_readings_answer_what_the_tracker_answers_on_the_views_samples() -> None:
    tracker, view = _tracker(), _View(sample_at=90, value=0.3)
    readings = herd_readings(tracker, view, now=lambda: T0 + 120)
    estimates = readings.estimates()
    assert view.asked == 1  # each request's samples teach the curves first
    assert estimates == tracker.estimates(sample_times=view.times, now=T0 + 120)
    assert estimates[CPU_UTILIZATION][NODE] > 0  # the pod bound after the sample is added
    assert (readings.cores, readings.servers, readings.calibration, readings.newcomers) == (
        tracker.cores,
        tracker.servers,
        tracker.calibration,
        tracker.only_placed,
    )


def test_a_sample_after_the_binding_covers_the_placement() -> None:
    readings = herd_readings(_tracker(), _View(sample_at=170, value=0.3), now=lambda: T0 + 175)
    assert readings.estimates().get(CPU_UTILIZATION, {}).get(NODE, 0.0) == 0.0


def test_only_herd_readings_binds_the_extenders_view_of_herd_control() -> None:
    # The extender's benchmark measures the service on estimates of its own, as a test would.
    for name in ("HerdReadings", "estimator"):
        files = {site.split(":")[0] for site in construction_sites(name)}
        assert files - {"benchmarks/bench_extender.py"} == {"tas_herd/readings.py"}, name
