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
included (`simulator.live`).

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
import dataclasses
import functools
import logging
import math
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from prometheus_client import CollectorRegistry

from dashboard.app import Controls, create_dashboard_app
from dashboard.controls import control_access
from dashboard.observer import RecorderObserver
from dashboard.recorder import SHOWN_METRICS, Recorder, Tick, load_aware_curves
from descheduler.assemble import assemble_descheduler
from descheduler.config import ConfigError, load_config_file
from descheduler.cycle import Descheduler, Mode
from descheduler.self_metrics import DeschedulerMetrics
from explainer.facts import Explainer, recorded_events
from extender.app import create_app
from extender.decisions import DecisionLog
from extender.server import ExtenderServer
from extender.settings import ExtenderSettings
from inmemory.apply import apply_policy_files
from inmemory.cluster import InMemoryCluster
from inmemory.demo import (
    DEMO_APP,
    NODES,
    DemoWorld,
    TerminalState,
    build_demo_cluster,
    profile_of,
    write_start_metrics,
)
from inmemory.extender_client import DEFAULT_EXTENDER_WEIGHT, HttpExtender
from inmemory.live_telemetry import LiveTelemetry, LiveWorld, TelemetryStep
from inmemory.loop import ClosedLoop, LoopHooks, RealTime
from inmemory.scheduler import InMemoryScheduler
from policy_controller.reconciler import Reconciler
from policy_controller.self_metrics import ControllerMetrics
from tas import process
from tas.clock import Clock, SystemClock
from tas.explain import parse_decisions
from tas.metrics import MetricSourceError, open_metric_view
from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.files import PolicyFileWatcher
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas_cli import common

log = logging.getLogger("tas.run")

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "deploy" / "health-metric-demo"
#: The whole shutdown's budget (the tick's moment, then the servers' graceful stop), within the
#: 2 s a Ctrl-C is promised; uvicorn cancels requests still running after 1 s.
SHUTDOWN_SECONDS = 1.2
#: How long a tick under way may go on after the signal before the servers are stopped under it.
TICK_GRACE_SECONDS = 0.3
LOOP_THREAD = "tas-run-loop"
#: What a taken port's error suggests: the flag of each server and a port that is rarely taken.
PORT_FLAGS = {"the extender": ("--listen", 19001), "the dashboard": ("--dashboard", 18080)}


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


@dataclass(kw_only=True)
class Setup:
    """The world one `tas run` acts on (the health demo, or a simulator scenario), with its
    components wired into one closed loop and the extender's server bound (not started)."""

    cluster: InMemoryCluster
    controls: Controls
    workloads: Callable[[], list[dict[str, object]]]
    clock: Clock
    view: Any
    store: PolicyStore
    descheduler: Descheduler
    extender: ExtenderServer
    decisions: DecisionLog
    loop: ClosedLoop
    driver: RealTime
    #: The world at the last step, as the page's node cards and charts read it.
    telemetry: Callable[[], TelemetryStep | None]
    #: Wall seconds per sync and per descheduling cycle, as the page states them.
    sync_period: float
    interval: float
    #: What to print under the URLs, given the dashboard's and the extender's.
    banner: Callable[[str, str], str]
    #: The page's controls that act on this world (a scenario's load comes from its workloads).
    offered: tuple[str, ...] = ("health", "load", "scale")
    #: The state's `scenario`: None for the health demo.
    describe: Callable[[], dict[str, Any] | None] = lambda: None


