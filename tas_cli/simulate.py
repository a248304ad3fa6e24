"""`tas simulate`: run named scenarios (or scenario files) against the contenders, side by side.

Writes DIR/summary.json, PNG charts per scenario and a log of the components' own messages
(DIR/simulate.log), and prints one table per scenario. A bad scenario file lists every problem
with its path and exits 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any, TextIO


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "simulate",
        help="measure the closed loop against the systems it replaces, on a virtual clock",
        description="Run scenarios on a virtual clock against several contenders (requests, "
        "requests-lnu, tas, psi-profile, volcano-loadaware, ours) and report the same figures "
        "for each.",
    )
    parser.add_argument(
        "scenarios", nargs="*", metavar="SCENARIO", help="a named scenario or a YAML file"
    )
    parser.add_argument("--all", action="store_true", help="every named scenario")
    parser.add_argument(
        "--contenders", default="", metavar="A,B", help="only these contenders (default: all)"
    )
    parser.add_argument("--seed", type=int, default=None, help="override the scenarios' seed")
    parser.add_argument("--out", type=Path, default=Path("simulation"), metavar="DIR")
    parser.add_argument(
        "--duration", default="", metavar="DURATION", help="cut every scenario to this long"
    )
    parser.add_argument("--no-charts", action="store_true", help="skip the PNG charts")
    parser.set_defaults(handler=run)


class ProgressBar:
    """One line per scenario, redrawn in place: which contender, how far."""

    def __init__(self, scenario: str, stream: TextIO) -> None:
        self.scenario = scenario
        self.stream = stream
        self.tty = stream.isatty()
        self._shown = ""

    def __call__(self, contender: str, fraction: float) -> None:
        width = 30
        filled = round(fraction * width)
        text = (
            f"{self.scenario:18} {contender:18} [{'#' * filled}{'.' * (width - filled)}] "
            f"{fraction:4.0%}"
        )
        if self.tty:
            self.stream.write("\r" + text)
            self.stream.flush()
        elif fraction >= 1.0 and text != self._shown:
            self.stream.write(text + "\n")
            self.stream.flush()
        self._shown = text

    def done(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def run(args: argparse.Namespace) -> int:
    from simulator.contenders import CONTENDERS
    from simulator.report import table, write_summary
    from simulator.runner import run_scenario
    from simulator.scenario import ScenarioError, load_scenario, named_scenarios
    from tas.durations import DurationError, parse_duration

    named = named_scenarios()
    names = list(args.scenarios)
    if args.all:
        names = [*named, *(n for n in names if n not in named)]
    if not names:
        print("tas simulate: name a scenario or give --all", file=sys.stderr)
        print(f"named scenarios: {', '.join(named)}", file=sys.stderr)
        return 2
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()] or list(CONTENDERS)
    unknown = [c for c in contenders if c not in CONTENDERS]
    if unknown:
        print(
            f"tas simulate: unknown contender(s) {', '.join(unknown)}; "
            f"known: {', '.join(CONTENDERS)}",
            file=sys.stderr,
        )
        return 2
    try:
        duration = parse_duration(args.duration) if args.duration else None
    except DurationError as error:
        print(f"tas simulate: --duration: {error}", file=sys.stderr)
        return 2
    scenarios = []
    problems: list[str] = []
    for name in names:
        try:
            scenarios.append(load_scenario(name))
        except ScenarioError as error:
            problems.extend(error.problems)
    if problems:
        print("tas simulate: the scenario cannot be used:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    _log_to(out / "simulate.log")
    results = []
    started = time.perf_counter()
    for scenario in scenarios:
        if duration is not None:
            scenario = scenario.with_duration(duration)
        bar = ProgressBar(scenario.name, sys.stderr)
        result = run_scenario(scenario, contenders=contenders, seed=args.seed, progress=bar)
        bar.done()
        results.append(result)
        print(table(result) + "\n", flush=True)
        if not args.no_charts:
            from simulator.charts import write_charts

            for path in write_charts(result, out):
                print(f"  chart: {path}")
    write_summary(results, out / "summary.json")
    print(f"summary: {out / 'summary.json'} ({time.perf_counter() - started:.1f} s)")
    return 0


def _log_to(path: Path) -> None:
    """The components log every decision; during a simulation that belongs in a file."""
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
