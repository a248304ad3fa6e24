"""What `tas run` (`make run`) runs: a world on the live dashboard, until stopped.

The world (`tas_dashboard.worlds`: the health demo, or a simulator scenario) is stepped by the
closed loop of `tas_inmemory.loop` (`ClosedLoop`: the world moves, the view refreshes, the
controller reconciles, the descheduler cycles when due, the scheduler places what is pending),
as wall time passes (`RealTime`); the dashboard's recorder is told each decision as the loop
makes it, and the state once a tick. The extender and the dashboard serve on their ports; the
banner says where.

SIGINT/SIGTERM end it within 2 s, whatever it is doing. The loop runs in a daemon thread and
the main thread only waits (as `tas descheduler` runs its schedule), so a signal in the middle
of a long tick (a big scenario's first placement round takes tens of seconds) is answered at
once; the tick is given a moment to finish, and the servers a bounded graceful stop. The
command (`tas_cli.run`) reads and checks the flags, calls `run_world` and ends the process; it
reads them through a Protocol (`RunProcessSettings`), so this module imports nothing of the
command line.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from descheduler.assemble import load_aware_curves
from descheduler.cycle import Descheduler
from extender.decisions import DecisionLog
from extender.settings import ExtenderSettings
from tas.policies.store import PolicyStore
from tas.runtime import process
from tas_dashboard.app import create_dashboard_app
from tas_dashboard.controls import control_access
from tas_dashboard.observer import RecorderObserver
from tas_dashboard.recorder import Recorder, Tick, served_demand
from tas_dashboard.worlds import RunSettings, bind_server, demo_setup, port_listener, scenario_setup
from tas_explain.explain import parse_decisions
from tas_explain.facts import Explainer, recorded_events
from tas_inmemory.cluster import InMemoryCluster
from tas_inmemory.demo import TerminalState
from tas_inmemory.loop import RealTime

log = logging.getLogger("tas.run")

#: The whole shutdown's budget (the tick's moment, then the servers' graceful stop), within the
#: 2 s a Ctrl-C is promised; uvicorn cancels requests still running after 1 s.
SHUTDOWN_SECONDS = 1.2
#: How long a tick under way may go on after the signal before the servers are stopped under it.
TICK_GRACE_SECONDS = 0.3
LOOP_THREAD = "tas-run-loop"


class RunProcessSettings(RunSettings, Protocol):
    """What a run reads of `tas run`'s settings (`tas_cli.run.RunCommandSettings`), beyond
    what its world reads."""

    @property
    def dir(self) -> Path: ...
    @property
    def dashboard(self) -> tuple[str, int]: ...
    @property
    def allow_remote_controls(self) -> bool: ...
    @property
    def scenario(self) -> str | None: ...
    @property
    def duration(self) -> float: ...
    @property
    def show_state(self) -> bool: ...


def run_world(settings: RunProcessSettings) -> int:
    """Build the world the settings name, serve it on the page and step it until SIGINT/SIGTERM
    (or `settings.duration`): the exit status, 1 if a tick failed. A problem the user can fix
    (a port taken, a file missing) is a `tas.runtime.process.SetupError` before anything serves."""
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
            # What a card says of a node that serves its demand (its load per CPU below 1).
            served=served_demand(setup.descheduler),
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
