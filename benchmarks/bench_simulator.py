"""The simulator's speed: one hour of scale-500 (500 nodes, 10,000 pods) for one contender.

Figures:
- `ours`: the whole closed loop (extender decisions, policy controller, descheduler with
  TASViolations, LoadAware and the soft tainter) for one virtual hour; goal <= 30 s;
- next to a floor measured in the same run: the `requests` contender on the same scenario
  (the model, the pipeline and the kube-scheduler model alone, no component deciding);
- every named scenario for every contender (what `tas simulate --all` runs), with its tables;
  goal <= 300 s.
"""

from __future__ import annotations

import logging
import time

from benchmarks.report import Figure, print_figure
from simulator.contenders import Contender, resolve
from simulator.report import table
from simulator.runner import run_contender, run_scenario
from simulator.scenario import load_scenario, named_scenarios


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
        started = time.perf_counter()
        tables = [table(run_scenario(load_scenario(name))) for name in named_scenarios()]
        every = time.perf_counter() - started
    finally:
        logging.disable(logging.NOTSET)
    for text in tables:
        print("\n" + text)
    print()
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
    print_figure(Figure("every named scenario, every contender", every, "s", max_value=300.0))


if __name__ == "__main__":
    main()
