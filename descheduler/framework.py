"""The plugin contract: a descheduler plugin is a value, `Plugin`, not a name in three places.

A plugin states its name (and aliases), the extension points it serves, its arguments type
with the parser that validates them (every problem noted with its path), and the function a
cycle runs. The config reader resolves names through a registry
(`descheduler.plugins.registry`) and stores the resolved plugins in each profile; the cycle
runs whatever a profile enabled through this contract, so neither dispatches on plugin names.

As upstream, `deschedule` plugins of every profile run before any profile's `balance`
plugins; `filter` and `preEvictionFilter` name the DefaultEvictor, whose arguments become the
profile's evictor rules.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, NewType, Protocol, TypeVar

from descheduler.args import FieldReader
from descheduler.classify import Classification
from descheduler.state import CycleState, PodKey
from tas.types import MetricName, NodeName

if TYPE_CHECKING:
    # The evictor imports the DefaultEvictor plugin (for its arguments), which imports this
    # module: a runtime import here would go round in a circle.
    from descheduler.evictor import Evictor

PluginName = NewType("PluginName", str)

#: Per-pod usage, as a share of its node (signal -> 0..100), where it is measured.
PodUsage = Mapping[PodKey, Mapping[str, float]]
PodUsageSource = Callable[[CycleState], PodUsage]


class UsageError(Exception):
    """Actual usage could not be read (the metrics server or Prometheus failed or lacks a node)."""


class UsageSources(Protocol):
    """Measured usage a plugin may ask for (LowNodeUtilization's `metricsUtilization`).

    Each raises `UsageError` when its source cannot answer.
    """

    def node_metrics(self) -> Mapping[NodeName, Mapping[str, float]]:
        """The metrics server's usage per node, base units (CPU cores, memory bytes)."""
        ...

    def pod_metrics(self) -> Mapping[PodKey, Mapping[str, float]]:
        """The metrics server's usage per pod, its containers summed, base units."""
        ...

    def prometheus_query(self, query: str) -> Mapping[NodeName, float]:
        """An instant query's value per node (its `instance` label), expected in 0..1."""
        ...


class NoUsageSources:
    """Usage sources that answer nothing: every question is a `UsageError`."""

    def node_metrics(self) -> Mapping[NodeName, Mapping[str, float]]:
        raise UsageError("no metrics server is configured")

    def pod_metrics(self) -> Mapping[PodKey, Mapping[str, float]]:
        raise UsageError("no metrics server is configured")

    def prometheus_query(self, query: str) -> Mapping[NodeName, float]:
        raise UsageError("no Prometheus is configured (metricsProviders)")


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
    """What a plugin's run gets: one profile's evictor for this cycle, and the cycle's seams."""

    evictor: Evictor
    #: Called with a classification of the nodes, if the plugin makes one (LoadAware,
    #: LowNodeUtilization): the cycle reports it, exports it as metrics and soft-taints by it.
    classified: Callable[[Classification], None]
    pod_usage_source: PodUsageSource | None = None
    usage: UsageSources = field(default_factory=NoUsageSources)

    def pod_usage(self) -> PodUsage | None:
        """Per-pod usage for this cycle's snapshot, where a source measures it."""
        if self.pod_usage_source is None:
            return None
        return self.pod_usage_source(self.evictor.state)


@dataclass(frozen=True, eq=False)
class Plugin(Generic[A]):
    """One plugin, as data. Compared by identity: a registry holds each plugin once."""

    name: PluginName
    points: frozenset[ExtensionPoint]
    #: Its arguments; `args_type()` must give the defaults.
    args_type: type[A]
    #: Validates `pluginConfig[i].args`, noting every problem on the reader; never raises.
    parse_args: Callable[[FieldReader], A]
    #: What a cycle runs; None for a plugin that only configures (DefaultEvictor) or acts after
    #: every plugin has run (SoftTainter).
    run: Callable[[A, PluginContext], None] | None = None
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


AnyPlugin = Plugin[Any]
