"""`tas run` (`make run`): the health-metric demo on the in-memory world, on a live dashboard.

Everything real except the cluster: the extender serves HTTP on 127.0.0.1, the policy
controller labels nodes and pods and writes policy status, the descheduler (Automatic: TAS
violations, load-aware rebalancing, soft taints) evicts, and the kube-scheduler model places
pending pods by calling the extender with kube-scheduler's wire format. The cluster is the
in-memory one (`inmemory.demo`); node telemetry is textfiles, written every sync period by the
workload model (`inmemory.live_telemetry`) and by `tas set-health`, and read back by the real
textfile metric source. The dashboard (`dashboard/`) shows it all and offers the demo's
controls; its JSON API is in docs/dashboard.md. With `--scenario`, a simulator scenario takes
the demo's place, in real time: the very run `tas simulate` makes for `ours`, metric pipeline
included (`simulator.live`). Both worlds are built, wired and bound in `dashboard.worlds`; this
module reads the flags, checks them, prints the banner and runs what it is given.

Both run the closed loop of `inmemory.loop` (`ClosedLoop`: the world moves, the view
refreshes, the controller reconciles, the descheduler cycles when due, the scheduler places
what is pending), stepped as wall time passes (`RealTime`); the dashboard's recorder is told
each decision as the loop makes it, and the state once a tick.

SIGINT/SIGTERM end it within 2 s, whatever it is doing. The loop runs in a daemon thread and
the main thread only waits (as `tas descheduler` runs its schedule), so a signal in the middle
of a long tick (a big scenario's first placement round takes tens of seconds) is answered at
once; the tick is given a moment to finish, the servers a bounded graceful stop, and then the
process ends without the interpreter's teardown, which alone took 0.5-1 s on a busy machine
(nothing is left to save: the world is in memory, the textfiles are written whole).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from prometheus_client import CollectorRegistry

from dashboard.app import create_dashboard_app
from dashboard.controls import control_access
from dashboard.observer import RecorderObserver
from dashboard.recorder import Recorder, Tick
from dashboard.worlds import DEMO, bind_server, demo_setup, port_listener, scenario_setup
from descheduler.assemble import load_aware_curves
from descheduler.cycle import Descheduler, Mode
from explainer.facts import Explainer, recorded_events
from extender.decisions import DecisionLog
from extender.settings import ExtenderSettings
from inmemory.cluster import InMemoryCluster
from inmemory.demo import DEMO_APP, NODES, TerminalState
from inmemory.loop import RealTime
from tas import process
from tas.explain import parse_decisions
from tas.policies.store import PolicyStore
from tas_cli import common

log = logging.getLogger("tas.run")

#: The whole shutdown's budget (the tick's moment, then the servers' graceful stop), within the
#: 2 s a Ctrl-C is promised; uvicorn cancels requests still running after 1 s.
SHUTDOWN_SECONDS = 1.2
#: How long a tick under way may go on after the signal before the servers are stopped under it.
TICK_GRACE_SECONDS = 0.3
LOOP_THREAD = "tas-run-loop"


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
        code = _run(settings)
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
        from tas_cli.simulate import unknown_scenario

        unknown = unknown_scenario(settings.scenario)
        if unknown is not None:
            raise process.SetupError(unknown)


def _run(settings: RunCommandSettings) -> int:
    check_settings(settings)
    # Every port at once, before anything is built: not one taken port per attempt.
    process.check_listeners(
        [
            port_listener(settings.dashboard, "the dashboard"),
            port_listener(settings.listen, "the extender"),
        ]
    )
    metrics_dir: Path = settings.dir / "metrics"
    metrics_dir.mkdir(parents=True, exist_ok=True)
    for stale in metrics_dir.glob("*.prom"):  # an earlier run's nodes must not linger
        stale.unlink()
    registry = CollectorRegistry()
    if settings.scenario:
        setup = scenario_setup(settings.scenario, settings, registry)
    else:
        setup = demo_setup(settings, metrics_dir, registry)
    cluster, view, extender = setup.cluster, setup.view, setup.extender
    with process.Lifetime("tas run", shutdown_seconds=SHUTDOWN_SECONDS) as life:
        life.catch_signals()
        access = control_access(settings.dashboard[0], allow_remote=settings.allow_remote_controls)
        recorder = Recorder(
            cluster=cluster,
            policies=setup.store,
            decisions=setup.decisions,
            workloads=setup.workloads,
            metric_times=view,  # each node's metric age on the page
            scenario=setup.describe,
            clock=setup.clock,
            # Each node's pressure curve beside it, as LoadAware learns it.
            curves=load_aware_curves(setup.descheduler),
            info={
                "extender": extender.url,
                "mode": settings.mode,
                "syncPeriod": setup.sync_period,
                "deschedulingInterval": setup.interval,
                # Absolute: tas set-health, run from anywhere, writes here (it asks for it).
                "metricsDir": str(metrics_dir.resolve()),
                # The page offers only the controls that act (none where they are refused).
                "controls": {
                    "offered": list(setup.offered) if access.allowed else [],
                    "reason": access.reason or None,
                },
            },
        )
        dashboard_app = create_dashboard_app(
            recorder=recorder,
            world=setup.controls,
            stop=life.stop,
            access=access,
            clock=setup.clock,
            explainer=explainer(
                cluster, view, setup.store, setup.decisions, setup.descheduler, ExtenderSettings()
            ),
        )
        dashboard = bind_server(dashboard_app, settings.dashboard, "the dashboard")
        servers = (dashboard, extender)
        for server in servers:
            server.start()

        def stop_servers(seconds_left: float) -> None:
            for server in servers:
                server.request_stop()
            deadline = time.monotonic() + seconds_left
            for server in servers:
                server.stop(max(0.0, deadline - time.monotonic()))

        life.on_close(stop_servers)
        #: Set by the loop's thread if a tick failed (exit status 1).
        failed = threading.Event()
        print_banner(dashboard.url, extender.url, setup.banner(dashboard.url, extender.url))
        if access.notice:
            log.warning("%s", access.notice)
        setup.loop.observers = [
            *setup.loop.observers,
            RecorderObserver(recorder, view, setup.clock),
        ]
        shown = TerminalState(cluster, view, enabled=settings.show_state)

        def after_tick(t: float) -> None:
            now = setup.clock.now().timestamp()
            columns = view.columns()
            recorder.observe(Tick(now=now, columns=columns, telemetry=setup.telemetry()))
            shown.update(columns)

        setup.driver.after_tick = after_tick
        for handler in logging.getLogger().handlers:
            handler.addFilter(CutShort(life.stop, LOOP_THREAD))
        driver = threading.Thread(
            target=drive,
            args=(setup.driver, settings.duration, life.stop, failed),
            name=LOOP_THREAD,
            daemon=True,
        )
        # Registered last, so run first at the close: the tick under way gets a moment to end
        # before the extender it may be calling goes away.
        life.on_close(lambda seconds_left: driver.join(min(TICK_GRACE_SECONDS, seconds_left)))
        driver.start()
        # The main thread only waits, so the signal handler runs at once (module docstring).
        life.stop.wait()
    return 1 if failed.is_set() else 0


class CutShort(logging.Filter):
    """Once stopping, the loop's thread is cut short: the warnings of a tick that finds the
    extender gone (the scheduler's "Extender filter failed") are about the cut, not news."""

    def __init__(self, stop: threading.Event, thread: str) -> None:
        super().__init__()
        self._stop = stop
        self._thread = thread

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            self._stop.is_set()
            and record.threadName == self._thread
            and record.levelno < logging.ERROR
        )


