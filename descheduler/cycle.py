"""One descheduling cycle: read the world once, check the circuit breaker, run every enabled
plugin of every profile through one set of rails, keep the soft taints in step.

As upstream, every profile's deschedule plugins run before any profile's balance plugins, and
only Ready nodes (matching `nodeSelector`) are worked on. The eviction budget and the per-owner
cooldown are shared by all profiles, so limits hold for the whole cycle, whatever the
configuration; the cooldown guards the plugins each profile says it guards. Plugins run through
their contract (`descheduler.framework.Plugin`), never by name; two are named here for what they
feed beyond their own run: TASViolations' violation source is what the circuit breaker judges,
and the SoftTainter's taints follow the classification after every plugin has run.

The policies' deschedule rules are evaluated once per cycle, into the cycle state; the circuit
breaker (`tas.breaker`, as in the extender and the controller) judges that evaluation and
TASViolations acts on it.

Each profile's plugins are built once (`Plugin.new`, by `descheduler.assemble`), so what a
plugin remembers across cycles (LoadAware's hot nodes and peaks) is its own. A plugin's run
gets only the generic handle (`descheduler.framework.PluginContext`); the descheduler's owner
cooldown and reservations (`Reservations`) reach the plugins that read or fill them when they
are built, from `descheduler.assemble`, which gives the same objects to the cycle. A dry run
(`descheduler.assemble.dry_run`: `tas explain`) runs the next cycle in Predictive mode over a
read-only cluster, on copies of that memory (`Descheduler.continue_from`).

When the circuit breaker trips, every node that violates at that moment gets a Warning Event
(`DeschedulingHalted`), so `kubectl describe node` shows why nothing moves.
"""

from __future__ import annotations

import copy
import enum
import functools
import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from descheduler.config import DeschedulerConfig
from descheduler.evictor import (
    Blocked,
    Cooldown,
    CycleRails,
    EvictionBudget,
    EvictionDecision,
    PodEvictor,
)
from descheduler.framework import (
    RUN_POINTS,
    AnyPlugin,
    PluginContext,
    PluginName,
    PluginRun,
    PodUsage,
    PodUsageSource,
    PrometheusClient,
    Result,
    UnreadPodUsage,
)
from descheduler.node_classes import Classification
from descheduler.nodefit import NodeFitter
from descheduler.plugins import soft_tainter, tas_violations
from descheduler.plugins.default_evictor import ProtectionRules
from descheduler.profiles import Profile
from descheduler.self_metrics import DeschedulerMetrics
from descheduler.state import CycleState
from descheduler.tainter import (
    RESERVED_KEY,
    TaintChanges,
    TaintHolds,
    reservation,
    sync_soft_taints,
    sync_taint,
)
from descheduler.usage import ClusterUsage, CycleCachedPrometheus
from descheduler.violations import BreakerJudgement, ViolationSource, judge_breaker
from tas.calibration import Calibration
from tas.clock import Clock
from tas.cluster.interface import Cluster, ClusterError
from tas.cluster.model import Node, ObjectReference
from tas.metrics.view import MetricView
from tas.policies.model import TASPolicy
from tas.types import MetricName, Namespace, NodeName, PolicyKey

log = logging.getLogger(__name__)

PolicySource = Callable[[], Mapping[PolicyKey, TASPolicy]]


class Reservations:
    """The nodes a cycle's plugins reserve, each for a pending pod (its uid): the cycle keeps
    the reservation taint on exactly these until its next cycle. A plugin is built with
    `reserve` (`descheduler.assemble`: MakeRoomForPending) and asks again each cycle it still
    needs a node."""

    def __init__(self) -> None:
        self.nodes: dict[NodeName, str] = {}

    def reserve(self, node: NodeName, pod_uid: str) -> None:
        self.nodes[node] = pod_uid

    def new_cycle(self) -> dict[NodeName, str]:
        """Forget the last cycle's reservations; the new cycle's, filled as plugins reserve."""
        self.nodes = {}
        return self.nodes


class Mode(enum.StrEnum):
    PREDICTIVE = "Predictive"
    AUTOMATIC = "Automatic"


