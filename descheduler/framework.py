"""The plugin contract: a descheduler plugin is a value, `Plugin`, not a name in three places.

A plugin states its name (and aliases), the extension points it serves, its arguments type
with the parser that validates them (every problem noted with its path), and the function a
cycle runs. The config reader resolves names through a registry
(`descheduler.plugins.registry`) and stores the resolved plugins in each profile; the cycle
runs whatever a profile enabled through this contract, so neither dispatches on plugin names.

As upstream, `deschedule` plugins of every profile run before any profile's `balance`
plugins; `filter` and `preEvictionFilter` name the DefaultEvictor, whose arguments become the
profile's evictor rules.

A plugin is built once per profile (`Plugin.new(args)`) into an object the cycle runs each
cycle (`PluginRun.run(context)`): what a plugin remembers across cycles (LoadAware's hot
nodes and recent peaks) is its own, not the cycle's.

The framework is the layer both sides meet on, as kubernetes-sigs/descheduler's
`pkg/framework/types/types.go` draws it: plugins get a handle (`PluginContext`, upstream's
`Handle`: generic getters only, the cycle's snapshot, nodeFit, the usage sources, the policy's
Prometheus, and the cycle's report callbacks) and an `Evictor` (upstream's `Evictor` interface:
`filter`, `pre_eviction_filter`, and `evict` with its `EvictOptions`, among them a `Trial` that
asks the rails without evicting); the evictor asks an `EvictorFilter` (upstream's
`EvictorPlugin`: Filter, PreEvictionFilter) which pods it may touch, and neither imports the
other: `descheduler.evictor` implements the one, the DefaultEvictor plugin the other, and the
cycle wires them. What an eviction came to (`Result`, and for the plugin an `Attempt`), the
eviction order (`sort_candidates`) and the loop every node-by-node plugin ends with
(`PluginContext.evict_node_by_node`) live here too. The framework knows no plugin's concepts:
a plugin's classification of the nodes reaches the cycle as a
`descheduler.node_classes.Classification`, the vocabulary the report, the metrics and the
SoftTainter share. What one plugin needs beyond the handle is given to it when it is built, by
the one composition root (`descheduler.assemble`): LoadAware and MakeRoomForPending are built
with the evictions remembered (`descheduler.settling.MoveHistory`), MakeRoomForPending with the
cycle's reservations (`descheduler.plugins.make_room.Reserve`).
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, NewType, Protocol, TypeVar

from descheduler.args import FieldReader, PodSelection
from descheduler.node_classes import Classification
from descheduler.state import CycleState, pod_key
from tas.calibration import Calibration
from tas.cluster.model import LabelSelector, Node, Pod, PodDisruptionBudget, QoSClass
from tas.types import MetricName, NodeName, PodKey
from tas.vocabulary import PREFER_NO_EVICTION_ANNOTATION

PluginName = NewType("PluginName", str)

_QOS_ORDER = {QoSClass.BEST_EFFORT: 0, QoSClass.BURSTABLE: 1, QoSClass.GUARANTEED: 2}


class Result(enum.StrEnum):
    """What one eviction came to (the `result` label of the evictions metric)."""

    EVICTED = "evicted"
    DRY_RUN = "dry-run"
    REFUSED = "refused"
    FAILED = "failed"


def sort_candidates(pods: Iterable[Pod]) -> list[Pod]:
    """Eviction order (upstream's): lower priority first, pods without a priority before all;
    then BestEffort, Burstable, Guaranteed; then pods without the prefer-no-eviction
    annotation."""
    return sorted(
        pods,
        key=lambda p: (
            p.has_priority,
            p.priority,
            _QOS_ORDER[p.qos_class],
            PREFER_NO_EVICTION_ANNOTATION in p.annotations,
        ),
    )


class EvictorFilter(Protocol):
    """Which pods a profile's evictor may touch: upstream's `EvictorPlugin` (Filter and
    PreEvictionFilter), which the DefaultEvictor's rules implement."""

    @property
    def node_fit(self) -> bool:
        """Another Ready node must accept the pod (the pre-eviction nodeFit check)."""
        ...

    @property
    def node_selector(self) -> LabelSelector | None:
        """The nodes nodeFit considers (None: every Ready node)."""
        ...

    def protection(
        self, pod: Pod, *, pdbs: Sequence[PodDisruptionBudget], now: datetime | None
    ) -> str | None:
        """Why the pod must not be evicted (upstream's Filter), or None when it may be."""
        ...

    def namespace_selected(self, pod: Pod) -> bool:
        """The pod's namespace is one the pre-eviction filter lets through."""
        ...


#: The nodes a pod may go to, where a plugin narrows them (None: any Ready node).
Among = Collection[NodeName] | None


@dataclass(frozen=True, slots=True)
class Trial:
    """Asking, not evicting (`EvictOptions.trial`): would every rail let the pod go in this
    cycle, had `before` (pods asked about the same way, in order) gone first?

    The limits count `before` as evicted, their owners count as evicted from in this cycle, and
    a pod among them counts as evicted already; nodeFit is asked of the cluster as it stands.
    A trial changes nothing: nothing is evicted, counted against a limit, kept in the cycle's
    report or announced with an Event. The pods asked about travel in the value, not in the
    evictor, so asking twice gives the same answer and a plan that is dropped leaves no trace.
    Asked pod by pod, not as one plan evicted all-or-nothing: a plan the limits let go only in
    part (some pods now, the rest in the next cycles) may still be worth beginning, and the
    plugin learns how many may go now.
    """

    before: tuple[Pod, ...] = ()


@dataclass(frozen=True, slots=True)
class EvictOptions:
    """How a plugin asks for one eviction: upstream's `EvictOptions` (the strategy and the
    reason), with what this project's rails add.

    Options of the one `Evictor.evict`, not members of their own, so every rail (the
    protections, the namespace selector, the circuit breaker, the limits, the owner cooldown,
    nodeFit) is judged in one place for every question a plugin asks:

    - `among` narrows where nodeFit may place the pod (None: any Ready node);
    - `cooldown_share` and `several_per_cycle` say how much of the owner cooldown the eviction
      respects. By default the owner's last eviction must be the whole cooldown ago and one pod
      per owner goes per cycle; a plugin with a reason the rail cannot see (a move predicted to
      pay clearly, pods that make one room together) may ask for a smaller share, or for
      several pods of one owner in a cycle. The limits, the circuit breaker and the PDBs hold
      either way;
    - `trial` asks without evicting (`Trial`): how a plugin whose evictions are worth something
      only together learns how many of them the rails let go now, through the same checks the
      evictions will meet.
    """

    #: The plugin asking: the report's, the metrics' and the Event's name for the eviction.
    strategy: str
    #: Why, as the log, the report and the Event say it.
    reason: str
    among: Among = None
    cooldown_share: float = 1.0
    several_per_cycle: bool = False
    trial: Trial | None = None


class Outcome(enum.StrEnum):
    """What an eviction attempt came to, for the plugin that made it: whether to go on."""

    #: Evicted, or would be in Predictive mode.
    DONE = "done"
    #: Not this pod (protected, no other node fits it, its owner cooling down, a namespace
    #: limit, refused by a PodDisruptionBudget, failed): the next pod may go.
    BLOCKED = "blocked"
    #: The pod's node has spent its eviction limit: upstream moves on to the next node.
    NODE_LIMIT = "node limit"
    #: Nothing more this cycle: the circuit breaker is open or the total limit is spent.
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One `Evictor.evict` call's answer: its outcome, and why when it was not done (for a
    `Trial`: what the eviction would come to, short of the Eviction API)."""

    outcome: Outcome
    why: str = ""

    @property
    def done(self) -> bool:
        return self.outcome is Outcome.DONE

    @property
    def node_over(self) -> bool:
        """Nothing more from this pod's node in this cycle."""
        return self.outcome in (Outcome.NODE_LIMIT, Outcome.STOPPED)