def demo_setup(
    settings: RunCommandSettings, metrics_dir: Path, registry: CollectorRegistry
) -> Setup:
    if not settings.policies.exists():
        raise process.SetupError(f"no policy at {settings.policies} (give --policies FILE)")
    try:
        config = load_config_file(settings.descheduler_config)
    except ConfigError as error:
        raise process.SetupError(f"{settings.descheduler_config}: {error}") from error
    write_start_metrics(metrics_dir)
    replicas = settings.replicas if settings.replicas is not None else DEMO_APP.replicas
    cluster = build_demo_cluster(replicas)
    demo = DemoWorld(cluster, metrics_dir, seed=settings.seed)
    sync = settings.sync_period or 1.0
    interval = settings.descheduling_interval or 2.0
    world = LiveWorld(
        LiveTelemetry(
            cluster, metrics_dir, profile_of=profile_of, started=time.time(), seed=settings.seed
        ),
        started=time.time(),
    )
    try:
        view = open_metric_view(f"textfile:{metrics_dir}", sync_period=sync, registry=registry)
    except MetricSourceError as error:
        raise process.SetupError(str(error)) from error
    clock = SystemClock()
    store = PolicyStore()
    loader = ClusterPolicyLoader(cluster, store)
    files = PolicyFileWatcher(
        settings.policies, functools.partial(apply_policy_files, cluster=cluster)
    )
    descheduler = assemble_descheduler(
        config=config,
        cluster=cluster,
        metric_view=view,
        policies=lambda: store.snapshot().policies,
        mode=Mode(settings.mode),
        clock=clock,
        metrics=DeschedulerMetrics(registry=CollectorRegistry()),
        # As `tas descheduler` reads container metrics (production's reading of them).
        pod_usage_feed=world,
    )
    want_policy_metrics(store, view, extra=descheduler.wanted_metrics() | set(SHOWN_METRICS))
    files.poll()
    loader.sync()
    world.advance(0.0, sync)
    view.refresh_once()
    decisions = DecisionLog(ExtenderSettings().decision_log_size)
    extender = _server(
        create_app(
            store=store,
            metrics=view,
            settings=ExtenderSettings(),
            registry=registry,
            decisions=decisions,
            clock=clock,
        ),
        settings.listen,
        "the extender",
    )
    loop = ClosedLoop(
        world=world,
        view=view,
        scheduler=InMemoryScheduler(
            cluster, extender=HttpExtender(extender.url, weight=DEFAULT_EXTENDER_WEIGHT)
        ),
        step_seconds=sync,
        sync_period=sync,
        descheduling_interval=interval,
        reconciler=Reconciler(
            cluster=cluster,
            policies=store,
            metric_view=view,
            metrics=ControllerMetrics(CollectorRegistry()),
            clock=clock,
        ),
        descheduler=descheduler,
        # The policy files and the cluster's TASPolicies, before the controller reconciles.
        hooks=LoopHooks(on_sync=[files.poll, loader.sync]),
    )
    return Setup(
        cluster=cluster,
        controls=demo,
        workloads=demo.workloads,
        clock=clock,
        view=view,
        store=store,
        descheduler=descheduler,
        extender=extender,
        decisions=decisions,
        loop=loop,
        driver=RealTime(loop=loop, tick_seconds=sync),
        telemetry=lambda: world.latest,
        sync_period=sync,
        interval=interval,
        banner=lambda dashboard, url: demo_banner(metrics_dir, dashboard, url),
    )


