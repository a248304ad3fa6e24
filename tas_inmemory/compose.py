"""The closed loop's composition root: the one place the loop (`tas_inmemory.loop.ClosedLoop`) and
the parts it steps are built, for `tas simulate`, `tas run --scenario` (both through
`tas_simulator.runner.build_run`) and the health demo of `tas run`
(`tas_dashboard.worlds.demo_setup`).

`compose_loop` builds, from the caller's settings and sources:

- the policy controller's `Reconciler` with the caller's `controller` settings (None: no
  controller), e.g. its circuit breaker's share (`tas controller`'s default, or 1.0, all of
  the nodes, for a contender that labels whatever violates), counting into a registry of its
  own;
- the kube-scheduler model (`InMemoryScheduler`) over the caller's extender (None: none), its
  ties broken by `tie_breaks`;
- what the view fetches: the policies' metrics when something reads the policies (the
  extender or the controller), herd control's pairs when it runs, the descheduler's, and the
  caller's `extra_metrics` (what the page shows), kept current as the policies change;
- the `ClosedLoop` over them, its first descheduling cycle at `first_cycle` (None: one
  interval in).

What differs between contenders is decided by the caller and passed in built: which extender
(ours in process or behind HTTP, Intel TAS's, Volcano's), the descheduler (built by
`descheduler.assemble.assemble_descheduler`, its one place, migration awareness added by the
simulator), herd control's tracker, the hooks (Volcano's usage refresh, the OpenShift soft
tainter, metrics-server's answers, the demo's policy files) and the observers (the figures,
the page). A new option of a part the loop builds is a parameter here and its test
(tests/tas_inmemory/test_compose.py, which also holds that nothing else builds a `ClosedLoop`, its
scheduler model or a `Reconciler`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry

from descheduler.cycle import Descheduler
from policy_controller.reconciler import Reconciler
from policy_controller.self_metrics import ControllerMetrics
from policy_controller.settings import DEFAULT_CONTROLLER, ControllerSettings
from tas.clock import Clock
from tas.metrics.source import PodUsageFeed
from tas.metrics.view import MetricView
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.types import MetricName
from tas_herd.placements import HERD_CONTROL_METRICS, PlacementTracker
from tas_inmemory.cluster import InMemoryCluster
from tas_inmemory.loop import ClosedLoop, LoopHooks, LoopObserver, WorldStepper
from tas_inmemory.scheduler import Extender, InMemoryScheduler


class LoopView(MetricView, Protocol):
    """The metric view the loop's parts read and the loop refreshes each sync period
    (`tas.metrics.refreshing.RefreshingMetricView`)."""

    def refresh_once(self) -> None: ...


def compose_loop(
    *,
    world: WorldStepper,
    cluster: InMemoryCluster,
    view: LoopView,
    policies: PolicyStore,
    clock: Clock,
    step_seconds: float,
    sync_period: float,
    descheduling_interval: float,
    first_cycle: float | None = None,
    extender: Extender | None,
    tie_breaks: random.Random | None = None,
    controller: ControllerSettings | None = DEFAULT_CONTROLLER,
    descheduler: Descheduler | None = None,
    placements: PlacementTracker | None = None,
    pod_usage: PodUsageFeed | None = None,
    extra_metrics: Iterable[MetricName] = (),
    hooks: LoopHooks | None = None,
    observers: Sequence[LoopObserver] = (),
    pending: Callable[[], int] | None = None,
) -> ClosedLoop:
    """The closed loop over `world` (see the module docstring), its view told what to fetch.

    `placements`: herd control's tracker, fed each sync from `pod_usage` (as `tas extender`
    feeds it); `pending` as `ClosedLoop` says."""
    reconciler = (
        Reconciler(
            cluster=cluster,
            policies=policies,
            metric_view=view,
            metrics=ControllerMetrics(CollectorRegistry()),
            settings=controller,
            clock=clock,
        )
        if controller is not None
        else None
    )
    _want_metrics(
        view,
        policies=policies if extender is not None or reconciler is not None else None,
        herd_control=placements is not None,
        descheduler=descheduler,
        extra=extra_metrics,
    )
    return ClosedLoop(
        world=world,
        view=view,
        scheduler=InMemoryScheduler(cluster, extender=extender, rng=tie_breaks),
        step_seconds=step_seconds,
        sync_period=sync_period,
        descheduling_interval=descheduling_interval,
        next_cycle=descheduling_interval if first_cycle is None else first_cycle,
        reconciler=reconciler,
        descheduler=descheduler,
        placements=placements,
        pod_usage=pod_usage,
        hooks=hooks if hooks is not None else LoopHooks(),
        observers=observers,
        pending=pending,
    )


def _want_metrics(
    view: MetricView,
    *,
    policies: PolicyStore | None,
    herd_control: bool,
    descheduler: Descheduler | None,
    extra: Iterable[MetricName] = (),
) -> None:
    """Keep `view` fetching what the loop's parts read: the metrics `policies` name (None:
    nothing reads them), herd control's pairs, the descheduler's, and `extra`."""
    wanted = set(extra)
    if herd_control:
        wanted |= HERD_CONTROL_METRICS  # as `tas extender` fetches for herd control
    if descheduler is not None:
        wanted |= descheduler.wanted_metrics()
    if policies is None:
        view.set_wanted(wanted)
    else:
        want_policy_metrics(policies, view, extra=wanted)
