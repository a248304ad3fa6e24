"""`tas run` (`make run`): the health-metric demo on the embedded default, on a live dashboard.

Everything real except the cluster: the extender serves HTTP on 127.0.0.1, the policy
controller labels nodes and pods and writes policy status, the descheduler (Automatic: TAS
violations, load-aware rebalancing, soft taints) evicts, and the kube-scheduler model places
pending pods by calling the extender with kube-scheduler's wire format. The cluster is the
in-memory one (`embedded.demo`); node telemetry is textfiles, written every sync period by the
workload model (`embedded.live_telemetry`) and by `tas set-health`, and read back by the real
textfile metric source. The dashboard (`dashboard/`) shows it all and offers the demo's
controls; its JSON API is in docs/dashboard.md. With `--scenario`, a simulator scenario takes
the demo's place, in real time (`tas_cli/live_scenario.py`).

One loop, one tick per sync period: the model writes the textfiles, the metric view reads
them, the scheduler places pending pods, the controller reconciles, the descheduler runs when
its interval is due, and the dashboard's recorder takes note.

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
import functools
import logging
import math
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, Protocol

import yaml
from prometheus_client import CollectorRegistry

from dashboard.app import Controls, create_dashboard_app
from dashboard.controls import control_access
from dashboard.recorder import SHOWN_METRICS, Recorder, Tick
from descheduler.config import ConfigError, DeschedulerConfig, load_config_file
from descheduler.cycle import CycleReport, Descheduler, Mode
from descheduler.framework import PodUsage
from descheduler.self_metrics import DeschedulerMetrics
from descheduler.signals import Signal
from descheduler.state import CycleState
from embedded.cluster import InMemoryCluster
from embedded.demo import (
    DEMO_APP,
    NODES,
    DemoWorld,
    build_demo_cluster,
    profile_of,
    write_start_metrics,
)
from embedded.extender_client import DEFAULT_EXTENDER_WEIGHT, HttpExtender
from embedded.live_telemetry import LiveTelemetry, TelemetryStep
from embedded.scheduler import EmbeddedScheduler, Placement
from extender.app import create_app
from extender.decisions import DecisionLog
from extender.server import ExtenderServer
from extender.settings import ExtenderSettings
from policy_controller.reconciler import Reconciler
from policy_controller.self_metrics import ControllerMetrics
from tas.clock import Clock, SystemClock
from tas.cluster.interface import policy_key_of
from tas.explain import parse_decisions
from tas.metrics import MetricSourceError, open_metric_view
from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.documents import read_documents
from tas.policies.files import PolicyFileWatcher, policy_files
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.types import MetricColumns, MetricName, PolicyKey
from tas.vocabulary import POD_VIOLATION_LABEL, POLICY_LABEL
from tas_cli import common, subcommand
from tas_cli.explain import Explainer, embedded_events

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


class Telemetry(Protocol):
    def step(self, now: float) -> TelemetryStep: ...


def _ignore(_: Any) -> None:
    return None


@dataclass
class Setup:
    """The world one `tas run` acts on: the health demo, or a simulator scenario."""

    cluster: InMemoryCluster
    controls: Controls
    workloads: Callable[[], list[dict[str, object]]]
    telemetry: Telemetry
    config: DeschedulerConfig
    clock: Clock
    sync_period: float
    interval: float
    policy_files: PolicyFileWatcher | None
    #: What to print under the URLs, given the dashboard's and the extender's.
    banner: Callable[[str, str], str]
    finished: Callable[[], bool] = lambda: False
    #: The page's controls that act on this world (a scenario's load comes from its workloads).
    offered: tuple[str, ...] = ("health", "load", "scale")
    #: The state's `scenario`: None for the health demo.
    describe: Callable[[], dict[str, Any] | None] = lambda: None
    #: Told each scheduler pass and descheduling cycle (a scenario's figures count them).
    placed: Callable[[Sequence[Placement]], None] = _ignore
    cycled: Callable[[CycleReport], None] = _ignore
    #: The extender's flags and its weight with the scheduler (a scenario may set them for ours,
    #: as `tas simulate` runs it).
    extender: ExtenderSettings = field(default_factory=ExtenderSettings)
    extender_weight: int = DEFAULT_EXTENDER_WEIGHT


def demo_setup(settings: RunCommandSettings, metrics_dir: Path) -> Setup:
    if not settings.policies.exists():
        raise common.SetupError(f"no policy at {settings.policies} (give --policies FILE)")
    try:
        config = load_config_file(settings.descheduler_config)
    except ConfigError as error:
        raise common.SetupError(f"{settings.descheduler_config}: {error}") from error
    write_start_metrics(metrics_dir)
    replicas = settings.replicas if settings.replicas is not None else DEMO_APP.replicas
    cluster = build_demo_cluster(replicas)
    world = DemoWorld(cluster, metrics_dir, seed=settings.seed)
    telemetry = LiveTelemetry(
        cluster, metrics_dir, profile_of=profile_of, started=time.time(), seed=settings.seed
    )
    return Setup(
        cluster=cluster,
        controls=world,
        workloads=world.workloads,
        telemetry=telemetry,
        config=config,
        clock=SystemClock(),
        sync_period=settings.sync_period or 1.0,
        interval=settings.descheduling_interval or 2.0,
        policy_files=PolicyFileWatcher(
            settings.policies, functools.partial(apply_policy_files, cluster=cluster)
        ),
        banner=lambda dashboard, extender: demo_banner(metrics_dir, dashboard, extender),
    )


def scenario_setup(name: str, settings: RunCommandSettings, metrics_dir: Path) -> Setup:
    """`name`: the scenario file or name (`--scenario`)."""
    from simulator.clock import VirtualClock
    from simulator.contenders import Unavailable, resolve
    from simulator.scenario import ScenarioError, load_scenario
    from simulator.world import World
    from tas_cli.live_scenario import ScenarioControls, ScenarioTelemetry

    speed = settings.speed or 1.0
    try:
        scenario = load_scenario(name)
    except ScenarioError as error:
        raise common.SetupError(f"scenario {name}: " + "; ".join(error.problems[:5])) from error
    contender = resolve("ours", scenario.contenders.get("ours"))
    if isinstance(contender, Unavailable) or contender.config is None:
        why = contender.reason if isinstance(contender, Unavailable) else "no descheduler"
        raise common.SetupError(f"scenario {scenario.name}: {why}")
    clock = VirtualClock(start=datetime.now(UTC))
    seed = settings.seed or scenario.seed
    world = World(scenario, clock=clock, seed=seed)
    for document in scenario.policies:
        world.cluster.apply_policy(document)
    telemetry = ScenarioTelemetry(world, metrics_dir, speed=speed, started=time.time(), seed=seed)
    controls = ScenarioControls(world, metrics_dir)
    sync = settings.sync_period or max(0.2, scenario.sync_period / speed)
    interval = settings.descheduling_interval or max(sync, scenario.descheduling_interval / speed)
    banner = (
        f"Scenario {scenario.name}: {scenario.description.strip()}\n"
        f"{len(scenario.nodes)} nodes, {len(scenario.workloads)} workloads, "
        f"{scenario.duration:g}s of scenario time at {speed:g}x "
        f"({scenario.duration / speed:g}s). Node telemetry is textfiles in {metrics_dir}/."
    )
    return Setup(
        cluster=world.cluster,
        controls=controls,
        workloads=controls.workloads,
        telemetry=telemetry,
        config=contender.config,
        clock=clock,
        sync_period=sync,
        interval=interval,
        policy_files=None,
        banner=lambda dashboard, extender: banner,
        finished=lambda: telemetry.finished,
        offered=("health", "scale"),
        describe=telemetry.describe,
        placed=telemetry.placed,
        cycled=telemetry.evicted,
        extender=contender.extender or ExtenderSettings(),
        extender_weight=contender.weight,
    )


def check_settings(settings: RunCommandSettings) -> None:
    """What the command line says that cannot work, before anything starts."""
    if settings.speed is not None and not settings.scenario:
        raise common.SetupError(
            "--speed sets a scenario's pace: give --scenario NAME too (the health demo runs in "
            "real time; --sync-period and --descheduling-interval set its pace)"
        )
    if settings.scenario and settings.replicas is not None:
        raise common.SetupError(
            "--replicas sets the health demo's demo-app: a scenario brings its own workloads "
            "(scale them on the page, or with tas demo scale NAME N)"
        )
    if settings.scenario:
        from tas_cli.simulate import unknown_scenario

        unknown = unknown_scenario(settings.scenario)
        if unknown is not None:
            raise common.SetupError(unknown)


@subcommand.exit_2_on_setup_error("run")
def _run(settings: RunCommandSettings) -> int:
    check_settings(settings)
    metrics_dir: Path = settings.dir / "metrics"
    metrics_dir.mkdir(parents=True, exist_ok=True)
    for stale in metrics_dir.glob("*.prom"):  # an earlier run's nodes must not linger
        stale.unlink()
    if settings.scenario:
        setup = scenario_setup(settings.scenario, settings, metrics_dir)
    else:
        setup = demo_setup(settings, metrics_dir)
    cluster = setup.cluster

    registry = CollectorRegistry()
    try:
        view = open_metric_view(
            f"textfile:{metrics_dir}", sync_period=setup.sync_period, registry=registry
        )
    except MetricSourceError as error:
        raise common.SetupError(str(error)) from error
    store = PolicyStore()
    loader = ClusterPolicyLoader(cluster, store)
    latest: list[TelemetryStep] = []
    descheduler = Descheduler(
        config=setup.config,
        cluster=cluster,
        metric_view=view,
        policies=lambda: store.snapshot().policies,
        mode=Mode(settings.mode),
        clock=setup.clock,
        metrics=DeschedulerMetrics(registry=CollectorRegistry()),
        pod_usage=lambda state: pod_usage(state, latest[-1] if latest else None),
    )
    want_policy_metrics(store, view, extra=descheduler.wanted_metrics() | set(SHOWN_METRICS))
    if setup.policy_files is not None:
        setup.policy_files.poll()
    loader.sync()
    latest.append(setup.telemetry.step(time.time()))
    view.refresh_once()

    extender_settings = setup.extender
    decisions = DecisionLog(extender_settings.decision_log_size)
    extender_app = create_app(
        store=store,
        metrics=view,
        settings=extender_settings,
        registry=registry,
        decisions=decisions,
        # The world's clock: a scenario's decisions carry its time, as its Events do.
        clock=setup.clock,
    )
    with common.Lifetime("tas run", shutdown_seconds=SHUTDOWN_SECONDS) as life:
        life.catch_signals()
        extender = _server(extender_app, settings.listen, "the extender")
        access = control_access(settings.dashboard[0], allow_remote=settings.allow_remote_controls)
        recorder = Recorder(
            cluster=cluster,
            policies=store,
            decisions=decisions,
            workloads=setup.workloads,
            metric_times=view,  # each node's metric age on the page
            scenario=setup.describe,
            clock=setup.clock,
            info={
                "extender": extender.url,
                "mode": settings.mode,
                "syncPeriod": setup.sync_period,
                "deschedulingInterval": setup.interval,
                "metricsDir": str(metrics_dir),
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
            explainer=explainer(cluster, view, store, decisions, descheduler, extender_settings),
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
        http_extender = HttpExtender(extender.url, weight=setup.extender_weight)
        life.on_close(lambda seconds_left: http_extender.close())
        #: Set by the loop's thread if a tick failed (exit status 1).
        failed = threading.Event()
        reconciler = Reconciler(
            cluster=cluster,
            policies=store,
            metric_view=view,
            metrics=ControllerMetrics(CollectorRegistry()),
            clock=setup.clock,
        )
        scheduler = EmbeddedScheduler(cluster, extender=http_extender)
        print_banner(dashboard.url, extender.url, setup.banner(dashboard.url, extender.url))
        if access.notice:
            log.warning("%s", access.notice)
        loop = Loop(
            cluster=cluster,
            telemetry=setup.telemetry,
            view=view,
            policy_files=setup.policy_files,
            loader=loader,
            scheduler=scheduler,
            reconciler=reconciler,
            descheduler=descheduler,
            recorder=recorder,
            latest=latest,
            interval=setup.interval,
            clock=setup.clock,
            placed=setup.placed,
            cycled=setup.cycled,
            show_state=settings.show_state,
        )
        for handler in logging.getLogger().handlers:
            handler.addFilter(CutShort(life.stop, LOOP_THREAD))
        driver = threading.Thread(
            target=drive,
            args=(loop, setup, settings.duration, life.stop, failed),
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
    loop: Loop, setup: Setup, duration: float, stop: threading.Event, failed: threading.Event
) -> None:
    """The loop's thread: a tick per sync period until `stop` (or `duration`), then `stop`."""
    announced = False
    started = time.monotonic()
    try:
        while not stop.is_set():
            loop.tick()
            if setup.finished() and not announced:
                print("The scenario reached its end; the world holds still. Ctrl-C stops.")
                announced = True
            if duration and time.monotonic() - started >= duration:
                break
            stop.wait(setup.sync_period)
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
        events=embedded_events(lambda: cluster.events),
        descheduler=descheduler,
        score_mode=extender.score_mode,
    )


