"""Baselines this project does not implement itself, written from their documented rules.

Volcano's descheduler `LoadAware` plugin cannot be had by configuring this project's
`LoadAware`: Volcano reads per-pod usage and evicts the heaviest pods first, counts pods as a
third resource, sorts nodes by raw quantities, and has no cooldown and no circuit breaker. So
it is written here as a descheduler plugin (`descheduler.framework.Plugin`) under Volcano's own
name, registered into a registry of its own (`registry_for("volcano-loadaware")`), and runs
inside this project's real descheduler cycle: the DefaultEvictor rules, nodeFit, the eviction
limits and the Eviction API are the same code paths every contender goes through.

Rules, from Volcano's documentation ("Load-aware Descheduling", volcano.sh docs, and the
volcano-sh/descheduler README) and its plugin (`pkg/framework/plugins/loadaware`,
`load_aware.go` and `nodeutilization.go`):

- node usage: CPU and memory utilization from Prometheus with Volcano's own queries
  (`volcano_cpu_query`: the mean over a 30s-step subquery of `duration`, 2m, of a 30 s irate),
  answered by the simulated Prometheus from its scrapes; pods count as a third resource (the
  number of pods on the node). A node without a value counts as using nothing (Volcano's
  metrics start at zero, and a query that answers nothing leaves them there);
- thresholds in percent: underutilized when every resource <= `thresholds` (and the node is
  schedulable), overutilized when any resource > `targetThresholds`; a resource left out gets
  100 (0 with deviation thresholds), so it never decides;
- deviation thresholds average the nodes' *requests* (Volcano reuses upstream's average), and
  a low threshold of 0 makes both bounds the node's capacity (both as in `getNodeThresholds`);
- nothing happens without underutilized nodes, with no more of them than `numberOfNodes`, when
  every node is underutilized, or when none is overutilized;
- capacity to move = the sum over underutilized nodes of (high threshold - usage), for CPU,
  memory and pods; overutilized nodes are emptied in order of memory bytes + CPU millicores +
  pods, most first;
- on each, removable pods are evicted heaviest first by actual usage of CPU when CPU is over
  its threshold (memory otherwise), pods without usage last; a pod must tolerate the taints of
  some underutilized node, and with `nodeFit` must fit a node that is not over its thresholds;
  each eviction takes the pod's usage off the node and off the capacity, until the node is
  under its targets or some capacity is spent.

Where Go's map order makes Volcano's choice random (which over-used resource is noted first
when both CPU and memory are over), this baseline picks CPU, deterministically.

Two more parts of the contenders live here, beside their descheduler: the OpenShift operator's
soft tainter (`OpenShiftSoftTainter`, a controller of its own there) and the Volcano
scheduler's `usage` plugin (`VolcanoUsage`, which Volcano's docs pair with LoadAware).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.classify import ThresholdSpec
from descheduler.config import DeschedulerConfig
from descheduler.cycle import Descheduler
from descheduler.framework import (
    Attempt,
    EvictOptions,
    Evictor,
    ExtensionPoint,
    Outcome,
    Plugin,
    PluginContext,
    PluginName,
    PluginRun,
)
from descheduler.plugins import load_aware, low_node_utilization
from descheduler.plugins.registry import PLUGINS, Registry, default_registry
from descheduler.state import CycleState, pod_key
from descheduler.tainter import soft_taint
from descheduler.utilization import METRIC_RESOURCE, above, below, deviation_thresholds
from tas.cluster.interface import Cluster
from tas.cluster.model import Node, Pod
from tas.durations import DurationError, parse_duration
from tas.fit import requested, untolerated_taint
from tas.types import MetricName, NodeName
from tas_inmemory.scheduler import MAX_NODE_SCORE, FilterAnswer

FloatArray = npt.NDArray[np.float64]
log = logging.getLogger(__name__)

NAME = PluginName("LoadAware")
RESOURCES = ("cpu", "memory", "pods")
#: LoadAware's `duration` default (volcano-sh/descheduler at 393a2d82,
#: pkg/framework/plugins/loadaware/defaults.go: `if args.Duration == "" { args.Duration = "2m" }`).
VOLCANO_DURATION = "2m"
#: The subquery step and the irate range of Volcano's node CPU query (below).
VOLCANO_SUBQUERY_STEP = 30.0
VOLCANO_IRATE_RANGE = 30.0


def volcano_cpu_query(duration: str) -> MetricName:
    """Volcano's node CPU query (volcano-sh/descheduler at 393a2d82, pkg/framework/plugins/
    loadaware/metrics/metrics_client_prometheus.go `NodeMetricsAvg`), without its
    `instance="<node>"` matcher: Volcano asks node by node, the simulator answers every node
    at once. With 30 s scrapes, `irate(...[30s])` rarely finds the two samples it needs: the
    simulated Prometheus answers it as Prometheus would (`tas_simulator.pipeline`)."""
    return MetricName(
        'avg_over_time((1 - (avg by (instance) (irate(node_cpu_seconds_total{mode="idle"}'
        f"[30s])) * 1))[{duration}:30s])"
    )


def volcano_memory_query(duration: str) -> MetricName:
    """Volcano's node memory query (the same function), without its `instance` matchers."""
    return MetricName(
        "avg_over_time(((1-node_memory_MemAvailable_bytes/node_memory_MemTotal_bytes))"
        f"[{duration}:30s])"
    )


