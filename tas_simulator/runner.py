"""One scenario, one seed, every contender: the closed loop on a virtual clock.

Each contender gets its own world built from the same scenario and seed, so they face the
same nodes, pods, usage and events. Every step (the scenario's `step`), in this order:

1. the scenario's events that are due (health values, taints, scaling, nodes, faults);
2. the workload model at this instant (usage, demand, pressure), its counters integrated and
   OOM kills made; a scrape when one is due;
3. every sync period: the metric view refreshes from the pipeline, the policy controller
   reconciles (contenders that run one);
4. every descheduling interval: the descheduler's cycle (Automatic mode);
5. the kube-scheduler model places pending pods (the extender asked in-process).

Everything that decides is the production code; the world, the kube-scheduler model and the
pipeline are the same for every contender. Determinism: every random choice comes from the
seed, nothing reads the wall clock or iterates an unordered collection to decide, so the same
seed gives the same figures.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from descheduler.assemble import assemble_descheduler
from descheduler.cycle import CycleReport, Descheduler, Mode
from descheduler.framework import Result
from descheduler.plugins import node_affinity, tas_violations
from descheduler.self_metrics import DeschedulerMetrics
from descheduler.usage import PrometheusQueries
from extender.settings import ExtenderSettings
from policy_controller.settings import DEFAULT_CONTROLLER, ControllerSettings
from tas.calibration.curve import CurveLearner
from tas.cluster.interface import ChangeType, ClusterChange, NotFoundError, ResourceKind
from tas.cluster.model import Node, Pod
from tas.metrics.refreshing import RefreshingMetricView
from tas.metrics.source import Fetched, Sample
from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.model import parse_policy
from tas.policies.store import PolicyStore
from tas.types import MetricName, Namespace, NodeName
from tas_herd.placements import PlacementTracker, follow_cluster
from tas_inmemory.compose import compose_loop
from tas_inmemory.loop import ClosedLoop, LoopHooks, LoopObserver
from tas_inmemory.scheduler import Extender, ScheduleResult
from tas_simulator.baselines import (
    VOLCANO_METRICS_INTERVAL,
    OpenShiftSoftTainter,
    VmiState,
    VolcanoScheduler,
    VolcanoUsage,
    add_migration_awareness,
    volcano_estimate,
)
from tas_simulator.clock import VirtualClock
from tas_simulator.contenders import (
    CONTENDERS,
    Contender,
    ContenderSpec,
    ExtenderKind,
    Staleness,
    Unavailable,
    resolve,
)
from tas_simulator.extenders import OursExtender, TasExtender
from tas_simulator.figures import FigureRecorder, Figures, Series
from tas_simulator.pipeline import (
    VOLCANO_HISTORY,
    ModelSource,
    PrometheusApi,
    ScrapeStore,
    perfect,
)
from tas_simulator.scenario import Scenario
from tas_simulator.simulated_world import SimulatedWorld
from tas_simulator.world import InformerOrder, ModelState, World

log = logging.getLogger(__name__)

Progress = Callable[[float], None]
#: Staleness that never comes: TAS keeps every value forever.
NEVER = 1e15
#: A breaker share no evaluation can exceed (more than all of the nodes never violate).
NO_BREAKER = 1.0

#: The plugins that evict because a policy's deschedule rule named the node: TASViolations
#: directly, RemovePodsViolatingNodeAffinity through the `<policy>=violating` label the
#: controller writes (in these scenarios the only node affinity a pod can come to violate).
RULE_STRATEGIES = frozenset({str(tas_violations.NAME), str(node_affinity.NAME)})


@dataclass
class RunResult:
    contender: str
    figures: Figures
    series: Series
    #: When each eviction happened (seconds into the run), for checks beyond the figures.
    eviction_times: list[float] = field(default_factory=list)


@dataclass
class ScenarioResult:
    scenario: Scenario
    seed: int
    results: dict[str, RunResult] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)


def max_age(contender: Contender, scenario: Scenario) -> float | None:
    """The view's `max_age`: None for ours, which runs with the components' default (five
    sync periods, stretched to a slower pipeline's cadence: `tas.metrics.refreshing`)."""
    if contender.spec.staleness is Staleness.NEVER:
        return NEVER
    if contender.spec.staleness is Staleness.OURS:
        return None
    # Queried each cycle: the answer of the last refresh only (a step of slack for rounding).
    # Its values carry the query's evaluation time (`QueryAnswers`), not the scrape's, so the
    # pipeline's delay and scrape interval do not make a fresh answer look stale.
    return contender.sync_period(scenario) + scenario.step / 2


class QueryAnswers:
    """A `MetricSource` answering the way a Prometheus instant query does, for contenders that
    query Prometheus each cycle (`Staleness.QUERY`, e.g. Volcano's LoadAware).

    Prometheus stamps every element of an instant query's result with the evaluation time, not
    with the time of the underlying scrape (prometheus.io/docs/prometheus/latest/querying/api/
    "Instant queries": `time` is the evaluation timestamp; "Instant vectors" in the querying
    basics: the value is the latest sample within the lookback window, 5m by default), and such
    a component uses whatever the query returns. Stamped with the scrape time instead, a value
    is already `delay` to `delay + scrapeInterval` old when it is fetched, and with
    `max_age = syncPeriod + step/2` every value of a scenario whose delay is at least the sync
    period was dropped as stale: the contender saw no node usage at all.

    A failed query (an outage) answers nothing, so the last answer goes stale one sync period
    later, as before: only the latest answer counts.
    """

    kind = "simulator-query"

    def __init__(self, source: ModelSource, clock: VirtualClock) -> None:
        self.source = source
        self.clock = clock

    def fetch(self, names: frozenset[MetricName]) -> Fetched:
        fetched = self.source.fetch(names)
        now = self.clock.time()
        columns = {
            name: {node: Sample(sample.value, now) for node, sample in column.items()}
            for name, column in fetched.columns.items()
        }
        return dataclasses.replace(fetched, columns=columns)

    def close(self) -> None:
        self.source.close()


@dataclass(frozen=True)
class ExtenderParts:
    """What `ours`' extender is built from: the policies, the metric view, the clock, herd
    control's tracker, its settings (None: `tas extender`'s defaults) and its weight."""

    store: PolicyStore
    view: RefreshingMetricView
    clock: VirtualClock
    placements: PlacementTracker
    settings: ExtenderSettings | None
    weight: int


#: Builds `ours`' extender: in-process (`tas simulate`), or behind HTTP (`tas run --scenario`).
ExtenderFactory = Callable[[ExtenderParts], Extender]


def in_process(parts: ExtenderParts) -> Extender:
    """`ours`' extender as `tas simulate` calls it: the shipped service, in-process."""
    return OursExtender(
        store=parts.store,
        view=parts.view,
        clock=parts.clock,
        weight=parts.weight,
        placements=parts.placements,
        # None: `tas extender`'s defaults (estimates weigh in scoring only; filtering on them
        # is an opt-in per policy, `--filter-on-estimates`).
        settings=parts.settings,
    )


@dataclass
class Run:
    """One contender's closed loop on one scenario and seed, ready to step (`step(index)`),
    and the parts a page shows or explains."""

    scenario: Scenario
    contender: Contender
    clock: VirtualClock
    world: World
    source: ModelSource
    view: RefreshingMetricView
    policies: PolicyStore
    descheduler: Descheduler | None
    recorder: FigureRecorder
    loop: ClosedLoop

    @property
    def steps(self) -> int:
        return max(1, math.floor(self.scenario.duration / self.scenario.step + 1e-9))

    def step(self, index: int) -> None:
        self.loop.step(index * self.scenario.step)

    def result(self) -> RunResult:
        """The figures, once every step has run (the clock at the scenario's end)."""
        self.clock.advance_to(self.steps * self.scenario.step)
        return RunResult(
            self.contender.name,
            self.recorder.finish(),
            self.recorder.series,
            eviction_times=[t for t, _ in self.recorder.evictions],
        )


def run_contender(
    scenario: Scenario,
    contender: Contender,
    *,
    seed: int,
    progress: Progress | None = None,
    clairvoyant: bool = False,
    node_series: bool = True,
) -> RunResult:
    """One contender's run. `clairvoyant`: the same run reading true model values, with no
    scrape interval, window or delay and no outage or bogus value (the clairvoyant reference:
    what the contender's rules do with perfect information). `node_series`: keep each node's
    utilization and pressure over time (the node chart's; a sweep draws none)."""
    run = build_run(
        scenario, contender, seed=seed, clairvoyant=clairvoyant, node_series=node_series
    )
    report_every = max(1, run.steps // 100)
    for index in range(run.steps):
        run.step(index)
        if progress is not None and (index % report_every == 0 or index == run.steps - 1):
            progress((index + 1) / run.steps)
    return run.result()


def _controller_settings(spec: ContenderSpec) -> ControllerSettings | None:
    """The policy controller a contender runs: `tas controller`'s defaults, without the
    circuit breaker for TAS's enforcer (it labels whatever violates, however many nodes at
    once); None when it runs none."""
    if not spec.controller:
        return None
    if spec.controller_breaker:
        return DEFAULT_CONTROLLER
    return ControllerSettings(max_violating_node_share=NO_BREAKER)


def first_cycle(seed: int, interval: float, step: float, phase: float | None = None) -> float:
    """When a descheduler's first cycle falls: at a seeded point within its first interval
    (`phase`: the scenario's own share of the interval instead).

    A descheduler in a cluster was started long before any scenario begins (upstream cycles at
    start-up, then every interval: `wait.NonSlidingUntil` in kubernetes-sigs/descheduler's
    pkg/descheduler/descheduler.go), so where its cycles fall in the scenario's hour is
    arbitrary. Each seed draws one share of the interval, the same for every contender, so none
    is favoured by its phase; an hourly descheduler then cycles once in a one-hour scenario, at
    a time that differs by seed, instead of never. At least one step in, after the world's first
    metrics."""
    share = random.Random(f"{seed}/descheduler-phase").random() if phase is None else phase
    return max(step, share * interval)


def build_run(
    scenario: Scenario,
    contender: Contender,
    *,
    seed: int,
    clairvoyant: bool = False,
    extender: ExtenderFactory = in_process,
    mode: Mode = Mode.AUTOMATIC,
    descheduler_metrics: DeschedulerMetrics | None = None,
    observers: Sequence[LoopObserver] = (),
    watchers: Sequence[Callable[[ModelState, float], None]] = (),
    extra_metrics: Iterable[MetricName] = (),
    node_series: bool = True,
) -> Run:
    """One contender's loop, built as `tas simulate` runs it: the contender's choices (its
    extender, descheduler, hooks) made here, the loop composed by `tas_inmemory.compose`.
    `extender` builds ours' extender; `mode`, `descheduler_metrics`, `observers` (of the
    loop's decisions), `watchers` (of each step's model state) and `extra_metrics` (fetched
    besides what the components read: what the page shows) are what `tas run --scenario` adds;
    `node_series` as `run_contender` says."""
    if clairvoyant:
        scenario = dataclasses.replace(scenario, pipeline=perfect(scenario.step))
    clock = VirtualClock()
    world = World(scenario, clock=clock, seed=seed)
    for document in scenario.policies:
        world.cluster.apply_policy(document)
    volcano = contender.spec.volcano_scheduler
    # The Prometheus it reads: the cluster's, or its source's own (Volcano's installer scrapes
    # every 5 s); the clairvoyant reference reads true values whatever the source ships.
    pipeline = scenario.pipeline if clairvoyant else contender.pipeline(scenario)
    store_ = ScrapeStore(world, pipeline, history=VOLCANO_HISTORY if volcano else 0.0)
    source = ModelSource(store_, clock, faults=not clairvoyant)
    sync_period = contender.sync_period(scenario)
    view = RefreshingMetricView(
        QueryAnswers(source, clock) if contender.spec.staleness is Staleness.QUERY else source,
        sync_period=sync_period,
        max_age=max_age(contender, scenario),
        clock=clock,
    )
    policies = PolicyStore()
    ClusterPolicyLoader(world.cluster, policies).sync()
    # The same seed for every contender: where they decide alike (the kube-scheduler model's
    # ties), they face the same chance.
    rng = random.Random(f"{seed}/kube-scheduler")
    chosen: Extender | None = None
    placements: PlacementTracker | None = None
    if contender.spec.extender is ExtenderKind.OURS:
        placements = follow_placements(world, clock)
        chosen = extender(
            ExtenderParts(
                store=policies,
                view=view,
                clock=clock,
                placements=placements,
                settings=contender.extender,
                weight=contender.weight,
            )
        )
    elif contender.spec.extender is ExtenderKind.TAS:
        chosen = TasExtender(
            store=policies,
            view=view,
            rng=random.Random(f"{seed}/tas-ties"),
            weight=contender.weight,
        )
    usage_plugin: VolcanoUsage | None = None
    if volcano:
        usage_plugin = _volcano_usage(world, clock)
        chosen = VolcanoScheduler(usage_plugin, functools.partial(_requested_by_node, world))
    descheduler = None
    soft_tainter = None
    if contender.config is not None:
        knows = contender.spec.knows_policies
        reads_pod_usage = contender.spec.pod_usage
        descheduler = assemble_descheduler(
            config=contender.config,
            # Every descheduler meets pods in the same seeded order, not in name order.
            cluster=InformerOrder(world.cluster, random.Random(f"{seed}/informer-order")),
            metric_view=view,
            policies=(lambda: policies.snapshot().policies) if knows else (lambda: {}),
            mode=mode,
            clock=clock,
            metrics=descheduler_metrics,
            # Ours reads it as `tas descheduler` does (production's reading of the container
            # series); Volcano its own query.
            pod_usage_feed=source.pod_usage_feed() if reads_pod_usage and not volcano else None,
            pod_usage=source.volcano_pod_usage_source if reads_pod_usage and volcano else None,
            prometheus=functools.partial(
                PrometheusQueries, transport=PrometheusApi(source).transport()
            ),
        )
        if contender.spec.openshift_soft_tainter:
            soft_tainter = OpenShiftSoftTainter.from_config(contender.config)
        if contender.document is not None:
            add_migration_awareness(
                descheduler,
                contender.document,
                vmis=functools.partial(_vmi_of, world, clock),
                now=lambda: clock.elapsed,
            )
    recorder = FigureRecorder(
        world,
        [parse_policy(d) for d in scenario.policies],
        warmup=scenario.warmup,
        strategies=_evicting_plugins(contender),
        rule_strategies=RULE_STRATEGIES,
        node_series=node_series,
    )
    on_sync: list[Callable[[], None]] = []
    if usage_plugin is not None:
        plugin = usage_plugin
        on_sync.append(lambda: plugin.refresh(source.volcano_node_usage()))
    after_cycle: list[Callable[[], None]] = []
    if soft_tainter is not None:
        # Its own controller, requeued every deschedulingIntervalSeconds.
        tainter = soft_tainter
        values = functools.partial(_query_values, source, clock)
        after_cycle.append(lambda: tainter.sync(world.cluster, values))
    hooks = LoopHooks(
        on_sync=on_sync,
        before_cycle=[functools.partial(_publish_metrics_server, world, source)],
        after_cycle=after_cycle,
    )
    interval = contender.interval(scenario)
    loop = compose_loop(
        world=SimulatedWorld(world, store_, watchers=[recorder.model, *watchers]),
        cluster=world.cluster,
        view=view,
        policies=policies,
        clock=clock,
        step_seconds=scenario.step,
        sync_period=sync_period,
        descheduling_interval=interval,
        first_cycle=first_cycle(seed, interval, scenario.step, scenario.descheduling_phase),
        extender=chosen,
        tie_breaks=rng,
        controller=_controller_settings(contender.spec),
        descheduler=descheduler,
        placements=placements,
        pod_usage=source.pod_usage_feed(),
        extra_metrics=extra_metrics,
        hooks=hooks,
        observers=[FigureObserver(world, recorder), *observers],
        pending=world.pending_count,
    )
    return Run(
        scenario, contender, clock, world, source, view, policies, descheduler, recorder, loop
    )


class FigureObserver(LoopObserver):
    """What the figures record of the loop's decisions: each eviction (with whether a policy's
    deschedule rule asked for it) and each round of placements."""

    def __init__(self, world: World, recorder: FigureRecorder) -> None:
        self.world = world
        self.recorder = recorder

    def cycled(self, t: float, report: CycleReport) -> None:
        evicted = [d for d in report.decisions if d.result == Result.EVICTED]
        found = [
            (slot, d.strategy)
            for d in evicted
            if (slot := self.world.slot_of(d.namespace, d.name)) is not None
        ]
        self.recorder.evicted(
            t,
            [slot for slot, _ in found],
            for_deschedule_rule=sum(d.strategy in RULE_STRATEGIES for d in evicted),
            strategies=[strategy for _, strategy in found],
        )

    def placed(self, t: float, placements: Sequence[ScheduleResult]) -> None:
        self.recorder.placed(placements)


def _evicting_plugins(contender: Contender) -> list[str]:
    """The plugins of a contender's descheduler that may evict, by name (none without one)."""
    if contender.config is None:
        return []
    return sorted(
        {
            str(plugin.name)
            for profile in contender.config.profiles
            for plugin in (*profile.deschedule, *profile.balance)
        }
    )


def follow_placements(world: World, clock: VirtualClock) -> PlacementTracker:
    """Herd control as `tas extender` runs it (`follow_cluster`: pods, and each node's capacity
    from its allocatable), fed by the in-memory cluster's changes, with `tas extender`'s
    defaults: deploy/cluster/extender.yaml sets no `--estimate-window`, so a pod counts for
    `tas_herd.placements.DEFAULT_WINDOW` (90 s) after its bind, or for what the tracker learns from
    what the cluster shows. Never the scenario's true metric window or start-up: no cluster
    tells ours those. Each node's pressure curve is learned from the view's columns, as
    `tas extender` learns it by default (`--learn-pressure-curve on`)."""
    tracker = PlacementTracker(curves=CurveLearner())
    cluster = world.cluster

    def find_pod(namespace: str, name: str) -> Pod | None:
        try:
            return cluster.get_pod(Namespace(namespace), name)
        except NotFoundError:
            return None

    def find_node(name: str) -> Node | None:
        try:
            return cluster.get_node(NodeName(name))
        except NotFoundError:
            return None

    listen = follow_cluster(tracker, find_pod=find_pod, find_node=find_node, clock=clock)
    cluster.subscribe(listen)
    # The nodes that were there first, as an informer's first list tells them (ADDED).
    for node in cluster.list_nodes():
        listen(ClusterChange(ResourceKind.NODE, ChangeType.ADDED, node.name))
    return tracker


def _volcano_usage(world: World, clock: VirtualClock) -> VolcanoUsage:
    """Volcano's `usage` plugin over the world: nodes, and the estimates of pods bound in the
    last `metricsInterval` (its shadow load cache), summed per node with arrays (a burst of
    thousands of pods is scored pod by pod)."""
    estimates = np.array(
        [volcano_estimate(w.requests) for w in world.scenario.workloads], dtype=np.float64
    ).reshape(-1, 2)

    def nodes() -> dict[NodeName, Node]:
        return {node.name: node for node in world.cluster.list_nodes()}

    def recent() -> dict[NodeName, tuple[float, float]]:
        since = np.asarray(world.slot_since.view, dtype=np.float64)
        where = np.asarray(world.slot_node.view, dtype=np.int64)
        with np.errstate(invalid="ignore"):
            slots = np.flatnonzero(
                (where >= 0) & (since > clock.elapsed - VOLCANO_METRICS_INTERVAL)
            )
        if not len(slots):
            return {}
        workloads = np.asarray(world.slot_workload_index.view, dtype=np.int64)[slots]
        return _summed_by_node(world, where[slots], estimates[workloads])

    return VolcanoUsage(nodes=nodes, recent=recent, now=lambda: clock.elapsed)


def _requested_by_node(world: World) -> dict[NodeName, tuple[float, float]]:
    """What the pods bound to each node request (cpu cores, memory bytes), summed with arrays
    (a burst of thousands of pods is scored pod by pod)."""
    workloads_of = world.scenario.workloads
    requests = np.array(
        [(w.requests.get("cpu", 0.0), w.requests.get("memory", 0.0)) for w in workloads_of],
        dtype=np.float64,
    ).reshape(-1, 2)
    where = np.asarray(world.slot_node.view, dtype=np.int64)
    bound = where >= 0
    if not bound.any():
        return {}
    workloads = np.asarray(world.slot_workload_index.view, dtype=np.int64)[: len(where)][bound]
    return _summed_by_node(world, where[bound], requests[workloads])


def _summed_by_node(
    world: World, nodes: npt.NDArray[np.int64], amounts: npt.NDArray[np.float64]
) -> dict[NodeName, tuple[float, float]]:
    """Each pod's (cpu, memory) `amounts` row summed on its node (`nodes`, the node indices
    in the same order), for the nodes with any."""
    n = world.node_count
    cpu = np.bincount(nodes, weights=amounts[:, 0], minlength=n)
    memory = np.bincount(nodes, weights=amounts[:, 1], minlength=n)
    names = world.node_names
    cpu_of, memory_of = cpu.tolist(), memory.tolist()  # plain floats: no numpy scalar per node
    return {
        names[i]: (cpu_of[i], memory_of[i])
        for i in np.flatnonzero((cpu > 0) | (memory > 0)).tolist()
    }


def _vmi_of(world: World, clock: VirtualClock, pod: Pod) -> VmiState | None:
    """The VMI behind a VM's launcher pod (`migration: live`), as KubeVirt's status says it:
    a migration starts when its target pod is bound and ends when the VM resumes there. A VM
    restarted rather than migrated has no migration in its status (its slot keeps the VMI's
    identity, so the plugin's history of it stays)."""
    slot = world.slot_of(pod.namespace, pod.name)
    if slot is None or world.scenario.workloads[world.slot_workload[slot]].migration != "live":
        return None
    uid = f"vmi-{slot}"
    copied = float(world.slot_ghost_until.data[slot])
    ready = float(world.slot_ready.data[slot])
    pause = world.scenario.live_migration.pause
    if not math.isfinite(copied) or math.isnan(ready) or abs(ready - (copied + pause)) > 1e-6:
        return VmiState(uid)
    start = float(world.slot_since.data[slot])
    if clock.elapsed < ready:
        return VmiState(uid, migration_start=start)
    return VmiState(uid, migration_start=start, migration_end=ready)


def _query_values(
    source: ModelSource, clock: VirtualClock, query: str
) -> dict[NodeName, float] | None:
    """A Prometheus instant query's values per node (None when the query fails)."""
    fetched = QueryAnswers(source, clock).fetch(frozenset({MetricName(query)}))
    if fetched.errors:
        return None
    return {node: s.value for node, s in fetched.columns.get(MetricName(query), {}).items()}


def _publish_metrics_server(world: World, source: ModelSource) -> None:
    """What metrics-server answers, for descheduler plugins that read it (upstream
    LowNodeUtilization's `metricsUtilization.source: KubernetesMetrics`)."""
    nodes, pods = source.metrics_server()
    world.cluster.set_extras(node_metrics=nodes, pod_metrics=pods)


def run_scenario(
    scenario: Scenario,
    *,
    contenders: Sequence[str] = tuple(CONTENDERS),
    seed: int | None = None,
    progress: Callable[[str, float], None] | None = None,
) -> ScenarioResult:
    chosen_seed = scenario.seed if seed is None else seed
    result = ScenarioResult(scenario, chosen_seed)
    for name in contenders:
        resolved = resolve(name, scenario.contenders.get(name))
        if isinstance(resolved, Unavailable):
            result.unavailable[name] = resolved.reason
            continue
        report: Progress | None = None
        if progress is not None:
            report = _progress_for(progress, name)
        result.results[name] = run_contender(scenario, resolved, seed=chosen_seed, progress=report)
    return result


def _progress_for(progress: Callable[[str, float], None], name: str) -> Progress:
    def report(fraction: float) -> None:
        progress(name, fraction)

    return report
