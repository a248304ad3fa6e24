"""One descheduling cycle: read the world once, check the circuit breaker, run every enabled
strategy of every profile through one set of rails, keep the soft taints in step.

As upstream, every profile's deschedule plugins run before any profile's balance plugins. The
eviction budget and the per-owner cooldown are shared by all profiles, so limits hold for the
whole cycle, whatever the configuration.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from descheduler.classify import Classification
from descheduler.clock import Clock
from descheduler.config import (
    DEFAULT_TAINT_PREFIX,
    DeschedulerConfig,
    InterPodAntiAffinityArgs,
    LoadAwareArgs,
    NodeAffinityArgs,
    NodeTaintsArgs,
    Plugin,
    PodLifeTimeArgs,
    Profile,
    RemoveDuplicatesArgs,
    SoftTainterArgs,
    TASViolationsArgs,
    TooManyRestartsArgs,
    ViolationSource,
)
from descheduler.evictor import (
    CircuitBreaker,
    Cooldown,
    CycleRails,
    EvictionBudget,
    EvictionDecision,
    Evictor,
    ProtectionRules,
)
from descheduler.metrics import DeschedulerMetrics, Result
from descheduler.signals import metric_names
from descheduler.state import CycleState
from descheduler.strategies import (
    anti_affinity,
    duplicates,
    lifetime,
    load_aware,
    node_affinity,
    node_taints,
    restarts,
    tas_violations,
)
from descheduler.strategies.load_aware import PodUsageSource
from descheduler.tainter import TaintChanges, sync_soft_taints
from tas.cluster.interface import Cluster
from tas.cluster.model import Node
from tas.metrics.view import MetricView
from tas.policy import TASPolicy
from tas.types import MetricName, PolicyKey

log = logging.getLogger(__name__)

PolicySource = Callable[[], Mapping[PolicyKey, TASPolicy]]


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

    def by_result(self, result: str) -> list[EvictionDecision]:
        return [d for d in self.decisions if d.result == result]


class Descheduler:
    def __init__(
        self,
        *,
        config: DeschedulerConfig,
        cluster: Cluster,
        metric_view: MetricView,
        policies: PolicySource,
        mode: Mode = Mode.PREDICTIVE,
        clock: Clock,
        metrics: DeschedulerMetrics | None = None,
        pod_usage: PodUsageSource | None = None,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.metric_view = metric_view
        self.policies = policies
        self.mode = mode
        self.clock = clock
        self.metrics = metrics
        self.pod_usage = pod_usage
        self.cooldown = Cooldown(config.cooldown_seconds)
        self.breaker = CircuitBreaker(config.max_violating_node_share)

    def wanted_metrics(self) -> set[MetricName]:
        """Metric names this configuration reads (policies' names are added by the caller)."""
        names: set[MetricName] = set()
        for profile in self.config.profiles:
            if profile.enables(Plugin.LOAD_AWARE):
                names |= metric_names(profile.args_of(Plugin.LOAD_AWARE, LoadAwareArgs).signals)
        return names

    def _in_scope(self, node: Node) -> bool:
        return all(node.labels.get(k) == v for k, v in self.config.node_selector.items())

    def _violation_source(self) -> ViolationSource:
        for profile in self.config.profiles:
            if profile.enables(Plugin.TAS_VIOLATIONS):
                return profile.args_of(Plugin.TAS_VIOLATIONS, TASViolationsArgs).source
        return ViolationSource.METRICS

    def run_cycle(self) -> CycleReport:
        report = CycleReport()
        nodes = {n.name: n for n in self.cluster.list_nodes() if self._in_scope(n)}
        ready = [n for n in nodes.values() if n.ready]
        if len(ready) < 2:
            report.skipped = f"fewer than two Ready nodes in scope ({len(ready)})"
            log.info("Cycle skipped: %s", report.skipped)
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
        )
        violating = tas_violations.all_violations(
            policies.values(), state, self._violation_source()
        )
        ready_names = {n.name for n in ready}
        violating = {n: r for n, r in violating.items() if n in ready_names}
        self.breaker.update(violating, in_scope=len(ready))
        report.circuit_breaker = self.breaker.reason
        if self.metrics is not None:
            self.metrics.circuit_breaker_open.set(1 if self.breaker.open else 0)
        rails = CycleRails(
            budget=EvictionBudget(self.config.limits),
            cooldown=self.cooldown,
            breaker=self.breaker,
            dry_run=self.mode is Mode.PREDICTIVE,
            decisions=report.decisions,
        )
        evictors = {
            profile.name: Evictor(
                cluster=self.cluster,
                state=state,
                rules=ProtectionRules.resolve(profile.evictor, state.pods),
                rails=rails,
                metrics=self.metrics,
                profile=profile.name,
            )
            for profile in self.config.profiles
        }
        for profile in self.config.profiles:
            for plugin in profile.deschedule:
                self._run_plugin(profile, plugin, evictors[profile.name], report)
        for profile in self.config.profiles:
            for plugin in profile.balance:
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
        return report

    def _count_cycle(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.cycles.labels(outcome).inc()

    def _run_plugin(
        self, profile: Profile, plugin: Plugin, evictor: Evictor, report: CycleReport
    ) -> None:
        if plugin is Plugin.SOFT_TAINTER:
            return  # runs after every strategy, on LoadAware's classification
        if plugin is Plugin.LOAD_AWARE:
            args = profile.args_of(plugin, LoadAwareArgs)
            usage = self.pod_usage(evictor.state) if self.pod_usage is not None else None
            classification = load_aware.run(args, evictor, pod_usage=usage)
            report.classifications[profile.name] = classification
            if self.metrics is not None:
                self.metrics.record_classification(classification)
            return
        if evictor.stopped and self.breaker.open:
            log.error("%s skipped: %s", plugin, self.breaker.reason)
            return
        if plugin is Plugin.TAS_VIOLATIONS:
            tas_violations.run(profile.args_of(plugin, TASViolationsArgs), evictor)
        elif plugin is Plugin.NODE_AFFINITY:
            node_affinity.run(profile.args_of(plugin, NodeAffinityArgs), evictor)
        elif plugin is Plugin.NODE_TAINTS:
            node_taints.run(profile.args_of(plugin, NodeTaintsArgs), evictor)
        elif plugin is Plugin.INTER_POD_ANTI_AFFINITY:
            anti_affinity.run(profile.args_of(plugin, InterPodAntiAffinityArgs), evictor)
        elif plugin is Plugin.TOO_MANY_RESTARTS:
            restarts.run(profile.args_of(plugin, TooManyRestartsArgs), evictor)
        elif plugin is Plugin.POD_LIFE_TIME:
            lifetime.run(profile.args_of(plugin, PodLifeTimeArgs), evictor)
        elif plugin is Plugin.REMOVE_DUPLICATES:
            duplicates.run(profile.args_of(plugin, RemoveDuplicatesArgs), evictor)

    def _sync_taints(self, state: CycleState, report: CycleReport) -> None:
        dry_run = self.mode is Mode.PREDICTIVE
        tainting = [p for p in self.config.profiles if p.enables(Plugin.SOFT_TAINTER)]
        nodes = list(state.nodes.values())
        if not tainting:
            # Switched off: no node keeps a soft taint from an earlier run.
            key = SoftTainterArgs(taint_key_prefix=DEFAULT_TAINT_PREFIX).taint_key
            report.taints = sync_soft_taints(
                self.cluster, nodes, key=key, overutilized=(), dry_run=dry_run
            )
            return
        for profile in tainting:
            key = profile.args_of(Plugin.SOFT_TAINTER, SoftTainterArgs).taint_key
            classification = report.classifications.get(profile.name)
            over = classification.overutilized if classification is not None else ()
            changes = sync_soft_taints(
                self.cluster, nodes, key=key, overutilized=over, dry_run=dry_run
            )
            report.taints.added.extend(changes.added)
            report.taints.removed.extend(changes.removed)
