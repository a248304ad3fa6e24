"""The worlds `tas run` shows on the page, each wired into the one closed loop.

- `demo_setup`: the health-metric demo (`tas_inmemory.demo`) on the in-memory cluster, node
  telemetry as textfiles the workload model writes (`tas_inmemory.live_telemetry`), the policies
  followed from `--policies` into the cluster as `kubectl apply` would (`tas_inmemory.apply`);
- `scenario_setup`: a simulator scenario, the very run `tas simulate` makes for `ours`
  (`tas_simulator.runner.build_run`), its extender behind HTTP, stepped in real time.

Either is a `Setup`: the cluster, the components (the extender's server bound, not started;
the policy controller; the descheduler), the loop (`tas_inmemory.loop.ClosedLoop`, composed with
the reconciler and the scheduler model by `tas_inmemory.compose.compose_loop`) and its `RealTime`
driver, and what the page offers and says. The command (`tas_cli.run`) parses and checks, and
`tas_dashboard.runtime` runs it; a problem the user can fix is a `tas.runtime.process.SetupError`.
"""

from __future__ import annotations

import dataclasses
import functools
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from descheduler.assemble import assemble_descheduler
from descheduler.config import ConfigError, load_config_file
from descheduler.cycle import Descheduler, Mode
from descheduler.self_metrics import DeschedulerMetrics
from extender.app import create_app
from extender.decisions import DecisionLog
from extender.server import ExtenderServer
from extender.settings import ExtenderSettings
from tas.adapters.metrics import open_metric_view
from tas.clock import Clock, SystemClock
from tas.metrics import MetricSourceError
from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.files import PolicyFileWatcher
from tas.policies.store import PolicyStore
from tas.runtime import process
from tas_dashboard.app import Controls
from tas_dashboard.recorder import SHOWN_METRICS
from tas_herd.readings import herd_readings
from tas_inmemory.apply import apply_policy_files
from tas_inmemory.cluster import InMemoryCluster
from tas_inmemory.compose import compose_loop
from tas_inmemory.demo import (
    DEMO_APP,
    NODES,
    DemoWorld,
    build_demo_cluster,
    profile_of,
    write_start_metrics,
)
from tas_inmemory.extender_client import DEFAULT_EXTENDER_WEIGHT, HttpExtender
from tas_inmemory.live_telemetry import LiveTelemetry, LiveWorld, TelemetryStep
from tas_inmemory.loop import ClosedLoop, LoopHooks, RealTime

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "deploy" / "health-metric-demo"
#: What a taken port's error suggests: the flag of each server and a port that is rarely taken.
PORT_FLAGS = {"the extender": ("--listen", 19001), "the dashboard": ("--dashboard", 18080)}


class RunSettings(Protocol):
    """What a world reads of `tas run`'s settings (`tas_cli.run.RunCommandSettings`)."""

    @property
    def listen(self) -> tuple[str, int]: ...
    @property
    def policies(self) -> Path: ...
    @property
    def descheduler_config(self) -> Path: ...
    @property
    def mode(self) -> str: ...
    @property
    def sync_period(self) -> float | None: ...
    @property
    def descheduling_interval(self) -> float | None: ...
    @property
    def speed(self) -> float | None: ...
    @property
    def replicas(self) -> int | None: ...
    @property
    def seed(self) -> int: ...


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


def demo_setup(settings: RunSettings, metrics_dir: Path, registry: CollectorRegistry) -> Setup:
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
    decisions = DecisionLog(ExtenderSettings().decision_log_size)
    extender = bind_server(
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
    loop = compose_loop(
        world=world,
        cluster=cluster,
        view=view,
        policies=store,
        clock=clock,
        step_seconds=sync,
        sync_period=sync,
        descheduling_interval=interval,
        extender=HttpExtender(extender.url, weight=DEFAULT_EXTENDER_WEIGHT),
        descheduler=descheduler,
        extra_metrics=SHOWN_METRICS,
        # The policy files and the cluster's TASPolicies, before the controller reconciles.
        hooks=LoopHooks(on_sync=[files.poll, loader.sync]),
    )
    # The page opens on the policies applied and a first refresh of the values they name.
    files.poll()
    loader.sync()
    world.advance(0.0, sync)
    view.refresh_once()
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


def scenario_setup(name: str, settings: RunSettings, registry: CollectorRegistry) -> Setup:
    """`name`: the scenario file or name (`--scenario`): `tas simulate`'s run for `ours`
    (`tas_simulator.runner.build_run`), its extender behind HTTP, stepped in real time."""
    from tas_simulator.contenders import Unavailable, resolve
    from tas_simulator.live import ScenarioControls, ScenarioPage
    from tas_simulator.runner import ExtenderParts, build_run
    from tas_simulator.scenario import ScenarioError, load_scenario

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
            herd=herd_readings(tracker, view, now=clock.time),
        )
        server = bind_server(app, settings.listen, "the extender")
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
        extra_metrics=SHOWN_METRICS,  # what the page shows besides what the components read
    )
    assert run.descheduler is not None  # ours has one (checked above)
    (extender,) = servers
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


def bind_server(app: Any, address: tuple[str, int], what: str) -> ExtenderServer:
    return process.bind(
        address,
        lambda host, port: ExtenderServer(app, host=host, port=port, log_level="warning"),
        what=what,
        if_taken=port_listener(address, what).if_taken,
    )


def port_listener(address: tuple[str, int], what: str) -> process.Listener:
    host, port = address
    flag, spare = PORT_FLAGS[what]
    return process.Listener(
        address,
        what,
        if_taken=f"Something else is serving there; pick another port with {flag} "
        f'{host}:{spare} (make run ARGS="{flag} {host}:{spare}"), or stop what '
        f"holds it (ss -ltnp 'sport = :{port}' shows which)",
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