def read_volcano_query(name: str) -> tuple[str, float] | None:
    """("cpu" or "memory", the range in seconds) when `name` is one of Volcano's node queries."""
    for resource, query in (("cpu", volcano_cpu_query), ("memory", volcano_memory_query)):
        prefix, suffix = query("\0").split("\0")
        if name.startswith(prefix) and name.endswith(suffix) and len(name) > len(prefix + suffix):
            try:
                return resource, parse_duration(name[len(prefix) : -len(suffix)])
            except DurationError:
                return None
    return None


@dataclass(frozen=True, slots=True)
class VolcanoArgs(ThresholdSpec):
    node_fit: bool = False
    duration: str = VOLCANO_DURATION
    evictable_namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)


def _percentages(r: FieldReader, key: str) -> dict[str, float]:
    # Volcano checks no upper bound: a target above 100 only means no node is ever over it.
    return r.percentages(key, known=RESOURCES, high=math.inf)


def parse_args(r: FieldReader) -> VolcanoArgs:
    thresholds = _percentages(r, "thresholds")
    targets = _percentages(r, "targetThresholds")
    if not thresholds or not targets:
        r.problem(r.path, "thresholds and targetThresholds are required (Volcano's validation)")
    for name, low in thresholds.items():
        if name in targets and low > targets[name] and not r.raw.get("useDeviationThresholds"):
            r.problem(f"{r.at('thresholds')}.{name}", "must not exceed targetThresholds")
    # Volcano's query settings: the simulator's metric pipeline stands in for Prometheus.
    r.get("metrics")
    duration = r.get("duration")
    if duration is not None:
        try:
            parse_duration(str(duration))
        except DurationError as error:
            r.problem(r.at("duration"), str(error))
            duration = None
    # DefaultEvictor-style fields Volcano's argument type also carries; its DefaultEvictor
    # plugin is what applies them, as here.
    for key in (
        "nodeSelector",
        "evictLocalStoragePods",
        "evictSystemCriticalPods",
        "ignorePvcPods",
        "evictFailedBarePods",
        "labelSelector",
        "priorityThreshold",
    ):
        r.get(key)
    return VolcanoArgs(
        thresholds=thresholds,
        target_thresholds=targets,
        use_deviation_thresholds=r.boolean("useDeviationThresholds", False),
        number_of_nodes=r.integer("numberOfNodes", 0) or 0,
        node_fit=r.boolean("nodeFit", False),
        duration=str(duration) if duration is not None else VOLCANO_DURATION,
        evictable_namespaces=r.namespaces("evictableNamespaces"),
    )


def _capacity(node: Node) -> dict[str, float]:
    return {
        "cpu": node.allocatable.get("cpu", 0.0),
        "memory": node.allocatable.get("memory", 0.0),
        "pods": node.allocatable.get("pods", 0.0),
    }


@dataclass
class _NodeState:
    node: Node
    usage: dict[str, float]
    low: dict[str, float]
    high: dict[str, float]
    pods: list[Pod]

    def over(self) -> list[str]:
        return [r for r in RESOURCES if self.usage[r] > self.high[r]]

    def under(self) -> bool:
        return all(self.usage[r] <= self.low[r] for r in RESOURCES)


def _bounds(args: VolcanoArgs) -> tuple[dict[str, float], dict[str, float]]:
    low, high = dict(args.thresholds), dict(args.target_thresholds)
    for resource in RESOURCES:
        if resource not in low:
            default = 0.0 if args.use_deviation_thresholds else 100.0
            low[resource] = high[resource] = default
    return low, high


def _node_states(args: VolcanoArgs, state: CycleState) -> list[_NodeState]:
    low_pct, high_pct = _bounds(args)
    nodes = state.ready_nodes
    # Volcano's metric client leaves a node at 0 when its query answers nothing or fails.
    cpu = state.metrics.get(volcano_cpu_query(args.duration), {})
    memory = state.metrics.get(volcano_memory_query(args.duration), {})
    average: dict[str, float] = dict.fromkeys(RESOURCES, 0.0)
    if args.use_deviation_thresholds and nodes:
        for node in nodes:
            pods = state.pods_on(node.name)
            capacity = _capacity(node)
            used = {
                "cpu": requested(pods, "cpu"),
                "memory": requested(pods, "memory"),
                "pods": float(len(pods)),
            }
            for r in RESOURCES:
                average[r] += 100.0 * used[r] / capacity[r] if capacity[r] else 0.0
        average = {r: v / len(nodes) for r, v in average.items()}
    found = []
    for node in nodes:
        capacity = _capacity(node)
        pods = state.pods_on(node.name)
        usage = {
            "cpu": capacity["cpu"] * cpu.get(node.name, 0.0),
            "memory": capacity["memory"] * memory.get(node.name, 0.0),
            "pods": float(len(pods)),
        }
        low: dict[str, float] = {}
        high: dict[str, float] = {}
        for r in RESOURCES:
            if args.use_deviation_thresholds:
                if low_pct[r] == 0:
                    low[r] = high[r] = capacity[r]
                    continue
                lo = min(100.0, max(0.0, average[r] - low_pct[r]))
                hi = min(100.0, max(0.0, average[r] + high_pct[r]))
            else:
                lo, hi = low_pct[r], high_pct[r]
            low[r] = capacity[r] * lo / 100.0
            high[r] = capacity[r] * hi / 100.0
        found.append(_NodeState(node, usage, low, high, pods))
    return found