DONE = Attempt(Outcome.DONE)


class Evictor(Protocol):
    """What a plugin evicts through, upstream's `Evictor` (Filter, PreEvictionFilter, Evict):
    one profile's evictor for one cycle, every rail on the path. `descheduler.evictor.PodEvictor`
    is the one there is.

    Three members, as upstream's: what differs between plugins' evictions is an option of
    `evict` (`EvictOptions`), so no plugin's need becomes a member every evictor (and every
    wrapper of one, such as a filter added by a plugin) must carry.
    """

    def filter(self, pod: Pod) -> bool:
        """Upstream's Filter: the pod may be evicted at all (not protected by the profile's
        DefaultEvictor rules) and is not evicted already in this cycle."""
        ...

    def pre_eviction_filter(self, pod: Pod) -> bool:
        """Upstream's PreEvictionFilter: nodeFit (when on) and the namespace label selector."""
        ...

    def evict(self, pod: Pod, options: EvictOptions) -> Attempt:
        """Evict (or in Predictive mode, report) the pod if every rail allows, as `options`
        ask. Every attempt not done is in the cycle's report with its reason; a `Trial` only
        answers, and leaves no trace."""
        ...


class NodeFit(Protocol):
    """nodeFit as a plugin asks it (`descheduler.nodefit.NodeFitter`): which nodes would
    accept a pod, its policy's `dontschedule` rules included."""

    def fitting_nodes(
        self, pod: Pod, *, among: Among = None, include_current: bool = False
    ) -> tuple[NodeName, ...]:
        """The Ready nodes (of `among`) that would accept the pod, other than its own unless
        `include_current`."""
        ...