@dataclass
class CycleReport:
    """What one cycle decided, as data (tests and the CLI read it)."""

    skipped: str | None = None
    decisions: list[EvictionDecision] = field(default_factory=list)
    classifications: dict[str, Classification] = field(default_factory=dict)
    circuit_breaker: str | None = None
    taints: TaintChanges = field(default_factory=TaintChanges)
    #: Nodes a plugin reserved for a pending pod (its uid) until the next cycle.
    reserved: dict[NodeName, str] = field(default_factory=dict)
    #: What the reservations' taints came to in this cycle.
    reservations: TaintChanges = field(default_factory=TaintChanges)
    #: The pods plugins weighed that stayed, with the rail or the plugin's reason that held
    #: each (a filter's rejections only for the pods watched: `descheduler.assemble.dry_run`).
    blocked: list[Blocked] = field(default_factory=list)
    #: What a plugin learned of the cluster (LoadAware: each node's pressure curve, the
    #: metric lag and start-up it observed, its payback horizon); None: nothing learned.
    calibration: Calibration | None = None

    def by_result(self, result: str) -> list[EvictionDecision]:
        return [d for d in self.decisions if d.result == result]

    def blocked_of(self, namespace: str, name: str) -> list[Blocked]:
        return [b for b in self.blocked if (b.namespace, b.name) == (namespace, name)]


