"""The simulator's world as the closed loop's `WorldStepper` (`tas_inmemory.loop`): the loop is the
product's components over the in-memory cluster; the world it moves is the simulator's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tas_simulator.pipeline import ScrapeStore
from tas_simulator.world import ModelState, World


class SimulatedWorld:
    """The simulator's world as a `WorldStepper`: the scenario's events, the workload model
    (with OOM kills), and the metric pipeline's integration and scrapes (`tas_simulator.pipeline`).
    `watchers` see each step's state (the figures' recorder, the page)."""

    def __init__(
        self,
        world: World,
        store: ScrapeStore,
        *,
        watchers: Sequence[Callable[[ModelState, float], None]] = (),
    ) -> None:
        self.world = world
        self.store = store
        self.watchers = list(watchers)
        self.state: ModelState | None = None

    def advance(self, t: float, step: float) -> None:
        world = self.world
        world.clock.advance_to(t)
        for event in world.due_events(t):
            world.apply(event, t)
        state = world.model(t)
        if world.kill_out_of_memory(state):
            state = world.model(t)
        world.report_ready(t)
        self.store.integrate(state, step)
        self.store.maybe_scrape(t)
        self.state = state
        for watcher in self.watchers:
            watcher(state, step)