class Declined(Protocol):
    """A plugin's own reason to leave a pod where it is (`PluginContext.declined`): the pod,
    the plugin's name, why, and the rule without this pod's figures (empty: `why` says it)."""

    def __call__(self, pod: Pod, strategy: str, why: str, *, rule: str = "") -> None: ...


def _ignore_declined(pod: Pod, strategy: str, why: str, *, rule: str = "") -> None:
    return None


def _ignore_calibration(calibration: Calibration) -> None:
    return None


#: Pods to evict with the reason for each, grouped by the node they run on (None: not
#: grouped, so no per-node limit moves the loop on).
Candidates = Iterable[tuple[NodeName | None, Iterable[tuple[Pod, str]]]]


#: Per-pod usage, as a share of its node (signal -> 0..100), where it is measured.
PodUsage = Mapping[PodKey, Mapping[str, float]]
#: Reads per-pod usage for one cycle's snapshot (`UsageSources.pod_usage` asks it).
PodUsageSource = Callable[[CycleState], PodUsage]


class UnreadPodUsage(dict[PodKey, Mapping[str, float]]):
    """No per-pod usage this cycle because its source failed, not because it measures none:
    empty, with why. A reader that treats it as any empty reading behaves as before; one that
    must not act on a failing pipeline (LoadAware's moves) tells it apart."""

    def __init__(self, why: str) -> None:
        super().__init__()
        self.why = why


class UsageError(Exception):
    """Actual usage could not be read (the metrics server or Prometheus failed or lacks a node)."""


class UsageSources(Protocol):
    """Measured usage, for a plugin that asks (upstream's `Handle.MetricsCollector`): the
    metrics server's (`metricsUtilization: KubernetesMetrics`), and per-pod usage as a share of
    its node where the descheduler was given a source of it (container metrics).

    `node_metrics` and `pod_metrics` raise `UsageError` when the metrics server cannot answer.
    """

    def node_metrics(self) -> Mapping[NodeName, Mapping[str, float]]:
        """The metrics server's usage per node, base units (CPU cores, memory bytes)."""
        ...

    def pod_metrics(self) -> Mapping[PodKey, Mapping[str, float]]:
        """The metrics server's usage per pod, its containers summed, base units."""
        ...

    def pod_usage(self) -> PodUsage | None:
        """Per-pod usage for this cycle's snapshot, as a share of the pod's node (signal ->
        0..100), pods without a value left out; None when no source measures it, and an
        `UnreadPodUsage` when its source failed this cycle."""
        ...


class PrometheusClient(Protocol):
    """The Prometheus of the policy's `metricsProviders`, as the framework hands it to plugins
    (upstream's `Handle.PrometheusClient`)."""

    def vector(self, query: str) -> Mapping[NodeName, float]:
        """An instant query's value per node (its `instance` label), expected in 0..1; raises
        `UsageError` when Prometheus cannot answer."""
        ...


#: Builds the client for a Prometheus URL: how the descheduler is handed its Prometheus (the
#: default reads with the ServiceAccount token; tests and the simulator pass a transport).
PrometheusFactory = Callable[[str], PrometheusClient]


