"""`tas simulate`: run named scenarios (or scenario files) against the contenders, side by side.

Each scenario runs on `--seeds N` seeds (default 5: its own seed and the next four), every run
an independent job on a process pool over all cores (or a Dask cluster with `--dask`). Writes
DIR/summary.json (means over the seeds, 95% intervals, the clear bests), PNG charts per scenario
from its first seed, and the run's log (DIR/simulate.log: what ran, its progress and tables, and
the components' warnings), and prints one table per scenario (blocks of columns no wider than
`tas_simulator.report.TABLE_WIDTH`), then a legend of the columns shown (what each figure counts, in
which unit, `tas_simulator.report.LEGEND`), and where it wrote. Fewer than `FEW_SEEDS` seeds is
warned of: their intervals are too wide to compare. A scenario name that is neither a file nor a
named scenario lists the named ones (`tas_simulator.scenario.unknown_scenario`) and exits 2; a bad
scenario file lists every problem with its path and exits 1. Ctrl-C while the runs go stops at
once, quietly (one line, exit 130, the workers terminated).

Every table and summary.json also carry three reference rows, never contenders: `limit` (the
fluid bound, `tas_simulator.limit`), `hindsight` (whole pods placed once knowing the future, no
moves: achievable, `tas_simulator.hindsight`) and `clairvoyant` (ours reading true values, no
pipeline lag), and each contender's share of the achievable gain, (requests - it) /
(requests - limit), and the same against the hindsight placement.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import shlex
import signal
import sys
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TextIO

from tas_cli.common import print_problems
from tas_cli.simulation_options import add_contenders_option, add_spreading_options

#: Below this many seeds a 95% interval (Student's t over the seeds) is too wide to tell
#: contenders apart: t for 1 degree of freedom is 12.7, for 2 it is 4.3.
FEW_SEEDS = 3

#: `tas simulate --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Run scenarios on a virtual clock against several contenders (requests, "
    "requests-lnu, tas, psi-profile, volcano-loadaware, ours) and report the same figures "
    "for each, beside three references: the fluid limit, the hindsight placement (no moves) "
    "and ours with perfect information (clairvoyant)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "scenarios", nargs="*", metavar="SCENARIO", help="a named scenario or a YAML file"
    )
    parser.add_argument("--all", action="store_true", help="every named scenario")
    add_contenders_option(parser)
    parser.add_argument(
        "--seed", type=int, default=None, help="the first seed (default: the scenario's own)"
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=5,
        metavar="N",
        help="run each scenario on N seeds (the first and the next N-1) and report means with "
        "95%% intervals (default: 5)",
    )
    add_spreading_options(parser)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("simulation"),
        metavar="DIR",
        help="where to write summary.json, the PNG charts and simulate.log, the run's log "
        "(default: ./simulation, created if missing)",
    )
    parser.add_argument(
        "--duration", default="", metavar="DURATION", help="cut every scenario to this long"
    )
    parser.add_argument("--no-charts", action="store_true", help="skip the PNG charts")


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
    from tas.durations import DurationError, parse_duration
    from tas_simulator.contenders import choose_contenders
    from tas_simulator.goals import named_goals, report
    from tas_simulator.jobs import DaskUnavailableError
    from tas_simulator.report import COLUMNS, legend, summary, table, write_summary
    from tas_simulator.scenario import (
        ScenarioError,
        load_scenario,
        named_scenarios,
        unknown_scenario,
    )
    from tas_simulator.seeds import run_seeded

    named = named_scenarios()
    names = list(args.scenarios)
    if args.all:
        names = [*named, *(n for n in names if n not in named)]
    if not names:
        print("tas simulate: name a scenario or give --all", file=sys.stderr)
        print(f"named scenarios: {', '.join(named)}", file=sys.stderr)
        return 2
    unknown = [said for name in names if (said := unknown_scenario(name)) is not None]
    if unknown:
        for said in unknown:
            print(f"tas simulate: {said}", file=sys.stderr)
        return 2
    if args.seeds < 1 or (args.workers is not None and args.workers < 1):
        print("tas simulate: --seeds and --workers must be at least 1", file=sys.stderr)
        return 2
    try:
        contenders = choose_contenders(args.contenders)
    except ValueError as error:
        print(f"tas simulate: {error}", file=sys.stderr)
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
        print_problems("tas simulate: the scenario cannot be used:", problems)
        return 1
    if duration is not None:
        scenarios = [s.with_duration(duration) for s in scenarios]
    if args.seeds < FEW_SEEDS:
        if args.seeds == 1:
            said = "1 seed gives no 95% interval, nothing to tell contenders apart by"
        else:
            said = f"{args.seeds} seeds give 95% intervals too wide to tell contenders apart"
        print(
            f"tas simulate: warning: {said}: use --seeds {FEW_SEEDS} or more (default 5) for "
            "figures to compare",
            file=sys.stderr,
        )
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    _log_to(out / "simulate.log")
    LOG.info("tas %s", shlex.join(sys.argv[1:]))
    for scenario in scenarios:
        LOG.info(
            "scenario %s: %g min, seeds from %s, %d seed(s), contenders %s",
            scenario.name, scenario.duration / 60,
            "its own" if args.seed is None else args.seed, args.seeds, ", ".join(contenders),
        )  # fmt: skip
    started = time.perf_counter()
    bar = ProgressBar("simulate", sys.stderr)
    ctrl_c = CtrlC()
    try:
        with ctrl_c:
            results = run_seeded(
                scenarios,
                contenders=contenders,
                seeds=args.seeds,
                base_seed=args.seed,
                workers=args.workers,
                dask_address=args.dask or None,
                log_path=out / "simulate.log",
                progress=lambda done, total: _progress(bar, done, total),
            )
    except DaskUnavailableError as error:
        bar.done()
        print(f"tas simulate: {error}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, BrokenProcessPool):
        if not ctrl_c.pressed.is_set():
            raise
        return INTERRUPTED
    bar.done()
    charts: list[Path] = []
    for result in results:
        print(table(result) + "\n", flush=True)
        LOG.info("%s", table(result))
        if not args.no_charts:
            from tas_simulator.charts import write_charts

            charts.extend(write_charts(result, out))
    figures = {f for r in results for s in r.contenders.values() for f in s.means()}
    print(legend([title for title, figure, _, _ in COLUMNS if figure in figures]) + "\n")
    document = summary(results)
    write_summary(document, out / "summary.json")
    # Only the goals of the scenarios that ran (`named_goals`), each MET, MISSED or UNDECIDED.
    goals = named_goals(document) if "ours" in contenders else []
    if goals:
        print(report("ours against its goals on the scenarios run", goals) + "\n")
    seconds = time.perf_counter() - started
    LOG.info("done in %.1f s", seconds)
    print(f"wrote {_shown(out / 'summary.json')} ({seconds:.1f} s)")
    print(f"wrote {_shown(out / 'simulate.log')}")
    if charts:
        print(f"wrote {len(charts)} charts: {_shown(out)}/*.png")
    return 0


LOG = logging.getLogger("tas_cli.simulate")
#: The exit status of a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it.
INTERRUPTED = 130


class CtrlC:
    """Ctrl-C while the runs go: stop within a moment, quietly (one line, exit `INTERRUPTED`).

    The terminal sends SIGINT to every process of the command: left alone, each worker printed
    its traceback and the pool waited for the runs under way (seconds). So SIGINT is ignored
    while the pool's workers start (they inherit that, and never see it); once they are up, a
    signal to the main thread (SIGUSR1: only the main thread may set a handler) installs the
    handler that says so, terminates the workers and ends the wait (`KeyboardInterrupt`)."""

    #: How long the workers may take to start before Ctrl-C is listened to anyway.
    START_SECONDS = 3.0

    def __init__(self) -> None:
        self.pressed = threading.Event()
        self._done = threading.Event()

    def __enter__(self) -> CtrlC:
        self._sigint = signal.signal(signal.SIGINT, signal.SIG_IGN)
        self._sigusr1 = signal.signal(signal.SIGUSR1, self._listen)
        main = threading.main_thread().ident
        assert main is not None
        threading.Thread(target=self._started, args=(main,), name="ctrl-c", daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        signal.signal(signal.SIGINT, self._sigint)
        signal.signal(signal.SIGUSR1, self._sigusr1)

    def _started(self, main: int) -> None:
        """Wait for the workers to be up (their number steady), then have Ctrl-C listened to."""
        seen, steady, waited = -1, 0, 0.0
        while not self._done.wait(0.1) and steady < 3 and waited < self.START_SECONDS:
            count = len(multiprocessing.active_children())
            steady = steady + 1 if count == seen and count > 0 else 0
            seen, waited = count, waited + 0.1
        if not self._done.is_set():
            signal.pthread_kill(main, signal.SIGUSR1)

    def _listen(self, signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, self._interrupted)

    def _interrupted(self, signum: int, frame: object) -> None:
        if self.pressed.is_set():
            return
        self.pressed.set()
        print("\ntas simulate: interrupted; nothing written", file=sys.stderr, flush=True)
        for child in multiprocessing.active_children():
            child.terminate()
        raise KeyboardInterrupt


def _shown(path: Path) -> str:
    """`path` as a user finds it: a relative one from here, spelt ./simulation/..."""
    return str(path) if path.is_absolute() else f"./{path}"


def _progress(bar: ProgressBar, done: int, total: int) -> None:
    bar(f"{done}/{total} runs", done / total)
    LOG.info("%d of %d runs done", done, total)


def _log_to(path: Path) -> None:
    """The run's log: what was run and how it went (this command's own lines, from INFO),
    and what the components warn of, here and in the workers (`tas_simulator.jobs`, which
    append to the same file); the components' every decision stays out (below WARNING)."""
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    LOG.setLevel(logging.INFO)
