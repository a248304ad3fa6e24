"""LoadAware learns the cluster it runs in (issue 55): each node's pressure curve, the metric
lag and the pods' start-up, through real cycles.

Covered:
- a node whose history shows a bursty curve (PSI rising with utilization from the start) is
  predicted on that curve: a move the shared model says pays is not made, because the node's
  own curve says it relieves less; with `learnPressureCurve: false` the same move is made;
- until a node has enough samples, the shared model predicts, and the report says so;
- the cycle's report and self-metrics carry each node's curve, its samples and fallback, and
  the observed metric lag, start-up and the payback horizon that follows them;
- a node that leaves is forgotten.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from descheduler.cycle import CycleReport, Descheduler
from descheduler.framework import Result
from tas.metrics.static import StaticMetricView
from tas.types import MetricName, NodeName
from tests.descheduler.builders import (
    START,
    FakeClock,
    cluster_with,
    load_aware,
    make_descheduler,
    make_node,
    make_pod,
    policy_config,
    started_in,
)

NODES = ("node-a", "node-b", "node-c")
CYCLE = 30
#: Longer than the payback horizon (300 s).
PAST_THE_CREST = 400


class TimedView(StaticMetricView):
    """A static view whose values were each sampled `lag` seconds before the clock's now, as
    `RefreshingMetricView.sample_times` says."""

    def __init__(self, clock: FakeClock, lag: float) -> None:
        super().__init__()
        self.clock, self.lag = clock, lag

    def sample_times(self) -> Mapping[MetricName, Mapping[NodeName, float]]:
        at = self.clock.now().timestamp() - self.lag
        return {name: dict.fromkeys(column, at) for name, column in self.columns().items()}


def bursty_history(
    *,
    history: int = 10,
    lag: float | None = None,
    started: float | None = None,
    registry: CollectorRegistry | None = None,
    **args: Any,
) -> tuple[Descheduler, TimedView, FakeClock, CycleReport]:
    """Eight hour-old 1-core pods on node-a of three; `history` cycles in which every node
    reads the same utilization, rising from 40%, with PSI equal to it (a node as bursty as
    one server: it stalls as often as it is busy), so none is overutilized; then a cycle where
    node-a reads 95% (PSI 0.95) and the others 10% (PSI 0), past the payback horizon (the
    others' crests in the history do not count against them). Each move costs 2.5 cores (a
    750 s restart over the 300 s payback horizon). Returns the last cycle's report."""
    apply = started_in(started) if started is not None else None
    pods = tuple(
        make_pod(f"web-{i}", owner="web", cpu=1.0, created=START - timedelta(hours=1), apply=apply)
        for i in range(8)
    )
    cluster = cluster_with(*(make_node(n) for n in NODES), pods=pods)
    clock = FakeClock(START - timedelta(seconds=CYCLE * history))
    view = TimedView(clock, lag if lag is not None else 0.0)
    config = policy_config(
        "LoadAware",
        args=load_aware(confirmCycles=1, restartSeconds=750, learnRestartSeconds=False, **args),
        evictionCooldownSeconds=300,
    )
    descheduler = make_descheduler(cluster, config, metrics=view, clock=clock, registry=registry)
    for cycle in range(history):
        u = 0.4 + 0.05 * cycle
        read(view, dict.fromkeys(NODES, (u, u)))
        assert descheduler.run_cycle().decisions == []
        clock.advance(CYCLE)
    clock.advance(PAST_THE_CREST)
    read(view, {"node-a": (0.95, 0.95), "node-b": (0.1, 0.0), "node-c": (0.1, 0.0)})
    return descheduler, view, clock, descheduler.run_cycle()


def read(view: StaticMetricView, readings: Mapping[str, tuple[float, float]]) -> None:
    view.set_column(MetricName("cpu_utilization"), {n: r[0] for n, r in readings.items()})
    view.set_column(MetricName("cpu_pressure"), {n: r[1] for n, r in readings.items()})


def test_a_move_the_shared_model_says_pays_is_not_made_where_the_node_s_curve_says_less() -> None:
    # Shared model: moving 1 core off node-a relieves 3.4 stalled cores against a cost of 2.5.
    # node-a's own curve (1 effective server) relieves 1.8, less a burden of 0.3: it does not.
    *_, learned = bursty_history()
    *_, shared = bursty_history(learnPressureCurve=False)
    assert learned.calibration is not None
    curve = learned.calibration.curves[NodeName("node-a")]
    assert (curve.servers, curve.fallback) == (1, False)
    assert learned.by_result(Result.EVICTED) == []
    unpaid = [b.why for b in learned.blocked if b.name == "web-0"]
    assert unpaid
    assert "relief 1.775 - burden 0.325 stalled cores vs cost 2.500" in unpaid[0]
    moved = shared.by_result(Result.EVICTED)
    assert moved
    assert "relief 3.386 - burden 0.001 stalled cores vs cost 2.500" in moved[0].reason


def test_with_too_few_samples_the_shared_model_predicts_and_the_report_says_so() -> None:
    *_, report = bursty_history(history=3)
    assert report.calibration is not None
    curve = report.calibration.curves[NodeName("node-a")]
    assert curve.fallback
    assert curve.samples == 4
    assert curve.servers == 8
    assert report.by_result(Result.EVICTED)  # the shared model's prediction: it pays


def test_the_curves_and_delays_are_exported_as_self_metrics() -> None:
    registry = CollectorRegistry()
    bursty_history(lag=45.0, started=400.0, registry=registry)
    names = _samples(registry)
    assert names[("tas_descheduler_pressure_curve_servers", "node-a")] == 1
    assert names[("tas_descheduler_pressure_curve_fallback", "node-a")] == 0
    assert names[("tas_descheduler_pressure_curve_samples", "node-a")] == 11
    assert names[("tas_descheduler_observed_metric_lag_seconds", "")] == 45
    assert names[("tas_descheduler_observed_startup_seconds", "")] == 400
    # 45 s of lag and 400 s of start-up: a move is not measured within the shipped 300 s.
    assert names[("tas_descheduler_payback_seconds", "")] == 445


def test_a_node_that_leaves_is_forgotten() -> None:
    registry = CollectorRegistry()
    descheduler, _, clock, before = bursty_history(registry=registry)
    assert before.calibration is not None
    assert NodeName("node-c") in before.calibration.curves
    assert ("tas_descheduler_pressure_curve_servers", "node-c") in _samples(registry)
    descheduler.cluster.remove_node(NodeName("node-c"))  # type: ignore[attr-defined]
    clock.advance(CYCLE)
    report = descheduler.run_cycle()
    assert report.calibration is not None
    assert NodeName("node-c") not in report.calibration.curves
    assert ("tas_descheduler_pressure_curve_servers", "node-c") not in _samples(registry)


def _samples(registry: CollectorRegistry) -> dict[tuple[str, str], float]:
    found: dict[tuple[str, str], float] = {}
    for family in registry.collect():
        for sample in family.samples:
            found[(sample.name, sample.labels.get("node", ""))] = sample.value
    return found
