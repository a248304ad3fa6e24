"""The closed loop, one step at a time: what `tas simulate`, `tas run --scenario` and `tas run`
all run, so the page, the simulator and the evidence describe one loop.

A step at scenario time `t`, in the order the parts of a cluster act on what changed:

1. the world moves to `t` (`WorldStepper.advance`): a scenario's events that are due, the
   workload's usage, demand and pressure, OOM kills, and a scrape when one is due (the
   simulator's pipeline), or the node textfiles written (the health demo);
2. every sync period: the metric view refreshes; herd control learns the pods' usage; the
   policy controller reconciles on the refreshed values (its own sync period in a cluster);
3. every descheduling interval: the descheduler's cycle, on the same values;
4. the scheduler places what is pending, pods the descheduler has just evicted included:
   their controllers recreate them at once and kube-scheduler binds a pod within a second,
   well inside a step, so a recreated pod never waits a whole step for its node.

Components that a loop does not run are None. What a run records (the simulator's figures,
the page's log and charts) watches through `LoopObserver`s; contender-specific parts (Volcano's
usage plugin, the OpenShift soft tainter, metrics-server's answers) are `hooks`.

Per-pod usage for the descheduler is production's (`descheduler.usage.pod_usage_from`: every
CPU signal as a share of the node capped at 100, memory as requested), over a `PodUsageFeed`
of what container metrics report.

The loop lives beside the in-memory cluster and kube-scheduler model it runs the product's
components over, the one module of this package that imports components (an import-linter
contract names its edges). The worlds it moves are the callers': the simulator's
(`tas_simulator.simulated_world.SimulatedWorld`) and the health demo's
(`tas_inmemory.live_telemetry.LiveWorld`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from descheduler.cycle import CycleReport, Descheduler
from policy_controller.reconciler import Reconciler
from tas.metrics.errors import MetricFetchError
from tas.metrics.source import PodUsageFeed
from tas.types import PodKey
from tas_herd.placements import PlacementTracker
from tas_inmemory.scheduler import InMemoryScheduler, ScheduleResult

#: Scenario steps are floats: a deadline this close is due (rounding of index * step).
_DUE = 1e-9


class WorldStepper(Protocol):
    """The world the components act in, moved to a time (seconds since the loop started)."""

    def advance(self, t: float, step: float) -> None: ...


class RefreshingView(Protocol):
    def refresh_once(self) -> None: ...


class LoopObserver:
    """What a run records of each step; every method does nothing unless overridden."""

    def synced(self, t: float) -> None:
        """The view has refreshed; the controller is about to reconcile."""

    def cycled(self, t: float, report: CycleReport) -> None:
        """The descheduler's cycle has run."""

    def placed(self, t: float, placements: Sequence[ScheduleResult]) -> None:
        """The scheduler has placed what was pending (maybe nothing)."""

    def stepped(self, t: float) -> None:
        """The step is done."""


@dataclass(kw_only=True)
class LoopHooks:
    """Contender-specific parts, at their points of the step."""

    #: After the view refreshed (and before the controller reconciles): policies reloaded,
    #: Volcano's scheduler usage refreshed, the page's inputs noted.
    on_sync: Sequence[Callable[[], object]] = ()
    #: Before the descheduler's cycle: metrics-server's answers published.
    before_cycle: Sequence[Callable[[], object]] = ()
    #: After it: the OpenShift soft tainter's own sync.
    after_cycle: Sequence[Callable[[], object]] = ()