def drive(
    driver: RealTime, duration: float, stop: threading.Event, failed: threading.Event
) -> None:
    """The loop's thread: `driver` steps the loop until `stop` (or `duration` wall seconds),
    then sets `stop`. A scenario's end is said once; the world then holds still."""
    if duration:
        timer = threading.Timer(duration, stop.set)
        timer.daemon = True
        timer.start()
    announce = driver.after_tick
    announced = False

    def after_tick(t: float) -> None:
        nonlocal announced
        announce(t)
        if driver.finished and not announced:
            print("The scenario reached its end; the world holds still. Ctrl-C stops.")
            announced = True

    driver.after_tick = after_tick
    try:
        driver.run(stop)
    except Exception:
        # Once stopping, a tick cut short by the servers going away is no news.
        if not stop.is_set():
            log.exception("tas run: the loop failed; stopping")
            failed.set()
    finally:
        stop.set()


def explainer(
    cluster: InMemoryCluster,
    view: Any,
    store: PolicyStore,
    decisions: DecisionLog,
    descheduler: Descheduler,
    extender: ExtenderSettings,
) -> Explainer:
    """`tas explain` over this run's live parts, for the dashboard's `/api/explain/...`: the
    extender's decision log in-process (what its /debug/decisions serves), the cluster's
    Events, and a dry run of the running descheduler's cycle with its memory."""
    return Explainer(
        cluster=cluster,
        view=view,
        policies=lambda: store.snapshot().policies,
        decisions=lambda: parse_decisions([d.to_json() for d in decisions.recent()]),
        events=recorded_events(lambda: cluster.events),
        descheduler=descheduler,
        score_mode=extender.score_mode,
    )


def print_banner(dashboard: str, extender: str, about: str) -> None:
    print(
        f"""
Telemetry-aware scheduling on the in-memory cluster.

  Dashboard:  {dashboard}/          (JSON API: {dashboard}/api, docs/dashboard.md)
  Extender:   {extender}

{about}
The terminal shows evictions and errors; --show-state adds the cluster state after each change.
Ctrl-C stops everything.
""",
        flush=True,
    )


__all__ = ["DESCRIPTION", "NODES", "add_arguments", "run"]
