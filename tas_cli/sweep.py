"""`tas sweep`: draw scenarios from a family and run every contender on each, on several seeds.

Writes DIR/sweep.json (the verdict per contender), DIR/runs.json (every run's figures),
DIR/scenarios/*.yaml (each drawn scenario, replayable with `tas simulate FILE`), DIR/journal.jsonl
(each run as it finishes: run again, an interrupted sweep resumes, unless `--fresh`; `--carry-over
EARLIER` also takes an earlier sweep's runs for the rows this code reproduces,
`tas_simulator.carry_over`) and DIR/sweep.log (the components' own messages), and prints the
verdict as a table and ours' goals, each MET, MISSED or UNDECIDED with its interval
(`tas_simulator.goals`). A bad family file lists every problem with its path and exits 1. The
reference rows (`limit`, `hindsight`, `clairvoyant`) run on every scenario and seed too, and every
contender's share of the achievable gain is given (`tas_simulator.sweep`). `--family-seed N` draws
the family's scenarios from seed N, not the family's own: a fresh draw, on which no default was
tuned.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from tas_cli.common import print_problems
from tas_cli.simulation_options import add_contenders_option, add_spreading_options

#: `tas sweep --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Draw N scenarios from a family file (distributions over nodes, workloads, "
    "pipelines and faults), run every contender on each over several seeds, in parallel, "
    "and report how often each is clearly best and how it compares with requests."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--family",
        default="default",
        metavar="FILE|NAME",
        help="a family file or a named family (default: default)",
    )
    parser.add_argument(
        "--count", type=int, default=20, metavar="N", help="scenarios to draw (default: 20)"
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=5,
        metavar="K",
        help="seeds per scenario: every contender meets the same K worlds, compared paired "
        "(default: 5)",
    )
    parser.add_argument(
        "--family-seed",
        type=int,
        default=None,
        metavar="N",
        help="draw the family's scenarios from seed N instead of the family's own: a fresh draw "
        "nobody tuned for (sweep.json records it; default: the family's own)",
    )
    add_contenders_option(parser)
    add_spreading_options(parser)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("sweep"),
        metavar="DIR",
        help="where sweep.json, runs.json, the drawn scenarios and the journal go (default: sweep)",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="run every run again, even those DIR's journal holds from an interrupted sweep "
        "of the same code",
    )
    parser.add_argument(
        "--carry-over",
        type=Path,
        default=None,
        metavar="EARLIER",
        help="take the runs of the earlier sweep in folder EARLIER for every row this code "
        "reproduces on one seed of each scenario, run the rest (sweep.json says what was "
        "carried; docs/reference.md, 'Carrying runs over')",
    )


def run(args: argparse.Namespace) -> int:
    from tas_simulator.carry_over import CarryOverError
    from tas_simulator.contenders import choose_contenders
    from tas_simulator.family import FamilyError, load_family, named_families
    from tas_simulator.goals import OURS, report, sweep_goals
    from tas_simulator.jobs import REFERENCES, DaskUnavailableError, configure_run_logging
    from tas_simulator.sweep import BASELINE, JOURNAL, SweepPlan, run_sweep, table

    if args.count < 1 or args.seeds < 1:
        print("tas sweep: --count and --seeds must be at least 1", file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 1:
        print("tas sweep: --workers must be at least 1", file=sys.stderr)
        return 2
    try:
        contenders = choose_contenders(args.contenders)
    except ValueError as error:
        print(f"tas sweep: {error}", file=sys.stderr)
        return 2
    if BASELINE not in contenders:
        # Every ratio is against plain kube-scheduler: without it there is nothing to divide by.
        contenders.insert(0, BASELINE)
    try:
        family = load_family(args.family)
    except FamilyError as error:
        print_problems("tas sweep: the family cannot be used:", error.problems)
        print(f"named families: {', '.join(named_families())}", file=sys.stderr)
        return 1
    if args.family_seed is not None:
        family = dataclasses.replace(family, seed=args.family_seed)
    plan = SweepPlan(family, args.count, args.seeds, tuple(contenders))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sweep.log").write_text("", encoding="utf-8")
    configure_run_logging(str(args.out / "sweep.log"))
    # The reference rows are runs too (the limit a cheap one).
    total = args.count * args.seeds * (len(contenders) + len(REFERENCES))
    started = time.perf_counter()

    def progress(done: int, of: int) -> None:
        said = f"{done}/{of} runs ({time.perf_counter() - started:.0f} s)"
        if sys.stderr.isatty():
            sys.stderr.write(f"\r{said}" + ("\n" if done == of else ""))
        elif done == of or done % max(1, of // 20) == 0:
            # A log (make compare's, hours long): a line every twentieth of the runs.
            sys.stderr.write(said + "\n")
        sys.stderr.flush()

    print(
        f"{family.name} (family seed {family.seed}): {args.count} scenarios x {args.seeds} "
        f"seeds x ({len(contenders)} contenders + {len(REFERENCES)} references) = {total} runs",
        file=sys.stderr,
    )
    if (args.out / JOURNAL).exists() and not args.fresh:
        print(
            f"resuming: the runs {args.out / JOURNAL} holds for this code and these scenarios "
            "are reused (--fresh runs them again)",
            file=sys.stderr,
        )
    if args.carry_over is not None:
        print(
            f"carrying over from {args.carry_over}: every row runs first on one seed of each "
            "scenario there, and is carried where it gives the same figures",
            file=sys.stderr,
        )
    for name, settings in family.contenders.items():
        if name in contenders and (said := settings.runs_with(name, set_by="the family")):
            print(said, file=sys.stderr)
    try:
        verdict = run_sweep(
            plan,
            args.out,
            workers=args.workers,
            dask_address=args.dask or None,
            progress=progress,
            fresh=args.fresh,
            carry_over_from=args.carry_over,
        )
    except (DaskUnavailableError, CarryOverError) as error:
        print(f"tas sweep: {error}", file=sys.stderr)
        return 2
    if carried := verdict.get("carried_over"):
        rows = ", ".join(f"{row} {runs}" for row, runs in carried["runs"].items())
        print(
            f"carried over from {', '.join(carried['from'])} (runs per row; 0: ran in full at "
            f"this code): {rows}",
            file=sys.stderr,
        )
    print(table(verdict))
    if OURS in contenders:
        print("\n" + report("ours against its goals on this sweep", sweep_goals(verdict)))
    elapsed = time.perf_counter() - started
    print(f"sweep: {args.out / 'sweep.json'} ({elapsed:.1f} s)")
    return 0