def _server(app: Any, address: tuple[str, int], what: str) -> ExtenderServer:
    host, port = address
    flag, spare = PORT_FLAGS[what]
    return common.bind(
        address,
        lambda host, port: ExtenderServer(app, host=host, port=port, log_level="warning"),
        what=what,
        if_taken=f"Something else is serving there; pick another port with {flag} "
        f'{host}:{spare} (make run ARGS="{flag} {host}:{spare}"), or stop what '
        f"holds it (ss -ltnp 'sport = :{port}' shows which)",
    )


@dataclass(kw_only=True)
class Loop:
    """One tick per sync period (see the module docstring)."""

    cluster: InMemoryCluster
    telemetry: Telemetry
    view: Any
    policy_files: PolicyFileWatcher | None
    loader: ClusterPolicyLoader
    scheduler: EmbeddedScheduler
    reconciler: Reconciler
    descheduler: Descheduler
    recorder: Recorder
    latest: list[TelemetryStep]
    interval: float
    #: The world's clock, which the recorder reads too (a scenario's, with --scenario).
    clock: Clock
    placed: Callable[[Sequence[Placement]], None] = _ignore
    cycled: Callable[[CycleReport], None] = _ignore
    #: Print the cluster state after every change (`--show-state`); the dashboard shows it.
    show_state: bool = False
    next_cycle: float = field(init=False)
    #: The cluster state last printed, so the terminal shows only changes.
    shown: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self.next_cycle = time.monotonic() + self.interval

    def tick(self) -> None:
        step = self.telemetry.step(time.time())
        # After the step: a scenario's clock has just moved to this tick's instant.
        now = self.clock.now().timestamp()
        self.latest[:] = [step]
        self.view.refresh_once()
        if self.policy_files is not None:
            self.policy_files.poll()
        self.loader.sync()
        # The recorder is told each step as it happens, so the log reads in the loop's order.
        self.recorder.observe_inputs(now, self.view.columns())
        placements = self.scheduler.schedule_pending()
        self.placed(placements)
        self.recorder.observe_placements(now, placements)
        self.reconciler.reconcile()
        if time.monotonic() >= self.next_cycle:
            report = self.descheduler.run_cycle()
            self.next_cycle = time.monotonic() + self.interval
            self.cycled(report)
            self.recorder.observe_cycle(now, report)
        columns = self.view.columns()
        self.recorder.observe(Tick(now=now, columns=columns, telemetry=step))
        if not self.show_state:
            return
        state = describe_state(self.cluster, columns)
        if state != self.shown:
            print(state, flush=True)
            self.shown = state