class Descheduler:
    """One descheduler's cycles over the parts it is given. Put together by
    `descheduler.assemble.assemble_descheduler` (which builds the plugins and the Prometheus
    client from the policy), never by hand."""

    def __init__(
        self,
        *,
        config: DeschedulerConfig,
        cluster: Cluster,
        metric_view: MetricView,
        policies: PolicySource,
        mode: Mode,
        clock: Clock,
        plugins: Mapping[tuple[str, PluginName], PluginRun],
        cooldown: Cooldown,
        reservations: Reservations,
        metrics: DeschedulerMetrics | None = None,
        pod_usage: PodUsageSource | None = None,
        prometheus: PrometheusClient | None = None,
    ) -> None:
        """`plugins`: each profile's plugin runs, by (profile, plugin name), built with
        `cooldown` and `reservations` where they read or fill them; `pod_usage`: per-pod usage
        (None: not measured), one of the usage sources the framework hands the plugins;
        `prometheus`: the client of the Prometheus the policy's `metricsProviders` names (None:
        none), which the framework hands the plugins (upstream's `Handle.PrometheusClient`)."""
        self.config = config
        self.cluster = cluster
        self.metric_view = metric_view
        self.policies = policies
        self.mode = mode
        self.clock = clock
        self.metrics = metrics
        self.pod_usage = pod_usage
        #: The per-owner cooldown: the evictor's rail, and the evictions the rebalancing
        #: plugins remember (`descheduler.evictor.CooldownMoves`, over this same object).
        self.cooldown = cooldown
        self.reservations = reservations
        #: Why the circuit breaker held evictions back in the last cycle (None: it did not).
        self.halted: str | None = None
        #: The policy's Prometheus client (a dry run reads through the same one).
        self.prometheus_client = prometheus
        self.prometheus = CycleCachedPrometheus(prometheus) if prometheus is not None else None
        self.usage = ClusterUsage(cluster, pod_usage=_counting_failures(pod_usage, metrics))
        #: Each profile's plugins, built once: what they remember outlives a cycle.
        self.plugins: dict[tuple[str, PluginName], PluginRun] = dict(plugins)
        #: When each soft taint was set: held for the classification's hold time.
        self.taint_holds = TaintHolds()
        #: Pods whose every filter rejection the cycle's report records (a dry run's).
        self.watched: frozenset[tuple[Namespace, str]] = frozenset()

    def plugin_run(self, profile: str, name: PluginName) -> PluginRun | None:
        """The plugin `name` as profile `profile` runs it (None: not enabled there)."""
        return self.plugins.get((profile, name))

    def continue_from(self, other: Descheduler) -> None:
        """Start from a copy of what `other` remembers between cycles (owner cooldowns, the
        plugins' memory, the soft taints' holds, the circuit breaker): nothing of `other`
        changes when this one runs (`descheduler.assemble.dry_run`). The cooldown, the
        reservations and the plugins built over them are copied together, so the copied
        plugins read and fill the copies."""
        self.cooldown, self.reservations, self.plugins = copy.deepcopy(
            (other.cooldown, other.reservations, other.plugins)
        )
        self.taint_holds = copy.deepcopy(other.taint_holds)
        self.halted = other.halted

    def wanted_metrics(self) -> set[MetricName]:
        """Metric names this configuration reads (policies' names are added by the caller)."""
        names: set[MetricName] = set()
        for profile in self.config.profiles:
            for plugin in (*profile.deschedule, *profile.balance):
                if plugin.metric_names is not None:
                    names |= plugin.metric_names(profile.args_of(plugin))
        return names

    def _in_scope(self, node: Node) -> bool:
        selector = self.config.node_selector
        return selector is None or selector.matches(node.labels)

    def _violation_source(self) -> ViolationSource:
        for profile in self.config.profiles:
            if profile.enables(tas_violations.PLUGIN):
                return profile.args_of(tas_violations.PLUGIN).source
        return ViolationSource.METRICS

    def run_cycle(self) -> CycleReport:
        started, started_cpu = time.perf_counter(), time.thread_time()
        report = CycleReport(reserved=self.reservations.new_cycle())
        nodes = {n.name: n for n in self.cluster.list_nodes() if self._in_scope(n)}
        ready = [n for n in nodes.values() if n.ready]
        if len(ready) < 2:
            report.skipped = f"fewer than two Ready nodes in scope ({len(ready)})"
            log.info("Cycle skipped: %s", report.skipped)
            # No plan goes on in a skipped cycle, so no node stays reserved: on a fleet down to
            # one Ready node, a reservation would keep every new pod off it.
            self._sync_reservations(dict(nodes), report)
            self._count_cycle("skipped")
            return report
        policies = self.policies()
        state = CycleState(
            nodes=nodes,
            pods=tuple(self.cluster.list_pods()),
            pdbs=tuple(self.cluster.list_pdbs()),
            policies=policies,
            metrics=self.metric_view.columns(),
            now=self.clock.now(),
            sample_times=_sample_times(self.metric_view),
        )
        judgement = judge_breaker(
            state, self._violation_source(), max_share=self.config.max_violating_node_share
        )
        self._apply_breaker(judgement, in_scope=len(ready))
        if judgement.reason is None:
            # What tells a flapping health metric from one evacuation paced over cycles (not
            # while the breaker is open: a broken metric's violations are not the nodes').
            self.cooldown.saw_violating(judgement.violating, state.now)
        report.circuit_breaker = self.halted
        rails = CycleRails(
            budget=EvictionBudget(self.config.limits),
            cooldown=self.cooldown,
            halted=self.halted,
            dry_run=self.mode is Mode.PREDICTIVE,
            decisions=report.decisions,
            failure_events=self.config.eviction_failure_events,
            grace_period_seconds=self.config.grace_period_seconds,
            blocked=report.blocked,
            watched=self.watched,
        )
        self.usage.new_cycle(state)
        if self.prometheus is not None:
            self.prometheus.new_cycle()
        evictors = {}
        for profile in self.config.profiles:
            rules = ProtectionRules.resolve(profile.evictor, cluster=self.cluster, pods=state.pods)
            evictors[profile.name] = PodEvictor(
                cluster=self.cluster,
                state=state,
                rules=rules,
                rails=rails,
                fitter=NodeFitter(state, rules.node_selector),
                metrics=self.metrics,
                profile=profile.name,
            )
        for point in RUN_POINTS:
            for profile in self.config.profiles:
                for plugin in profile.enabled_at(point):
                    self._run_plugin(profile, plugin, evictors[profile.name], report)
        self._sync_taints(state, report)
        done = len(report.by_result(Result.EVICTED)) + len(report.by_result(Result.DRY_RUN))
        log.info(
            '"Number of evictions/requests" totalEvicted=%d dryRun=%s refused=%d failed=%d',
            done,
            str(rails.dry_run).lower(),
            len(report.by_result(Result.REFUSED)),
            len(report.by_result(Result.FAILED)),
        )
        self._count_cycle("run")
        if self.metrics is not None:
            self.metrics.cycle_seconds.observe(time.perf_counter() - started)
            self.metrics.cycle_cpu_seconds.observe(time.thread_time() - started_cpu)
        return report

    def _count_cycle(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.cycles.labels(outcome).inc()

    def _run_plugin(
        self,
        profile: Profile,
        plugin: AnyPlugin,
        evictor: PodEvictor,
        report: CycleReport,
    ) -> None:
        run = self.plugins.get((profile.name, plugin.name))
        if run is None:
            return  # configures only, or acts after every plugin (the SoftTainter)
        if not plugin.runs_while_breaker_open and self.halted is not None:
            log.error("%s skipped: %s", plugin.name, self.halted)
            return
        evictor = evictor.for_plugin(
            plugin.name, guard_owners=profile.guards_owners(plugin), evacuating=plugin.evacuates
        )
        context = PluginContext(
            state=evictor.state,
            evictor=evictor,
            nodes=evictor.fitter,
            classified=functools.partial(self._classified, report, profile.name),
            declined=evictor.rails.declined,
            usage=self.usage,
            prometheus=self.prometheus,
            calibrated=functools.partial(self._calibrated, report),
        )
        run.run(context)

    def _apply_breaker(self, judgement: BreakerJudgement, *, in_scope: int) -> None:
        """Hold evictions back while the breaker is open; say so when it opens and closes."""
        reason = judgement.reason
        if reason is not None:
            log.error("Circuit breaker open: %s", reason)
            for node, why in judgement.violating.items():
                log.error("Circuit breaker: node %s: %s", node, why)
            if self.halted is None:
                self._announce_trip(judgement.violating, in_scope)
        elif self.halted is not None:
            log.warning(
                "Circuit breaker closed: %d of %d nodes violate; evictions resume",
                len(judgement.violating),
                in_scope,
            )
        self.halted = reason
        if self.metrics is not None:
            self.metrics.circuit_breaker_open.set(0 if reason is None else 1)

    def _announce_trip(self, violating: Mapping[NodeName, str], in_scope: int) -> None:
        message = (
            f"{len(violating)} of {in_scope} nodes violate at once: the descheduler treats it "
            "as a broken metric pipeline and evicts nothing until it clears"
        )
        for node in sorted(violating):
            involved = ObjectReference(kind="Node", name=node, uid="")
            try:
                self.cluster.emit_event(
                    involved,
                    reason="DeschedulingHalted",
                    message=f"{message}; this node: {violating[node]}",
                    warning=True,
                )
            except ClusterError as error:
                log.warning("Could not record an Event for node %s: %s", node, error)

    def _classified(
        self, report: CycleReport, profile: str, classification: Classification
    ) -> None:
        for node in classification.held:
            log.info(
                '"Node keeps its class" category="%s" node="%s" holdSeconds=%g',
                classification.categories[node],
                node,
                classification.hold_seconds,
            )
        report.classifications[profile] = classification
        if self.metrics is not None:
            self.metrics.record_classification(classification)

    def _calibrated(self, report: CycleReport, calibration: Calibration) -> None:
        report.calibration = calibration
        if self.metrics is not None:
            self.metrics.record_calibration(calibration)

    def _sync_taints(self, state: CycleState, report: CycleReport) -> None:
        dry_run = self.mode is Mode.PREDICTIVE
        nodes = dict(state.nodes)
        self._sync_soft_taints(state, report, nodes, dry_run=dry_run)
        self._sync_reservations(nodes, report)

    def _sync_reservations(self, nodes: dict[NodeName, Node], report: CycleReport) -> None:
        """Exactly the nodes the cycle's plugins reserved (`report.reserved`) carry the
        reservation taint."""
        report.reservations = sync_taint(
            self.cluster,
            nodes,
            key=RESERVED_KEY,
            taints={n: reservation(uid) for n, uid in report.reserved.items() if n in nodes},
            dry_run=self.mode is Mode.PREDICTIVE,
        )
        if self.metrics is not None:
            self.metrics.reserved_nodes.set(len(report.reserved))

    def _sync_soft_taints(
        self,
        state: CycleState,
        report: CycleReport,
        nodes: dict[NodeName, Node],
        *,
        dry_run: bool,
    ) -> None:
        tainting = [p for p in self.config.profiles if p.enables(soft_tainter.PLUGIN)]
        if not tainting:
            # Switched off: no node keeps a soft taint from an earlier run.
            key = soft_tainter.SoftTainterArgs().taint_key
            report.taints = sync_soft_taints(
                self.cluster, nodes, key=key, overutilized=(), dry_run=dry_run
            )
            return
        for profile in tainting:
            key = profile.args_of(soft_tainter.PLUGIN).taint_key
            classification = report.classifications.get(profile.name)
            over: Collection[NodeName] = ()
            if classification is not None:
                over = self.taint_holds.tainted(
                    key,
                    classification.overutilized,
                    held=classification.held,
                    classified=classification.categories,
                    hold_seconds=classification.hold_seconds,
                    now=state.now,
                )
            changes = sync_soft_taints(
                self.cluster, nodes, key=key, overutilized=over, dry_run=dry_run
            )
            report.taints.added.extend(changes.added)
            report.taints.removed.extend(changes.removed)


def _counting_failures(
    source: PodUsageSource | None, metrics: DeschedulerMetrics | None
) -> PodUsageSource | None:
    """`source`, its failed reads counted (`tas_descheduler_pod_usage_unread_total`): the
    cycles they hold back say so only in the log otherwise, where no alert sees them."""
    if source is None or metrics is None:
        return source
    counter = metrics.pod_usage_unread

    def read(state: CycleState) -> PodUsage:
        usage = source(state)
        if isinstance(usage, UnreadPodUsage):
            counter.inc()
        return usage

    return read


def _sample_times(view: MetricView) -> Mapping[MetricName, Mapping[NodeName, float]]:
    """The view's sample times where it keeps them (`RefreshingMetricView.sample_times`); a
    view that does not (a static one) gives none, and no lag is observed."""
    times = getattr(view, "sample_times", None)
    return times() if callable(times) else {}