def _tolerates_some(pod: Pod, nodes: list[_NodeState]) -> bool:
    """upstream `PodToleratesTaints`: the pod tolerates every NoSchedule/NoExecute taint of at
    least one of the nodes."""
    return any(untolerated_taint(pod, target.node.taints) is None for target in nodes)


def run(args: VolcanoArgs, context: PluginContext) -> None:
    evictor = context.evictor
    state = context.state
    nodes = _node_states(args, state)
    low_nodes = [n for n in nodes if not n.node.unschedulable and n.under()]
    high_nodes = [n for n in nodes if n not in low_nodes and n.over()]
    log.info(
        '"Number of underutilized nodes" totalNumber=%d; overutilized %d',
        len(low_nodes),
        len(high_nodes),
    )
    if (
        not low_nodes
        or len(low_nodes) <= args.number_of_nodes
        or len(low_nodes) == len(nodes)
        or not high_nodes
    ):
        return
    capacity = {r: sum(n.high[r] - n.usage[r] for n in low_nodes) for r in RESOURCES}
    not_over = {n.node.name for n in nodes if not ({"cpu", "memory"} & set(n.over()))}
    measured = context.usage.pod_usage() or {}
    high_nodes.sort(key=lambda n: -(n.usage["memory"] + n.usage["cpu"] * 1000 + n.usage["pods"]))
    for source in high_nodes:
        if not _continue(source, capacity):
            continue
        key = "cpu" if "cpu" in source.over() else "memory"
        node_capacity = _capacity(source.node)

        def usage_of(pod: Pod, resource: str, cap: Mapping[str, float] = node_capacity) -> float:
            share = measured.get(pod_key(pod), {}).get(resource)
            return cap[resource] * share / 100.0 if share is not None else -1.0

        removable = [
            p
            for p in source.pods
            if args.evictable_namespaces.allows(p.namespace) and evictor.filter(p)
        ]
        removable.sort(key=lambda p: -usage_of(p, key))
        for pod in removable:
            if not _tolerates_some(pod, low_nodes):
                continue
            among = not_over if args.node_fit else None
            reason = (
                f"node {source.node.name} is over Volcano's targetThresholds "
                f"({', '.join(source.over())})"
            )
            attempt = evictor.evict(pod, EvictOptions(strategy=NAME, reason=reason, among=among))
            if attempt.outcome is Outcome.STOPPED:
                return
            if not attempt.done:
                continue
            source.usage["pods"] -= 1
            capacity["pods"] -= 1
            for resource in ("cpu", "memory"):
                used = usage_of(pod, resource)
                if used >= 0:
                    source.usage[resource] -= used
                    capacity[resource] -= used
            if not _continue(source, capacity):
                break


def _continue(node: _NodeState, capacity: Mapping[str, float]) -> bool:
    return bool(node.over()) and all(v > 0 for v in capacity.values())


def metric_names(args: VolcanoArgs) -> set[MetricName]:
    return {volcano_cpu_query(args.duration), volcano_memory_query(args.duration)}


PLUGIN = Plugin.serving(
    ExtensionPoint.BALANCE, NAME, args=(VolcanoArgs, parse_args), run=run, metric_names=metric_names
)


def registry_for(contender: str) -> Registry:
    """The plugins a contender's descheduler document may name."""
    if contender.startswith("volcano-loadaware"):
        return Registry([*(p for p in PLUGINS if p.name != load_aware.NAME), PLUGIN])
    if contender.startswith("psi-profile"):
        return Registry([*PLUGINS, MIGRATION_AWARE_PLUGIN])
    return default_registry()


# ------------------------------------------------- KubeVirt's KubevirtMigrationAware filter

MIGRATION_AWARE = PluginName("KubevirtMigrationAware")
#: The plugin's defaults: openshift-virtualization/kubevirt-descheduler-plugins, as vendored by
#: openshift/cluster-kube-descheduler-operator at 945dcaa9, plugins/kubevirtmigrationaware/
#: defaults.go: `defaultMigrationCooldown = 15 * time.Minute`, `defaultMaxMigrationCooldown =
#: 6 * time.Hour`, `defaultMigrationHistoryWindow = 48 * time.Hour`; a field left out or 0
#: gets its default (`SetDefaults_KubevirtMigrationAwareArgs`).
DEFAULT_MIGRATION_COOLDOWN = 15 * 60.0
DEFAULT_MAX_MIGRATION_COOLDOWN = 6 * 3600.0
DEFAULT_MIGRATION_HISTORY_WINDOW = 48 * 3600.0


@dataclass(frozen=True, slots=True)
class MigrationAwareArgs:
    migration_cooldown: float = DEFAULT_MIGRATION_COOLDOWN
    max_migration_cooldown: float = DEFAULT_MAX_MIGRATION_COOLDOWN
    migration_history_window: float = DEFAULT_MIGRATION_HISTORY_WINDOW


