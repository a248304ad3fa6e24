"""The figures every contender's run reports (`tas_simulator.figures`), as the tests that run
every contender on a named scenario check them."""

from __future__ import annotations

REPORTED_FIGURES = frozenset(
    {
        "violating_placements",
        "unavoidable_placements",
        "evacuation_seconds",
        "evictions",
        "pressure_spread",
        "hottest_pressure",
        "work_lost",
        "stall",
        "pending_seconds",
        "kubelet_evictions",
    }
)
