"""`tas run` (`make run`): the health-metric demo on the in-memory world, on a live dashboard.

Everything real except the cluster: the extender serves HTTP on 127.0.0.1, the policy
controller labels nodes and pods and writes policy status, the descheduler (Automatic: TAS
violations, load-aware rebalancing, soft taints) evicts, and the kube-scheduler model places
pending pods by calling the extender with kube-scheduler's wire format. The cluster is the
in-memory one (`tas_inmemory.demo`); node telemetry is textfiles, written every sync period by the
workload model (`tas_inmemory.live_telemetry`) and by `tas set-health`, and read back by the real
textfile metric source. The dashboard (`tas_dashboard/`) shows it all and offers the demo's
controls; its JSON API is in docs/dashboard.md. With `--scenario`, a simulator scenario takes
the demo's place, in real time: the very run `tas simulate` makes for `ours`, metric pipeline
included (`tas_simulator.live`). Both worlds are built, wired and bound in `tas_dashboard.worlds`,
and
run on the page, stepped by the closed loop, in `tas_dashboard.runtime` (`run_world`); this module
reads the flags, checks them and ends the process.

SIGINT/SIGTERM end it within 2 s, whatever it is doing (`tas_dashboard.runtime`); then the process
ends without the interpreter's teardown, which alone took 0.5-1 s on a busy machine (nothing is
left to save: the world is in memory, the textfiles are written whole).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from descheduler.cycle import Mode
from tas.runtime import process
from tas_cli import common
from tas_dashboard.runtime import run_world
from tas_dashboard.worlds import DEMO
from tas_inmemory.demo import DEMO_APP, NODES

#: `tas run --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Run the extender, the policy controller, the descheduler and a small "
    "scheduler against an in-memory cluster whose node metrics are textfiles, and serve "
    "a dashboard that shows the loop and offers the demo's controls."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", type=Path, default=Path("run"), help="state directory (run/)")
    parser.add_argument(
        "--listen",
        type=common.listen_address,
        default=("127.0.0.1", 9001),
        metavar="HOST:PORT",
        help="the extender (default 127.0.0.1:9001)",
    )
    parser.add_argument(
        "--dashboard",
        type=common.listen_address,
        default=common.DEMO_DASHBOARD,
        metavar="HOST:PORT",
        help="the dashboard and its JSON API (default {}:{}); beyond loopback its controls are "
        "refused unless --allow-remote-controls".format(*common.DEMO_DASHBOARD),
    )
    parser.add_argument(
        "--allow-remote-controls",
        action="store_true",
        help="serve the dashboard's controls (set health, add load, scale: no authentication) "
        "on a --dashboard address beyond loopback too",
    )
    parser.add_argument("--policies", type=Path, default=DEMO / "health-policy.yaml")
    parser.add_argument(
        "--descheduler-config", type=Path, default=DEMO / "descheduler-demo.yaml", metavar="FILE"
    )
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.AUTOMATIC.value)
    parser.add_argument(
        "--sync-period",
        type=common.duration,
        metavar="DURATION",
        help="default 1s (with --scenario: the scenario's, divided by --speed)",
    )
    parser.add_argument(
        "--descheduling-interval",
        type=common.duration,
        metavar="DURATION",
        help="default 2s (with --scenario: the scenario's, divided by --speed)",
    )
    parser.add_argument(
        "--scenario",
        metavar="NAME|FILE",
        help="run a simulator scenario (a name from scenarios/, e.g. health-demo, or a file) "
        "in real time instead of the health demo; a name that is none lists them",
    )
    parser.add_argument(
        "--speed",
        type=positive_number,
        default=None,
        metavar="X",
        help="with --scenario only: scenario seconds per wall-clock second (default 1)",
    )
    parser.add_argument(
        "--replicas",
        type=common.count,
        metavar="N",
        help=f"the health demo's demo-app replicas at start (default {DEMO_APP.replicas}; "
        "a scenario brings its own workloads)",
    )
    parser.add_argument(
        "--seed", type=common.count, default=0, metavar="N", help="the workload model's seed"
    )
    parser.add_argument(
        "--duration",
        type=common.duration_or_zero,
        default=0.0,
        metavar="DURATION",
        help="stop after this long (default 0: never)",
    )
    parser.add_argument(
        "--show-state",
        action="store_true",
        help="print the cluster state (each node's health, violating labels and demo pods) to "
        "the terminal after every change; the dashboard shows it anyway",
    )


@dataclass(frozen=True)
class RunCommandSettings:
    """Everything `tas run` was told, read once from its command line."""

    dir: Path
    listen: tuple[str, int]
    dashboard: tuple[str, int]
    allow_remote_controls: bool
    policies: Path
    descheduler_config: Path
    mode: str
    #: None: 1s for the demo, the scenario's divided by `speed` with a scenario.
    sync_period: float | None
    #: None: 2s for the demo, the scenario's divided by `speed` with a scenario.
    descheduling_interval: float | None
    scenario: str | None
    #: None: not given (1 with a scenario; given without one, it is an error).
    speed: float | None
    #: None: not given (the demo's default; given with a scenario, it is an error).
    replicas: int | None
    seed: int
    duration: float
    show_state: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunCommandSettings:
        return common.read_settings(cls, args)


def run(args: argparse.Namespace) -> NoReturn:
    """The process's body: it ends the process (see the module docstring), so it is run as one
    (`tas run`, `python -m tas_cli run`), never called from a program that goes on."""
    settings = RunCommandSettings.from_args(args)
    common.configure_logging("info")
    # The dashboard's decision log tells all of it; the terminal keeps evictions and changes.
    for noisy in ("httpx", "uvicorn.error", "descheduler.plugins.load_aware", "descheduler.cycle"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        check_settings(settings)
        code = run_world(settings)
    except KeyboardInterrupt:  # Ctrl-C while setting up (a big scenario takes seconds): no trace
        code = 128 + signal.SIGINT
    end_process(code)


def end_process(code: int) -> NoReturn:
    """Exit with `code` now: what is written is flushed, and the interpreter's teardown (freeing
    every object, one by one) is skipped, as the module docstring says why."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def check_settings(settings: RunCommandSettings) -> None:
    """What the command line says that cannot work, before anything starts."""
    if settings.speed is not None and not settings.scenario:
        raise process.SetupError(
            "--speed sets a scenario's pace: give --scenario NAME too (the health demo runs in "
            "real time; --sync-period and --descheduling-interval set its pace)"
        )
    if settings.scenario and settings.replicas is not None:
        raise process.SetupError(
            "--replicas sets the health demo's demo-app: a scenario brings its own workloads "
            "(scale them on the page, or with tas demo scale NAME N)"
        )
    if settings.scenario:
        from tas_simulator.scenario import unknown_scenario

        unknown = unknown_scenario(settings.scenario)
        if unknown is not None:
            raise process.SetupError(unknown)


__all__ = ["DESCRIPTION", "NODES", "add_arguments", "run"]