def parse_migration_aware_args(r: FieldReader) -> MigrationAwareArgs:
    """`migrationCooldown`, `maxMigrationCooldown`, `migrationHistoryWindow` (validation.go:
    none negative; a cap below the floor is refused when both are set)."""
    found: dict[str, float] = {}
    for key, default in (
        ("migrationCooldown", DEFAULT_MIGRATION_COOLDOWN),
        ("maxMigrationCooldown", DEFAULT_MAX_MIGRATION_COOLDOWN),
        ("migrationHistoryWindow", DEFAULT_MIGRATION_HISTORY_WINDOW),
    ):
        # The reader refuses negative durations.
        found[key] = r.duration(key) or default
    if found["maxMigrationCooldown"] < found["migrationCooldown"]:
        r.problem(r.at("maxMigrationCooldown"), "must be at least migrationCooldown")
    return MigrationAwareArgs(
        found["migrationCooldown"], found["maxMigrationCooldown"], found["migrationHistoryWindow"]
    )


#: Served at `filter` and `preEvictionFilter`, as the operator enables it; no cycle runs it
#: (this project's framework runs only the DefaultEvictor there): `KubevirtMigrationAware`
#: applies it around the profile's plugins.
MIGRATION_AWARE_PLUGIN: Plugin[MigrationAwareArgs] = Plugin(
    name=MIGRATION_AWARE,
    points=frozenset({ExtensionPoint.FILTER, ExtensionPoint.PRE_EVICTION_FILTER}),
    args_type=MigrationAwareArgs,
    parse_args=parse_migration_aware_args,
)


@dataclass(frozen=True, slots=True)
class VmiState:
    """A VirtualMachineInstance as the plugin's informer holds it: its identity and its
    `status.migrationState` timestamps (seconds; None where absent)."""

    uid: str
    migration_start: float | None = None
    migration_end: float | None = None

    @property
    def migrating(self) -> bool:
        return self.migration_start is not None and self.migration_end is None


#: The VMI behind a pod (KubeVirt's `kubevirt.io/domain` annotation), None for other pods.
VmiLookup = Callable[[Pod], VmiState | None]


@dataclass
class KubevirtMigrationAware:
    """The plugin (kubevirtmigrationaware.go at the operator's 945dcaa9 vendoring), per profile:

    - `Filter` refuses a virt-launcher pod whose VMI is migrating (a start, no end);
    - `PreEvictionFilter` defers one whose VMI migrated within its cooldown: max(
      migrationCooldown, the last migration's duration), doubled for each further completion
      within `migrationHistoryWindow` (`for i := 1; i < count; i++`), capped at
      `maxMigrationCooldown`; the loop then tries the profile's next pod;
    - the history is the informer's: every change of a VMI's `endTimestamp` is one completion,
      whatever caused the migration. Here a VMI is looked at whenever a filter asks about its
      pod, which in the simulator is before any eviction of it (the descheduler is what
      migrates VMs), so no completion is missed.
    Pods without a VMI pass both (its fail-open contract). `blocks` counts what it held back,
    by reason (`descheduler_kubevirt_eviction_blocks_total`).
    """

    args: MigrationAwareArgs
    vmis: VmiLookup
    now: Callable[[], float]
    filter_enabled: bool = True
    pre_eviction_enabled: bool = True
    history: dict[str, list[float]] = field(default_factory=dict)
    blocks: dict[str, int] = field(default_factory=dict)
    _last_end: dict[str, float] = field(default_factory=dict)

    def __deepcopy__(self, memo: dict[int, object]) -> KubevirtMigrationAware:
        """Its memory copied, its informer and clock shared (`Descheduler.dry_run`)."""
        return dataclasses.replace(
            self,
            history={uid: list(times) for uid, times in self.history.items()},
            blocks=dict(self.blocks),
            _last_end=dict(self._last_end),
        )

    def _look_up(self, pod: Pod) -> VmiState | None:
        vmi = self.vmis(pod)
        end = vmi.migration_end if vmi is not None else None
        if vmi is not None and end is not None and self._last_end.get(vmi.uid) != end:
            self._last_end[vmi.uid] = end
            self.history.setdefault(vmi.uid, []).append(end)
        return vmi

    def filter(self, pod: Pod) -> bool:
        vmi = self._look_up(pod)
        if not self.filter_enabled or vmi is None or not vmi.migrating:
            return True
        self._count("migration_in_progress")
        return False

    def pre_eviction_filter(self, pod: Pod) -> bool:
        vmi = self._look_up(pod)
        if not self.pre_eviction_enabled or vmi is None or vmi.migration_end is None:
            return True
        if self.now() - vmi.migration_end < self.effective_cooldown(vmi):
            self._count("cooldown")
            return False
        return True

    def effective_cooldown(self, vmi: VmiState) -> float:
        args = self.args
        cooldown = args.migration_cooldown
        if vmi.migration_start is not None and vmi.migration_end is not None:
            cooldown = max(cooldown, vmi.migration_end - vmi.migration_start)
        for _ in range(1, self._count_within_window(vmi.uid)):
            cooldown *= 2
            if cooldown >= args.max_migration_cooldown:
                break
        return min(cooldown, args.max_migration_cooldown)

    def _count_within_window(self, uid: str) -> int:
        cutoff = self.now() - self.args.migration_history_window
        kept = [t for t in self.history.get(uid, []) if t > cutoff]
        self.history[uid] = kept
        return len(kept)

    def _count(self, reason: str) -> None:
        self.blocks[reason] = self.blocks.get(reason, 0) + 1