class NoUsageSources:
    """Usage sources that answer nothing: every question is a `UsageError`."""

    def node_metrics(self) -> Mapping[NodeName, Mapping[str, float]]:
        raise UsageError("no metrics server is configured")

    def pod_metrics(self) -> Mapping[PodKey, Mapping[str, float]]:
        raise UsageError("no metrics server is configured")

    def pod_usage(self) -> PodUsage | None:
        return None


A = TypeVar("A")


class ExtensionPoint(enum.StrEnum):
    """Where a profile enables a plugin (`plugins.<point>.enabled`), in upstream's words."""

    DESCHEDULE = "deschedule"
    BALANCE = "balance"
    FILTER = "filter"
    PRE_EVICTION_FILTER = "preEvictionFilter"


#: The points whose plugins a cycle runs, in the order it runs them.
RUN_POINTS = (ExtensionPoint.DESCHEDULE, ExtensionPoint.BALANCE)


@dataclass(frozen=True)
class PluginContext:
    """What a plugin's run gets (upstream's `Handle`), generic to every plugin: the cycle's
    snapshot, one profile's evictor for this cycle, nodeFit, the usage sources, the policy's
    Prometheus, and the cycle's reporting (`classified`, `declined`, `calibrated`). What only
    some plugin needs is given to it when it is built (`descheduler.assemble`)."""

    state: CycleState
    evictor: Evictor
    nodes: NodeFit
    #: Called with a classification of the nodes, if the plugin makes one: the cycle reports
    #: it, exports it as metrics and soft-taints by it.
    classified: Callable[[Classification], None]
    #: A plugin's own reason to leave a pod it weighed (a move that does not pay, a replacement
    #: left to settle): the cycle's report keeps it beside the evictor's refusals.
    declined: Declined = _ignore_declined
    usage: UsageSources = field(default_factory=NoUsageSources)
    #: The policy's Prometheus (None: no `metricsProviders` Prometheus is configured).
    prometheus: PrometheusClient | None = None
    #: What a plugin learned of the cluster this cycle (each node's pressure curve, the
    #: metrics' lag, the pods' start-up): the cycle reports and exports it.
    calibrated: Callable[[Calibration], None] = _ignore_calibration

    def selected(self, pod: Pod, selection: PodSelection) -> bool:
        """In the plugin's namespaces and label selector, and not evicted already."""
        if pod_key(pod) in self.state.evicted:
            return False
        return selection.matches(pod.namespace, pod.labels)

    def fitting_nodes(
        self, pod: Pod, *, among: Among = None, include_current: bool = False
    ) -> tuple[NodeName, ...]:
        """The Ready nodes (of `among`) that would accept the pod (`NodeFit`)."""
        return self.nodes.fitting_nodes(pod, among=among, include_current=include_current)

    def evict_from_each_node(
        self, *, strategy: str, candidates_on: Callable[[Node], Iterable[tuple[Pod, str]]]
    ) -> None:
        """`evict_node_by_node` over the Ready nodes, in order: `candidates_on(node)` gives
        each node's pods to evict with the reason for each."""
        ready = self.state.ready_nodes
        self.evict_node_by_node(
            strategy=strategy, candidates=((n.name, candidates_on(n)) for n in ready)
        )

    def evict_node_by_node(
        self,
        *,
        strategy: str,
        candidates: Candidates,
        evicted: Callable[[Pod], None] | None = None,
    ) -> None:
        """The loop upstream's deschedule plugins end with: evict each candidate in turn; stop
        when the cycle's limits are spent, and give up on a node when its own limit is.
        Candidates are generated lazily, so each is judged after the evictions before it;
        `evicted` hears of each pod evicted (a plugin whose view changes when one leaves).
        """
        for _node, pods in candidates:
            for pod, reason in pods:
                attempt = self.evictor.evict(pod, EvictOptions(strategy=strategy, reason=reason))
                if attempt.done:
                    if evicted is not None:
                        evicted(pod)
                elif attempt.outcome is Outcome.STOPPED:
                    return
                elif attempt.outcome is Outcome.NODE_LIMIT:
                    break


