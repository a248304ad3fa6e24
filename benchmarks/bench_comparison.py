"""The evidence's cost: `tas simulate --all --seeds 3`, `tas sweep --count 20`, and how the
process pool scales.

Figures:
- every named scenario, every contender, 3 seeds, on a process pool over every core, with its
  tables (what the README's comparison is made from, at 5 seeds, by `make compare`), the
  reference rows (limit, clairvoyant) and each contender's share of the achievable gain among
  them;
- a sweep of 20 drawn scenarios x 3 seeds x every contender on the same pool;
- the pool's scaling: the same batch of runs on one process, then on every core. Efficiency is
  (one-process time / pool time) / cores, the speed-up each added core brings; goal >= 0.8
  per core. Both halves run in this same process, one after the other, so a noisy machine
  weighs on both.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

from benchmarks.report import Figure, print_figure
from tas_simulator.contenders import CONTENDERS
from tas_simulator.family import load_family
from tas_simulator.goals import report, sweep_goals
from tas_simulator.jobs import default_workers, run_jobs
from tas_simulator.report import table as scenario_table
from tas_simulator.scenario import load_scenario, named_scenarios
from tas_simulator.seeds import run_seeded
from tas_simulator.sweep import SweepPlan, draw_scenarios, plan_jobs, run_sweep
from tas_simulator.sweep import table as sweep_table


def _noop(done: int, total: int) -> None:
    return None


def main() -> None:
    workers = default_workers()
    logging.disable(logging.CRITICAL)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        try:
            started = time.perf_counter()
            results = run_seeded(
                [load_scenario(name) for name in named_scenarios()],
                contenders=list(CONTENDERS),
                seeds=3,
                base_seed=None,
                workers=workers,
                dask_address=None,
                log_path=out / "simulate.log",
                progress=_noop,
            )
            simulate_all = time.perf_counter() - started
            family = load_family("default")
            started = time.perf_counter()
            verdict = run_sweep(
                SweepPlan(family, 20, 3, tuple(CONTENDERS)), out / "sweep", workers=workers
            )
            sweep = time.perf_counter() - started
            jobs = plan_jobs(draw_scenarios(family, 6, out / "scaling"), list(CONTENDERS), 1)
            started = time.perf_counter()
            run_jobs(jobs, workers=1)
            alone = time.perf_counter() - started
            started = time.perf_counter()
            run_jobs(jobs, workers=workers)
            pooled = time.perf_counter() - started
        finally:
            logging.disable(logging.NOTSET)
    for result in results:
        print("\n" + scenario_table(result))
    print("\n" + sweep_table(verdict) + "\n")
    print(report("ours against its goals on this sweep", sweep_goals(verdict)) + "\n")
    print_figure(
        Figure(
            f"tas simulate --all --seeds 3 ({workers} workers)", simulate_all, "s", max_value=600.0
        )
    )
    print_figure(Figure(f"tas sweep --count 20 --seeds 3 ({workers} workers)", sweep, "s"))
    print_figure(
        Figure(
            f"{len(jobs)} runs on {workers} workers",
            pooled,
            "s",
            floor=alone,
            floor_name="the same runs on one process",
        )
    )
    efficiency = alone / pooled / workers if pooled > 0 else 0.0
    print_figure(Figure("process pool: speed-up per core", efficiency, "x", min_value=0.8))


if __name__ == "__main__":
    main()