@dataclass(frozen=True)
class _MigrationAwareEvictor:
    """A profile's evictor with the plugin's filters added to the DefaultEvictor's."""

    evictor: Evictor
    plugin: KubevirtMigrationAware

    def filter(self, pod: Pod) -> bool:
        return self.evictor.filter(pod) and self.plugin.filter(pod)

    def pre_eviction_filter(self, pod: Pod) -> bool:
        return self.evictor.pre_eviction_filter(pod) and self.plugin.pre_eviction_filter(pod)

    def evict(self, pod: Pod, options: EvictOptions) -> Attempt:
        """The profile's evictor's own: only the filters are added."""
        return self.evictor.evict(pod, options)


@dataclass
class _WithMigrationAwareness:
    """A profile's plugin run whose evictor carries the KubevirtMigrationAware filters."""

    inner: PluginRun
    plugin: KubevirtMigrationAware

    def run(self, context: PluginContext) -> None:
        evictor = _MigrationAwareEvictor(context.evictor, self.plugin)
        self.inner.run(dataclasses.replace(context, evictor=evictor))


def add_migration_awareness(
    descheduler: Descheduler,
    document: Mapping[str, Any],
    *,
    vmis: VmiLookup,
    now: Callable[[], float],
) -> list[KubevirtMigrationAware]:
    """Apply KubevirtMigrationAware to every plugin of each profile of `document` (the
    DeschedulerPolicy `descheduler` runs) that enables it at `filter` or `preEvictionFilter`,
    as the operator does for KubeVirtRelieveAndMigrate (target_config_reconciler.go at 945dcaa9:
    both points, always, with a `pluginConfig` entry of its own). Returns one plugin instance
    per such profile (each remembers its own history)."""
    added: list[KubevirtMigrationAware] = []
    by_name = {p.name: p for p in descheduler.config.profiles}
    for raw in document.get("profiles") or []:
        profile = by_name.get(raw.get("name", ""))
        plugins = raw.get("plugins") or {}

        def enabled(point: str, plugins: Mapping[str, Any] = plugins) -> bool:
            return MIGRATION_AWARE in ((plugins.get(point) or {}).get("enabled") or [])

        at_filter, at_pre = enabled("filter"), enabled("preEvictionFilter")
        if profile is None or not (at_filter or at_pre):
            continue
        plugin = KubevirtMigrationAware(
            profile.args_of(MIGRATION_AWARE_PLUGIN),
            vmis,
            now,
            filter_enabled=at_filter,
            pre_eviction_enabled=at_pre,
        )
        for key, run in list(descheduler.plugins.items()):
            if key[0] == profile.name:
                descheduler.plugins[key] = _WithMigrationAwareness(run, plugin)
        added.append(plugin)
    return added


# ------------------------------------------------------------- OpenShift's soft tainter

#: The taints of the operator's soft tainter (cluster-kube-descheduler-operator,
#: pkg/softtainter/softtainter.go, `AppropriatelyUtilizedSoftTaintKey` and
#: `OverUtilizedSoftTaintKey`; both with value "true", effect PreferNoSchedule).
OPENSHIFT_TAINT_PREFIX = "nodeutilization.descheduler.openshift.io"
APPROPRIATE_TAINT = f"{OPENSHIFT_TAINT_PREFIX}/appropriate"
OVERUTILIZED_TAINT = f"{OPENSHIFT_TAINT_PREFIX}/overutilized"
_SOFT_KEYS = (APPROPRIATE_TAINT, OVERUTILIZED_TAINT)

#: A Prometheus instant query's answer per node (0..1), or None when the query failed.
QueryValues = Callable[[str], Mapping[NodeName, float] | None]


