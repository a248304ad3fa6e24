"""The one place a `Descheduler` is put together: its DeschedulerPolicy, the sources it reads and
the options that differ between those who run it.

`tas descheduler`, `tas run`, `tas explain`, the simulator and a dry run all call
`assemble_descheduler`; a new component option is a parameter here (and its test), not an edit
at every construction site. What it builds from the policy: each profile's plugins, once
(`Plugin.new`: what a plugin remembers between cycles is its own), and the client of the
Prometheus the policy's `metricsProviders` names.

It is also where a plugin gets what it needs beyond the per-cycle handle (which carries only
what is generic to every plugin, `descheduler.framework.PluginContext`): the descheduler's owner
cooldown and reservations are made here and given both to the cycle and, when built, to the
plugins that read or fill them. LoadAware is built with the evictions remembered
(`descheduler.evictor.CooldownMoves`, a `descheduler.settling.MoveHistory`: which nodes were
evacuated lately, which pods are replacements left to settle); MakeRoomForPending with them and
`Reservations.reserve` (a node kept free for a pending pod until the next cycle).

What the caller decides:

- where it reads: the cluster, the metric view, the policies, the clock;
- per-pod usage: `pod_usage_feed`, container metrics read as production reads them
  (`descheduler.usage.pod_usage_from`), or `pod_usage`, a reading of the caller's own (a
  contender modelled with its own query);
- how it reaches Prometheus (`prometheus`, a factory of clients by URL: the ServiceAccount
  token's by default);
- whether it acts: `mode`, or `read_only` (a dry run, `tas explain`): the cluster's writes are
  refused or dropped and the mode is Predictive, whatever `mode` says;
- where it counts (`metrics`; None: nowhere).

`dry_run` is the next cycle of a running descheduler, assembled the same way over a read-only
cluster, from copies of its memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from descheduler.config import DeschedulerConfig
from descheduler.cycle import CycleReport, Descheduler, Mode, PolicySource, Reservations
from descheduler.evictor import Cooldown, CooldownMoves
from descheduler.framework import (
    AnyPlugin,
    PluginName,
    PluginRun,
    PodUsageSource,
    PrometheusClient,
    PrometheusFactory,
)
from descheduler.plugins import load_aware, make_room
from descheduler.self_metrics import DeschedulerMetrics
from descheduler.settling import MoveHistory
from descheduler.usage import pod_usage_from, service_account_prometheus
from tas.calibration.curve import CurveLearner
from tas.clock import Clock
from tas.cluster.interface import Cluster
from tas.cluster.read_only import ReadOnlyCluster
from tas.metrics.source import PodUsageFeed
from tas.metrics.view import MetricView
from tas.types import Namespace


def assemble_descheduler(
    *,
    config: DeschedulerConfig,
    cluster: Cluster,
    metric_view: MetricView,
    policies: PolicySource,
    clock: Clock,
    mode: Mode = Mode.PREDICTIVE,
    read_only: str | None = None,
    metrics: DeschedulerMetrics | None = None,
    pod_usage_feed: PodUsageFeed | None = None,
    pod_usage: PodUsageSource | None = None,
    prometheus: PrometheusFactory = service_account_prometheus,
) -> Descheduler:
    """The descheduler `config` describes, over the caller's sources.

    `read_only`: why it must not act (e.g. "tas explain"; the refused writes' errors say so).
    `pod_usage_feed` and `pod_usage` are two ways to give the same thing: at most one.
    Raises what `prometheus` raises (`descheduler.usage.TokenOverPlainHttpError`)."""
    if pod_usage_feed is not None and pod_usage is not None:
        raise ValueError("give pod_usage_feed or pod_usage, not both")
    if pod_usage_feed is not None:
        pod_usage = pod_usage_from(pod_usage_feed)
    if read_only is not None:
        cluster = ReadOnlyCluster(cluster, why=read_only)
        mode = Mode.PREDICTIVE
    cooldown = Cooldown(config.cooldown_seconds)
    reservations = Reservations()
    return Descheduler(
        config=config,
        cluster=cluster,
        metric_view=metric_view,
        policies=policies,
        mode=mode,
        clock=clock,
        plugins=_build_plugins(config, moves=CooldownMoves(cooldown), reserve=reservations.reserve),
        cooldown=cooldown,
        reservations=reservations,
        metrics=metrics,
        pod_usage=pod_usage,
        prometheus=prometheus(config.prometheus_url) if config.prometheus_url else None,
    )


def dry_run(
    live: Descheduler, *, watch: frozenset[tuple[Namespace, str]] = frozenset()
) -> CycleReport:
    """The next cycle of `live`, in Predictive mode over a read-only cluster, from copies of its
    memory (owner cooldowns, the plugins' memory, the circuit breaker): nothing of `live`
    changes. `watch`: pods whose every filter rejection the report records too."""
    client = live.prometheus_client

    def same_client(url: str) -> PrometheusClient:
        # Asked only when the config names a Prometheus, as it was for `live`.
        if client is None:
            raise ValueError(f"no Prometheus client for {url}")
        return client

    dry = assemble_descheduler(
        config=live.config,
        cluster=live.cluster,
        metric_view=live.metric_view,
        policies=live.policies,
        clock=live.clock,
        read_only="a dry run",
        pod_usage=live.pod_usage,
        # Its own per-cycle answers, over the live client: no second client to build.
        prometheus=same_client,
    )
    dry.continue_from(live)
    dry.watched = watch
    return dry.run_cycle()


def _build_plugins(
    config: DeschedulerConfig, *, moves: MoveHistory, reserve: make_room.Reserve
) -> dict[tuple[str, PluginName], PluginRun]:
    """Every enabled plugin that runs, built once per profile with that profile's args; the
    plugins that need more than the per-cycle handle built with it: LoadAware with `moves`,
    MakeRoomForPending with `moves` and `reserve`."""
    machinery: dict[AnyPlugin, Callable[[Any], PluginRun]] = {
        load_aware.PLUGIN: lambda args: load_aware.LoadAware(args, moves=moves),
        make_room.PLUGIN: lambda args: make_room.MakeRoom(args, moves=moves, reserve=reserve),
    }
    return {
        (profile.name, plugin.name): machinery.get(plugin, plugin.new)(profile.args_of(plugin))
        for profile in config.profiles
        for plugin in (*profile.deschedule, *profile.balance)
        if plugin.new is not None
    }


def load_aware_curves(descheduler: Descheduler | None) -> CurveLearner | None:
    """The pressure curves the descheduler's LoadAware learns (None: no LoadAware runs, or it
    does not learn curves: `learnPressureCurve: false`). Read, never changed."""
    if descheduler is None:
        return None
    for run in descheduler.plugins.values():
        learner = getattr(run, "curves", None)
        if isinstance(learner, CurveLearner):
            return learner
    return None