def scenario_setup(name: str, settings: RunCommandSettings, registry: CollectorRegistry) -> Setup:
    """`name`: the scenario file or name (`--scenario`): `tas simulate`'s run for `ours`
    (`simulator.runner.build_run`), its extender behind HTTP, stepped in real time."""
    from simulator.contenders import Unavailable, resolve
    from simulator.live import ScenarioControls, ScenarioPage
    from simulator.runner import ExtenderParts, build_run
    from simulator.scenario import ScenarioError, load_scenario

    speed = settings.speed or 1.0
    try:
        scenario = load_scenario(name)
    except ScenarioError as error:
        raise process.SetupError(f"scenario {name}: " + "; ".join(error.problems[:5])) from error
    contender = resolve("ours", scenario.contenders.get("ours"))
    if isinstance(contender, Unavailable) or contender.config is None:
        why = contender.reason if isinstance(contender, Unavailable) else "no descheduler"
        raise process.SetupError(f"scenario {scenario.name}: {why}")
    # Wall seconds given on the command line stand for `speed` times as many scenario seconds.
    # They set ours' own cadences (which run at deploy/'s defaults whatever the scenario says).
    if settings.sync_period is not None:
        spec = dataclasses.replace(contender.spec, sync_period=settings.sync_period * speed)
        contender = dataclasses.replace(contender, spec=spec)
    if settings.descheduling_interval is not None:
        contender = dataclasses.replace(
            contender, descheduling_interval=settings.descheduling_interval * speed
        )
    seed = settings.seed or scenario.seed
    decisions = DecisionLog(ExtenderSettings().decision_log_size)
    servers: list[ExtenderServer] = []

    def behind_http(parts: ExtenderParts) -> HttpExtender:
        """Ours' extender as `tas extender` serves it (herd control included), called over HTTP
        by the scheduler model as kube-scheduler calls it."""
        tracker, view, clock = parts.placements, parts.view, parts.clock
        app = create_app(
            store=parts.store,
            metrics=view,
            settings=parts.settings or ExtenderSettings(),
            registry=registry,
            decisions=decisions,
            clock=clock,
            estimates=tracker.estimator(
                sample_times=view.sample_times, now=clock.time, columns=view.columns
            ),
            cores=tracker.cores,
            servers=tracker.servers,
            calibration=tracker.calibration,
        )
        server = _server(app, settings.listen, "the extender")
        servers.append(server)
        return HttpExtender(server.url, weight=parts.weight)

    page: ScenarioPage | None = None

    def watch(state: Any, step: float) -> None:
        if page is not None:
            page.watch(state, step)

    run = build_run(
        scenario,
        contender,
        seed=seed,
        extender=behind_http,
        mode=Mode(settings.mode),
        descheduler_metrics=DeschedulerMetrics(registry=CollectorRegistry()),
        watchers=[watch],
    )
    assert run.descheduler is not None  # ours has one (checked above)
    (extender,) = servers
    # What the page shows besides what the components read.
    run.view.set_wanted(
        run.policies.snapshot().metric_names | run.descheduler.wanted_metrics() | set(SHOWN_METRICS)
    )
    driver = RealTime(
        loop=run.loop,
        tick_seconds=max(0.2, contender.sync_period(scenario) / speed),
        speed=speed,
        steps=run.steps,
    )
    ticking = driver
    page = ScenarioPage(run, speed=speed, seed=seed, finished=lambda: ticking.finished)
    controls = ScenarioControls(run)
    banner = (
        f"Scenario {scenario.name}: {scenario.description.strip()}\n"
        f"{len(scenario.nodes)} nodes, {len(scenario.workloads)} workloads, "
        f"{scenario.duration:g}s of scenario time at {speed:g}x "
        f"({scenario.duration / speed:g}s), seed {seed}: the run tas simulate makes for ours, "
        "its metric pipeline included."
    )
    return Setup(
        cluster=run.world.cluster,
        controls=controls,
        workloads=controls.workloads,
        clock=run.clock,
        view=run.view,
        store=run.policies,
        descheduler=run.descheduler,
        extender=extender,
        decisions=decisions,
        loop=run.loop,
        driver=driver,
        telemetry=page.telemetry,
        sync_period=contender.sync_period(scenario) / speed,
        interval=contender.interval(scenario) / speed,
        banner=lambda dashboard, url: banner,
        offered=("health", "scale"),
        describe=page.describe,
    )


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
        [_listener(settings.dashboard, "the dashboard"), _listener(settings.listen, "the extender")]
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
        dashboard = _server(dashboard_app, settings.dashboard, "the dashboard")
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


def _server(app: Any, address: tuple[str, int], what: str) -> ExtenderServer:
    return process.bind(
        address,
        lambda host, port: ExtenderServer(app, host=host, port=port, log_level="warning"),
        what=what,
        if_taken=_listener(address, what).if_taken,
    )


def _listener(address: tuple[str, int], what: str) -> process.Listener:
    host, port = address
    flag, spare = PORT_FLAGS[what]
    return process.Listener(
        address,
        what,
        if_taken=f"Something else is serving there; pick another port with {flag} "
        f'{host}:{spare} (make run ARGS="{flag} {host}:{spare}"), or stop what '
        f"holds it (ss -ltnp 'sport = :{port}' shows which)",
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


def demo_banner(metrics_dir: Path, dashboard: str, extender: str) -> str:
    request = DEMO / "filter-request.json"
    tas = shlex.quote(str(Path(sys.argv[0]))) if sys.argv[0].endswith("tas") else "tas"
    where = shlex.quote(str(metrics_dir))
    return f"""The health-metric demo: nodes {", ".join(NODES)}, policy demo-policy
(namespace health-metric-demo). node-b starts at health 1: nothing new is scheduled there.
Node telemetry is textfiles in {metrics_dir}/.

Make node-c unhealthy and watch the loop close (label, eviction, rescheduling):
  {tas} set-health node-c 2 --dir {where}
and heal it again:
  {tas} set-health node-c 0 --dir {where}
Scale the demo app, or load a node with 3 cores of CPU (the load-aware descheduler reacts):
  curl -s -X POST -H 'Content-Type: application/json' -d '{{"replicas": 6}}' \\
       {dashboard}/api/workloads/demo-app/scale
  curl -s -X POST -H 'Content-Type: application/json' -d '{{"cores": 3}}' \\
       {dashboard}/api/nodes/node-d/load
  curl -s -X DELETE {dashboard}/api/nodes/node-d/load
Ask the extender, as kube-scheduler would:
  curl -s -X POST -H 'Content-Type: application/json' \\
       --data @{shlex.quote(str(request))} {extender}/scheduler/filter"""


__all__ = ["DESCRIPTION", "NODES", "add_arguments", "run"]