@dataclass(frozen=True)
class OpenShiftSoftTainter:
    """The operator's soft tainter, a controller of its own beside the descheduler
    (cluster-kube-descheduler-operator at 945dcaa9, pkg/softtainter/softtainter.go):

    - `Reconcile` reads the LowNodeUtilization arguments of the rendered policy (thresholds,
      `useDeviationThresholds`, the Prometheus query) and requeues itself every
      `deschedulingIntervalSeconds`, so it runs on the descheduling interval, not the
      descheduler's cycle;
    - `syncSoftTaints` queries Prometheus and fails (no taint changes) when a node has no
      value; it classifies the nodes as upstream's `classifier.Classify` does (underutilized:
      schedulable and at or below the low bound; else overutilized: above the high bound);
      the rest are appropriately utilized, unless no node is underutilized: then they count
      as underutilized ("avoid soft-tainting appropriately utilized nodes when we don't have
      underutilized");
    - `taintNodes` runs only in Automatic mode: underutilized nodes lose both taints,
      appropriately utilized ones carry `appropriate` and lose `overutilized`, overutilized
      ones carry both. So new pods prefer the underutilized nodes.
    """

    thresholds: Mapping[str, float]
    target_thresholds: Mapping[str, float]
    use_deviation_thresholds: bool
    query: str

    @classmethod
    def from_config(cls, config: DeschedulerConfig) -> OpenShiftSoftTainter | None:
        """From the rendered policy's LowNodeUtilization, as `Reconcile` reads it."""
        for profile in config.profiles:
            if profile.enables(low_node_utilization.PLUGIN):
                args = profile.args_of(low_node_utilization.PLUGIN)
                if not args.prometheus_query:
                    return None
                return cls(
                    dict(args.thresholds),
                    dict(args.target_thresholds),
                    args.use_deviation_thresholds,
                    args.prometheus_query,
                )
        return None

    def plan(
        self, nodes: Sequence[Node], values: Mapping[NodeName, float]
    ) -> dict[NodeName, frozenset[str]] | None:
        """The soft taint keys each node should carry; None when a node has no value."""
        if any(node.name not in values for node in nodes):
            return None
        # Percentages, as the descheduler's Prometheus usage client and `prometheus_snapshot`.
        usage = {
            node.name: {METRIC_RESOURCE: float(int(values[node.name] * 100))} for node in nodes
        }
        if self.use_deviation_thresholds:
            low, high, _ = deviation_thresholds(usage, self.thresholds, self.target_thresholds)
        else:
            low, high = dict(self.thresholds), dict(self.target_thresholds)
        under: set[NodeName] = set()
        over: set[NodeName] = set()
        for node in nodes:
            if not node.unschedulable and below(usage[node.name], low):
                under.add(node.name)
            elif above(usage[node.name], high):
                over.add(node.name)
        plan: dict[NodeName, frozenset[str]] = {}
        for node in nodes:
            if node.name in over:
                plan[node.name] = frozenset(_SOFT_KEYS)
            elif node.name in under or not under:
                plan[node.name] = frozenset()
            else:
                plan[node.name] = frozenset({APPROPRIATE_TAINT})
        return plan

    def sync(self, cluster: Cluster, query: QueryValues) -> None:
        nodes = cluster.list_nodes()
        values = query(self.query)
        plan = self.plan(nodes, values) if values is not None else None
        if plan is None:
            log.info("Soft tainter: no value for every node from %r; nothing changed", self.query)
            return
        for node in nodes:
            others = tuple(t for t in node.taints if t.key not in _SOFT_KEYS)
            wanted = (*others, *(soft_taint(k) for k in sorted(plan[node.name])))
            if set(wanted) != set(node.taints):
                cluster.set_node_taints(node.name, wanted)


# ---------------------------------------------------------- Volcano's scheduler: `usage`

#: The Volcano scheduler's `usage` plugin defaults (volcano-sh/volcano at ed72c7c8,
#: pkg/scheduler/plugins/usage/usage.go `New`): usage.weight 5, cpu.weight 1, memory.weight 1,
#: thresholds cpu 80 / mem 80 (percent); estimator request_ratio 0.7, burst_ratio 0,
#: risk_threshold 0.6, risk_factor 1.2, be_cpu 250m, be_mem 200Mi; metrics older than
#: `MetricsActiveTime` (5m) neither filter nor score; pods bound less than `metricsInterval`
#: (30s) ago count by their estimate (the shadow load cache).
VOLCANO_USAGE_WEIGHT = 5
VOLCANO_THRESHOLDS = {"cpu": 80.0, "memory": 80.0}
VOLCANO_REQUEST_RATIO = 0.7
VOLCANO_RISK_THRESHOLD = 0.6
VOLCANO_RISK_FACTOR = 1.2
VOLCANO_BEST_EFFORT = {"cpu": 0.25, "memory": 200.0 * 2**20}
VOLCANO_METRICS_ACTIVE = 300.0
VOLCANO_METRICS_INTERVAL = 30.0

#: A node's usage as the Volcano scheduler's cache holds it: (cpu percent, memory percent).
NodeUsagePercent = Mapping[NodeName, tuple[float, float]]