def pod_usage(state: CycleState, step: TelemetryStep | None) -> PodUsage:
    """Each pod's CPU as a share of its node (0..100), as container metrics would tell."""
    if step is None:
        return {}
    usage: dict[Any, dict[str, float]] = {}
    for pod in state.pods:
        load = step.nodes.get(pod.node_name) if pod.node_name is not None else None
        cores = step.pod_cpu.get((pod.namespace, pod.name))
        if load is None or cores is None or load.cores <= 0:
            continue
        share = 100.0 * cores / load.cores
        usage[(pod.namespace, pod.name)] = {
            Signal.CPU_UTILIZATION.value: share,
            Signal.CPU_COMBINED.value: share,
        }
    return usage


def apply_policy_files(path: Path, cluster: InMemoryCluster) -> None:
    """Make the cluster's TASPolicy objects equal `--policies`, as `kubectl apply` would.

    The policies then reach the components the way they do on a real cluster (the store
    follows the cluster's objects), and the controller has objects to write status to.
    """
    keys: set[PolicyKey] = set()
    try:
        files = policy_files(path)
    except OSError as error:  # a directory that went away: as if empty
        log.error("Cannot list policies in %s: %s", path, error)
        files = []
    for file in files:
        try:
            # The components' one reader (`tas.policies.documents`), which sees duplicate keys.
            documents = list(read_documents(file.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
            log.error("Cannot read policies from %s: %s", file, error)
            return  # keep what the cluster has until the file reads again
        for document in documents:
            body = document.body
            if not isinstance(body, dict) or body.get("kind") != "TASPolicy":
                continue
            try:
                key = policy_key_of(body)
            except ValueError as error:
                log.error("%s: %s", file, error)
                continue
            keys.add(key)
            if document.duplicates:
                # As `kubectl apply` (and `tas validate`) refuse it: the object stays as it was.
                for duplicate in document.duplicates:
                    log.error(
                        "%s:%d: %s: %s; policy %s left as it was",
                        file,
                        duplicate.line,
                        duplicate.path,
                        duplicate.why,
                        key,
                    )
                continue
            cluster.apply_policy(body)
    for stale in cluster.list_policy_documents():
        if stale.key not in keys:
            cluster.delete_policy(stale.key)


def print_banner(dashboard: str, extender: str, about: str) -> None:
    print(
        f"""
Telemetry-aware scheduling on the embedded cluster.

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


def describe_state(cluster: InMemoryCluster, columns: MetricColumns) -> str:
    """One line per node: health value, violating labels, and the demo pods on it."""
    lines = ["-- cluster state --"]
    health = columns.get(MetricName("health_metric"), {})
    pods = [p for p in cluster.list_pods() if POLICY_LABEL in p.labels]
    for node in cluster.list_nodes():
        value = health.get(node.name)
        labels = [f"{k}={v}" for k, v in sorted(node.labels.items()) if v == "violating"]
        on_node = [
            p.name
            + (
                f" [{POD_VIOLATION_LABEL}={p.labels[POD_VIOLATION_LABEL]}]"
                if POD_VIOLATION_LABEL in p.labels
                else ""
            )
            for p in pods
            if p.node_name == node.name
        ]
        lines.append(
            f"{node.name}: health={'?' if value is None else f'{value:g}'} "
            f"labels={','.join(labels) or '-'} pods={', '.join(on_node) or '-'}"
        )
    pending = [p.name for p in pods if p.node_name is None]
    if pending:
        lines.append(f"pending: {', '.join(pending)}")
    return "\n".join(lines)


__all__ = ["DESCRIPTION", "NODES", "add_arguments", "run"]
