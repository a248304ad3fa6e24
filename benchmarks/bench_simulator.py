"""The simulator's speed: one hour of scale-500 (500 nodes, 10,000 pods) for one contender.

Figures:
- `ours`: the whole closed loop (extender decisions, policy controller, descheduler with
  TASViolations, LoadAware and the soft tainter) for one virtual hour; goal <= 30 s;
- next to a floor measured in the same run: the `requests` contender on the same scenario
  (the model, the pipeline and the kube-scheduler model alone, no component deciding);
- every named scenario on several seeds and a sweep: `bench_comparison`.
"""

from __future__ import annotations

import logging
import time

from benchmarks.report import Figure, print_figure
from tas_simulator.contenders import Contender, resolve
from tas_simulator.runner import run_contender
from tas_simulator.scenario import load_scenario


def _seconds(name: str) -> float:
    contender = resolve(name)
    assert isinstance(contender, Contender), contender
    scenario = load_scenario("scale-500")
    started = time.perf_counter()
    run_contender(scenario, contender, seed=scenario.seed)
    return time.perf_counter() - started


def main() -> None:
    logging.disable(logging.CRITICAL)
    try:
        floor = _seconds("requests")
        ours = _seconds("ours")
    finally:
        logging.disable(logging.NOTSET)
    print_figure(
        Figure(
            "scale-500, one virtual hour, ours",
            ours,
            "s",
            floor=floor,
            floor_name="requests: model + kube-scheduler model only",
            max_value=30.0,
        )
    )


if __name__ == "__main__":
    main()