@dataclass
class VolcanoUsage:
    """The Volcano scheduler's `usage` plugin, which Volcano's LoadAware descheduler needs
    (Volcano's docs: "the Volcano scheduler also needs to enable the plugin usage", so the
    evicted pods avoid the busy nodes), as the kube-scheduler model's in-process extender
    (`tas_inmemory.scheduler.Extender`): its predicate as the filter, its node order as the score.

    From volcano-sh/volcano at ed72c7c8, pkg/scheduler/plugins/usage/usage.go (`predicateFn`,
    `nodeOrderFn`, `calcNodeScore`) and estimator.go:
    - filter: a node whose average CPU usage is above the cpu threshold, or memory above the
      mem threshold, is unschedulable ("the CPU load of the node exceeds the upper limit.");
      with metrics older than 5 minutes every node passes;
    - score: `((1 - cpuComposite) * cpuWeight + (1 - memComposite) * memWeight) / (cpuWeight +
      memWeight) * MaxNodeScore * usageWeight`, where a composite is (real usage + the shadow
      estimates of pods bound in the last `metricsInterval`) / capacity, capped at 1; a
      shadow estimate is request x 0.7 (x 1.2 once the node's composite load reaches 0.6),
      250m / 200Mi for BestEffort pods; no score without fresh metrics.
    Node usage is Volcano's own query (pkg/scheduler/metrics/source/metrics_client_prometheus.go
    `NodeMetricsAvg`: `avg_over_time(...rate(node_cpu_seconds_total{mode="idle"}[5m])...[10m:
    30s])`, memory likewise over 10m), refreshed by the caller (`refresh`).

    The scheduler model adds an extender's whole-number score times `weight` x 10. The plugin
    runs inside Volcano's scheduler, not behind the extender API's 0..10 range, so it answers
    0..50 with weight 1: the plugin's own 0..500 (usage.weight 5 x MaxNodeScore 100), in steps
    of 10 rather than of 50, so the estimates of a few new pods already tell nodes apart.
    """

    nodes: Callable[[], Mapping[NodeName, Node]]
    #: Per node, the summed shadow estimates (cpu cores, memory bytes) of the pods bound to it
    #: less than `metricsInterval` ago, before the risk factor (`volcano_estimate` each).
    recent: Callable[[], Mapping[NodeName, tuple[float, float]]]
    now: Callable[[], float]
    weight: int = 1
    ignorable: bool = False
    usage: dict[NodeName, tuple[float, float]] = field(default_factory=dict)
    metrics_time: float | None = None

    def refresh(self, usage: NodeUsagePercent | None) -> None:
        """The scheduler cache's periodic metrics update; None when the query failed."""
        if usage is None:
            return
        self.usage = dict(usage)
        self.metrics_time = self.now()

    def _fresh(self) -> bool:
        return self.metrics_time is not None and (
            self.now() - self.metrics_time <= VOLCANO_METRICS_ACTIVE
        )

    def filter(self, pod: Pod, candidates: Sequence[NodeName]) -> FilterAnswer:
        if not self._fresh():
            return FilterAnswer(passed=list(candidates))
        passed: list[NodeName] = []
        failed: dict[str, str] = {}
        for name in candidates:
            cpu, memory = self.usage.get(name, (0.0, 0.0))
            if cpu > VOLCANO_THRESHOLDS["cpu"]:
                failed[name] = "the CPU load of the node exceeds the upper limit."
            elif memory > VOLCANO_THRESHOLDS["memory"]:
                failed[name] = "the memory load of the node exceeds the upper limit."
            else:
                passed.append(name)
        return FilterAnswer(passed=passed, failed=failed)

    def prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> Mapping[NodeName, int]:
        return {name: round(p / 10) for name, p in self.points(pod, candidates).items()}

    def points(self, pod: Pod, candidates: Sequence[NodeName]) -> dict[NodeName, float]:
        """The plugin's own node order, 0..500 (none without fresh metrics)."""
        if not self._fresh():
            return dict.fromkeys(candidates, 0.0)
        nodes = self.nodes()
        known = [nodes[name] for name in candidates if name in nodes]
        cpu, memory = self._composites(known, self.recent())
        share = ((1.0 - cpu) + (1.0 - memory)) / 2.0
        scored = dict(
            zip(
                (node.name for node in known),
                (share * MAX_NODE_SCORE * VOLCANO_USAGE_WEIGHT).tolist(),
                strict=True,
            )
        )
        return {name: scored.get(name, 0.0) for name in candidates}

    def _composites(
        self, nodes: Sequence[Node], recent: Mapping[NodeName, tuple[float, float]]
    ) -> tuple[FloatArray, FloatArray]:
        """Each node's composite CPU and memory load (0..1): its measured usage plus the shadow
        estimates of its recent pods, as shares of its allocatable. Every node at once, with
        the arithmetic of Volcano's per-node loop (a burst of thousands of pods is scored pod
        by pod, each against every node)."""
        usage = [self.usage.get(node.name, (0.0, 0.0)) for node in nodes]
        shadow = [recent.get(node.name, (0.0, 0.0)) for node in nodes]
        cpu_pct = np.array([u[0] for u in usage], dtype=np.float64)
        memory_pct = np.array([u[1] for u in usage], dtype=np.float64)
        cores = _allocatable(nodes, "cpu")
        memory = _allocatable(nodes, "memory")
        shadow_cpu = np.array([s[0] for s in shadow], dtype=np.float64)
        shadow_memory = np.array([s[1] for s in shadow], dtype=np.float64)

        def composites(factor: float) -> tuple[FloatArray, FloatArray]:
            with np.errstate(divide="ignore", invalid="ignore"):
                cpu = cpu_pct / 100.0 + np.where(cores > 0, factor * shadow_cpu / cores, 0.0)
                used = memory_pct / 100.0 + np.where(
                    memory > 0, factor * shadow_memory / memory, 0.0
                )
            return _unit(cpu), _unit(used)

        # Volcano picks each pod's risk factor from the node's composite load as the pod is
        # added to its shadow cache; here once per node, from the load with every estimate.
        cpu, used = composites(1.0)
        risky = (cpu + used) / 2.0 >= VOLCANO_RISK_THRESHOLD
        if risky.any():
            risk_cpu, risk_used = composites(VOLCANO_RISK_FACTOR)
            cpu = np.where(risky, risk_cpu, cpu)
            used = np.where(risky, risk_used, used)
        return cpu, used