@dataclass(kw_only=True)
class ClosedLoop:
    """See the module docstring. `step(t)` with `t` non-decreasing, a step apart."""

    world: WorldStepper
    view: RefreshingView
    scheduler: InMemoryScheduler
    #: Seconds of scenario time per step, per sync, per descheduling cycle.
    step_seconds: float
    sync_period: float
    descheduling_interval: float
    reconciler: Reconciler | None = None
    descheduler: Descheduler | None = None
    #: Herd control's tracker and what feeds it each pod's usage (the extender's feed).
    placements: PlacementTracker | None = None
    pod_usage: PodUsageFeed | None = None
    hooks: LoopHooks = field(default_factory=LoopHooks)
    observers: Sequence[LoopObserver] = ()
    #: How many pods are pending, where the world can tell cheaply (the simulator's): the
    #: scheduler is asked only then. None: asked every step.
    pending: Callable[[], int] | None = None
    next_sync: float = 0.0
    next_cycle: float = field(default=-1.0)
    #: The feed's last answer and what herd control was given of it: a feed answers with the
    #: same mapping until its values change (read, never changed), and a sync comes every
    #: 2 s where scrapes come every 30-60 s.
    _fed: tuple[object, dict[PodKey, dict[str, float]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.next_cycle < 0:
            self.next_cycle = self.descheduling_interval

    def step(self, t: float) -> None:
        self.world.advance(t, self.step_seconds)
        if t + _DUE >= self.next_sync:
            self.view.refresh_once()
            if self.placements is not None and self.pod_usage is not None:
                self._feed_placements(self.placements, self.pod_usage)
            for hook in self.hooks.on_sync:
                hook()
            for observer in self.observers:
                observer.synced(t)
            if self.reconciler is not None:
                self.reconciler.reconcile()
            self.next_sync += self.sync_period
        if self.descheduler is not None and t + _DUE >= self.next_cycle:
            for hook in self.hooks.before_cycle:
                hook()
            report = self.descheduler.run_cycle()
            for observer in self.observers:
                observer.cycled(t, report)
            for hook in self.hooks.after_cycle:
                hook()
            self.next_cycle += self.descheduling_interval
        if self.pending is None or self.pending():
            placements = self.scheduler.schedule_pending()
            for observer in self.observers:
                observer.placed(t, placements)
        for observer in self.observers:
            observer.stepped(t)

    def _feed_placements(self, placements: PlacementTracker, feed: PodUsageFeed) -> None:
        """As `tas extender` feeds herd control: the last usage stays while the feed fails."""
        try:
            usage = feed.fetch()
        except MetricFetchError:
            return
        if self._fed is None or self._fed[0] is not usage:
            self._fed = (usage, _cpu_and_memory(usage))
        # A new mapping each time, as `tas extender` gives it (herd control skips one equal
        # to the last only then).
        placements.set_usage(dict(self._fed[1]))


@dataclass(kw_only=True)
class RealTime:
    """Steps a loop as wall time passes, `speed` times faster (`tas run`): at each tick every
    step due by then, catching up when behind (at most `max_steps` a tick, so a stop is
    answered on a slow machine), then `after_tick` with the loop's time; `steps` of them in
    all (a scenario's), or forever (None: the demo)."""

    loop: ClosedLoop
    tick_seconds: float
    speed: float = 1.0
    steps: int | None = None
    max_steps: int = 1000
    after_tick: Callable[[float], None] = lambda t: None
    index: int = 0

    @property
    def finished(self) -> bool:
        return self.steps is not None and self.index >= self.steps

    def run(self, stop: threading.Event) -> None:
        started = time.monotonic()
        step = self.loop.step_seconds
        while not stop.is_set():
            due = (time.monotonic() - started) * self.speed
            taken = 0
            while (
                not self.finished
                and self.index * step <= due + _DUE
                and taken < self.max_steps
                and not stop.is_set()
            ):
                self.loop.step(self.index * step)
                self.index += 1
                taken += 1
            self.after_tick(max(0.0, (self.index - 1) * step))
            stop.wait(self.tick_seconds)


def _cpu_and_memory(usage: Mapping[PodKey, Mapping[str, float]]) -> dict[PodKey, dict[str, float]]:
    kept: dict[PodKey, dict[str, float]] = {}
    for key, values in usage.items():
        cpu, memory = values.get("cpu"), values.get("memory")
        if cpu is not None and memory is not None:
            kept[key] = {"cpu": cpu, "memory": memory}  # the feeds' usual answer
        else:
            kept[key] = {r: values[r] for r in ("cpu", "memory") if r in values}
    return kept