class PluginRun(Protocol):
    """A plugin built for one profile (`Plugin.new`): run once per cycle, it keeps what it
    remembers across cycles itself."""

    def run(self, context: PluginContext) -> None: ...


@dataclass(frozen=True, slots=True)
class _Stateless(Generic[A]):
    """A plugin that remembers nothing between cycles: its run function and its arguments."""

    function: Callable[[A, PluginContext], None]
    args: A

    def run(self, context: PluginContext) -> None:
        self.function(self.args, context)


@dataclass(frozen=True, eq=False)
class Plugin(Generic[A]):
    """One plugin, as data. Compared by identity: a registry holds each plugin once."""

    name: PluginName
    points: frozenset[ExtensionPoint]
    #: Its arguments; `args_type()` must give the defaults.
    args_type: type[A]
    #: Validates `pluginConfig[i].args`, noting every problem on the reader; never raises.
    parse_args: Callable[[FieldReader], A]
    #: Builds what a cycle runs, once per profile, from the profile's arguments; None for a
    #: plugin that only configures (DefaultEvictor) or acts after every plugin has run
    #: (SoftTainter).
    new: Callable[[A], PluginRun] | None = None
    #: Other names the policy file may use for it (upstream's, where ours differ).
    aliases: tuple[str, ...] = ()
    #: Plugins that must be enabled in the same profile, each with why.
    requires: Mapping[PluginName, str] = field(default_factory=dict)
    #: At least one of these must be enabled in the same profile (empty: no such need).
    requires_one_of: tuple[PluginName, ...] = ()
    #: Driven by telemetry (TASViolations, LoadAware): the per-owner cooldown guards it by
    #: default. The classic plugins behave as upstream's unless a profile opts them in.
    telemetry: bool = False
    #: The metric names the plugin reads, for the metric view to refresh.
    metric_names: Callable[[A], set[MetricName]] | None = None
    #: Run even while the circuit breaker is open (its evictions are still stopped by the
    #: evictor): a plugin whose findings feed metrics or taints, not only evictions.
    runs_while_breaker_open: bool = False
    #: Empties nodes that must not run the pod (TASViolations): every guarded pod of an owner
    #: may leave a violating node in the same cycle, and only this plugin's own earlier
    #: evictions start its cooldown (a rebalancing move must not delay leaving a bad node).
    evacuates: bool = False

    @classmethod
    def serving(
        cls,
        point: ExtensionPoint,
        name: PluginName,
        *,
        args: tuple[type[A], Callable[[FieldReader], A]],
        run: Callable[[A, PluginContext], None] | None = None,
        new: Callable[[A], PluginRun] | None = None,
        telemetry: bool = False,
        evacuates: bool = False,
        metric_names: Callable[[A], set[MetricName]] | None = None,
        runs_while_breaker_open: bool = False,
    ) -> Plugin[A]:
        """A plugin a cycle runs at one point: `args` is its arguments type and their parser;
        `run(args, context)` for a plugin that remembers nothing between cycles, or `new(args)`
        for one that does."""
        args_type, parse_args = args
        if (run is None) == (new is None):
            raise TypeError(f"{name}: give run or new, not both or neither")
        if run is not None:
            new = functools.partial(_Stateless, run)
        return cls(
            name=name,
            points=frozenset({point}),
            args_type=args_type,
            parse_args=parse_args,
            new=new,
            telemetry=telemetry,
            metric_names=metric_names,
            runs_while_breaker_open=runs_while_breaker_open,
            evacuates=evacuates,
        )

    @classmethod
    def node_by_node(
        cls,
        name: PluginName,
        *,
        args: tuple[type[A], Callable[[FieldReader], A]],
        candidates: Callable[[A, Node, PluginContext], Iterable[tuple[Pod, str]]],
    ) -> Plugin[A]:
        """A deschedule plugin that remembers nothing and goes over the Ready nodes in order
        (`PluginContext.evict_from_each_node`): `candidates(args, node, context)` gives each
        node's pods to evict with the reason for each."""

        def run(plugin_args: A, context: PluginContext) -> None:
            context.evict_from_each_node(
                strategy=name, candidates_on=lambda node: candidates(plugin_args, node, context)
            )

        return cls.serving(ExtensionPoint.DESCHEDULE, name, args=args, run=run)


AnyPlugin = Plugin[Any]