def _allocatable(nodes: Sequence[Node], resource: str) -> FloatArray:
    return np.array([node.allocatable.get(resource, 0.0) for node in nodes], dtype=np.float64)


def _unit(values: FloatArray) -> FloatArray:
    """`min(1, max(0, v))` element-wise, as Python computes it (NaN becomes 0)."""
    above_zero = np.where(values > 0.0, values, 0.0)
    return np.where(above_zero < 1.0, above_zero, 1.0)


#: The Volcano scheduler's `binpack` defaults (volcano-sh/volcano at ed72c7c8,
#: pkg/scheduler/plugins/binpack/binpack.go `calculateWeight`): binpack.weight 1, cpu 1,
#: memory 1.
VOLCANO_BINPACK_WEIGHTS = {"cpu": 1, "memory": 1}
VOLCANO_BINPACK_WEIGHT = 1


def volcano_binpack(
    pod: Pod, nodes: Sequence[Node], used: Mapping[NodeName, tuple[float, float]]
) -> FloatArray:
    """The `binpack` plugin's score of each node for a pod, 0..100 (binpack.go
    `BinPackingScore`): per resource the pod requests, (its request + what the node's pods
    request) / allocatable, weighted; 0 when the pod would not fit in one of them. `used`: what
    each node's pods request (cpu cores, memory bytes)."""
    count = len(nodes)
    score = np.zeros(count)
    weights = np.zeros(count, dtype=np.int64)
    refused = np.zeros(count, dtype=np.bool_)
    for column, resource in enumerate(("cpu", "memory")):
        request = pod.requests.get(resource, 0.0)
        if request == 0:
            continue
        weight = VOLCANO_BINPACK_WEIGHTS[resource]
        capacity = _allocatable(nodes, resource)
        node_used = np.array(
            [used.get(node.name, (0.0, 0.0))[column] for node in nodes], dtype=np.float64
        )
        unknown = capacity == 0
        # A node whose first requested resource does not fit scores 0 whatever follows.
        refused |= ~unknown & ~refused & (request + node_used > capacity)
        counted = ~unknown & ~refused
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(counted, score + (request + node_used) * weight / capacity, score)
        weights += np.where(unknown | counted, weight, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(weights > 0, score / np.maximum(weights, 1), score)
    return np.where(refused, 0.0, score * MAX_NODE_SCORE * VOLCANO_BINPACK_WEIGHT)


@dataclass
class VolcanoScheduler:
    """What the Volcano scheduler adds to kube-scheduler's scoring, as one in-process
    extender: its shipped configuration (volcano-sh/volcano at ed72c7c8, installer/helm/chart/
    volcano/config/volcano-scheduler.conf) orders nodes with `nodeorder` and `binpack`, and
    Volcano's docs add `usage` for the LoadAware descheduler.

    - `nodeorder` wraps kube-scheduler's score plugins with kube-scheduler's weights
      (nodeorder.go `calculateWeight`: leastrequested 1, balancedresource 1, tainttoleration 3,
      nodeaffinity 2, podaffinity 2, podtopologyspread 2, imagelocality 1, mostrequested 0):
      the scheduler model's own scores stand for it;
    - `binpack` (`volcano_binpack`) adds the requested share of each node, so with
      leastrequested at the same weight the two cancel and requests no longer spread pods;
    - `usage` (`VolcanoUsage`) filters and scores by real usage.
    Both scores are in Volcano's units (0..100 per plugin and weight) and are answered, summed,
    in tenths: the scheduler model multiplies an extender's score by 10.
    """

    usage: VolcanoUsage
    #: What the pods on each node request (cpu cores, memory bytes): Volcano's `node.Used`.
    requested: Callable[[], Mapping[NodeName, tuple[float, float]]]

    @property
    def weight(self) -> int:
        return self.usage.weight

    @property
    def ignorable(self) -> bool:
        return self.usage.ignorable

    def filter(self, pod: Pod, candidates: Sequence[NodeName]) -> FilterAnswer:
        return self.usage.filter(pod, candidates)

    def prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> Mapping[NodeName, int]:
        usage = self.usage.points(pod, candidates)
        nodes = self.usage.nodes()
        known = [nodes[name] for name in candidates if name in nodes]
        binpack = dict(
            zip(
                (node.name for node in known),
                volcano_binpack(pod, known, self.requested()).tolist(),
                strict=True,
            )
        )
        return {
            name: round((usage.get(name, 0.0) + binpack.get(name, 0.0)) / 10) for name in candidates
        }


def volcano_estimate(requests: Mapping[str, float]) -> tuple[float, float]:
    """One pod's shadow estimate before the risk factor (estimator.go `EstimatePodResource`
    with no limits: request x request_ratio; `EstimateBestEffortResource` for BestEffort)."""
    if not any(requests.get(r, 0.0) for r in ("cpu", "memory")):
        return VOLCANO_BEST_EFFORT["cpu"], VOLCANO_BEST_EFFORT["memory"]
    return (
        requests.get("cpu", 0.0) * VOLCANO_REQUEST_RATIO,
        requests.get("memory", 0.0) * VOLCANO_REQUEST_RATIO,
    )
