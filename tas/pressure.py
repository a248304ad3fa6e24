"""The CPU stall model, and what moving a pod between two nodes is predicted to change.

One formula, built once: the simulator's workload model (`tas_inmemory.workload`) computes the PSI
it exports with it, and the descheduler predicts with it what an eviction will relieve
(`descheduler.plugins.load_aware`). Pure: numbers in, numbers out.

- A node of C cores at offered CPU load D (cores of demand) stalls with probability
  `pressure(D, C)`: the Erlang C probability that work must wait for one of C servers (PSI cpu
  `some`; 1 once D >= C).
- Its stalled demand is `stalled(D, C) = D * pressure(D, C)` cores: the demand that waits. It
  is what a move is judged in, because it adds up over nodes and is in the unit of the pod
  that moves (cores).
- A node's load is read from what is measured: `utilization * C`, or, where PSI says more (a
  bursty load stalls more than its mean suggests), the load at which Erlang C gives the
  measured PSI (`load_for_pressure`). So the prediction is anchored on the measured stall.
  A reading below `MIN_PSI` is noise, not load: it never reads back as any (near idle, Erlang
  C on many cores is so flat that a noisy 0.012 on 16 cores would read back as 8 busy cores).
- A node whose own curve has been learned (`tas.calibration.curve`: Erlang C with its effective
  server count s at its utilization) is predicted on that curve instead (`NodeLoad.servers`);
  the shared model is the fallback while it has too few samples.
- Moving a pod that uses u cores from node A to node B relieves A by
  stalled(D_A) - stalled(D_A - u) and burdens B by stalled(D_B + u) - stalled(D_B). The move
  costs the pod's work while it restarts (or migrates): u * restart seconds, spread over the
  time the move is expected to hold (the payback horizon). It pays when the relief, less the
  burden, exceeds that cost; a move that leaves B hot (at or above the at-risk pressure) and
  stalling as much as A did before would only move the hot node, and never pays.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

#: PSI cpu `some` below this is noise, not load (`NodeLoad.measured` reads no load from it).
#: An idle node's reading is not 0: system daemons, probes and kworkers keep a task waiting
#: now and then (0-2% on a real idle node), and a reading cannot fall below 0, so noise on it
#: averages to a positive bias rather than out (a rate over noisy samples of a per-read spread
#: of 2-5 points reads 0.008-0.02 on an idle node, and below 0.05 in 999 of 1,000 one-minute
#: reads at 5 points). The kernel's own resolution (0.01% in /proc/pressure) is far finer:
#: the floor is the noise's. Nothing is decided below it: a node at 0.05 is far from the
#: at-risk pressure (`MoveCost.hot_pressure`, 0.25), so utilization alone reads its load.
MIN_PSI = 0.05


def erlang_c(servers: int, load: float) -> float:
    """The probability that work must wait, with `servers` servers at offered load `load`.

    Computed through Erlang B's stable recursion: B(0) = 1, B(k) = A B(k-1) / (k + A B(k-1)),
    then C = c B / (c - A (1 - B)). 1 when the load reaches the servers (the queue grows).
    """
    if servers < 1:
        raise ValueError(f"servers must be at least 1, got {servers}")
    if load <= 0:
        return 0.0
    if load >= servers:
        return 1.0
    b = 1.0
    for k in range(1, servers + 1):
        b = load * b / (k + load * b)
    return min(1.0, servers * b / (servers - load * (1.0 - b)))


def servers_of(cores: float) -> int:
    """Whole servers for Erlang C: the cores rounded, at least one."""
    return max(1, round(cores))


def pressure(load: float, cores: float, servers: int = 0) -> float:
    """PSI cpu `some` (0..1) of a node with `cores` cores at CPU load `load` (cores).

    `servers` > 0: the node's own curve (`tas.calibration.curve`), Erlang C with that many
    effective servers at the same utilization (`load / cores`); 0: the shared model."""
    if servers > 0 and cores > 0:
        return erlang_c(servers, load / cores * servers)
    return erlang_c(servers_of(cores), load)


def stalled(load: float, cores: float, servers: int = 0) -> float:
    """Cores of demand that wait on a node of `cores` cores at load `load`."""
    return max(0.0, load) * pressure(load, cores, servers)


def load_for_pressure(psi: float, cores: float, servers: int = 0) -> float:
    """The load (cores) at which the model's pressure equals `psi` (bisection; pressure rises
    monotonically with load). `psi` >= 1 gives the full node. `servers`: as `pressure`."""
    if servers > 0 and cores > 0:
        return _shared_load_for_pressure(psi, servers) * cores / servers
    return _shared_load_for_pressure(psi, cores)


# Kept: a cycle reads each node's pressure back through the curve once per reader (herd
# control, LoadAware's loads and peaks, nodeFit), and a bisection is 40 Erlang C sums. Exact
# (the same arguments give the same bits); a few thousand nodes' readings stay in it.
@functools.lru_cache(maxsize=8192)
def _shared_load_for_pressure(psi: float, cores: float) -> float:
    servers = servers_of(cores)
    if psi <= 0:
        return 0.0
    if psi >= 1:
        return float(servers)
    low, high = 0.0, float(servers)
    for _ in range(40):
        middle = (low + high) / 2
        if erlang_c(servers, middle) < psi:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """A node as the prediction sees it: its cores, its load (cores of demand), and its curve:
    `servers` effective servers where the node's own curve is known (`tas.calibration.curve`),
    0 for the shared model."""

    cores: float
    load: float
    servers: int = 0

    @classmethod
    def measured(
        cls,
        cores: float,
        *,
        utilization: float | None,
        psi: float | None,
        servers: int = 0,
    ) -> NodeLoad:
        """The load the measurements imply: the larger of utilization's and PSI's (read back
        through the node's curve); PSI below `MIN_PSI` implies none (noise), and a value that
        is not a number implies nothing."""
        load = 0.0
        if utilization is not None and math.isfinite(utilization):
            load = max(load, utilization * cores)
        if psi is not None and psi >= MIN_PSI:
            load = max(load, load_for_pressure(psi, cores, servers))
        return cls(cores=cores, load=load, servers=servers)

    @property
    def pressure(self) -> float:
        return pressure(self.load, self.cores, self.servers)

    @property
    def stalled(self) -> float:
        return stalled(self.load, self.cores, self.servers)

    @property
    def curve_key(self) -> tuple[int, float]:
        """Nodes with one key share one curve, on which pressure rises with load alone."""
        if self.servers > 0:
            return (self.servers, self.cores)
        return (0, float(servers_of(self.cores)))

    def plus(self, cores: float) -> NodeLoad:
        return NodeLoad(self.cores, max(0.0, self.load + cores), self.servers)


@dataclass(frozen=True, slots=True)
class MoveCost:
    """What a move costs: the pod's work for `restart_seconds`, spread over `payback_seconds`;
    and the risk it must not take: a destination at or above `hot_pressure` afterwards, and
    stalling as much as the source did before, would be the next hot node."""

    restart_seconds: float = 30.0
    payback_seconds: float = 300.0
    hot_pressure: float = 0.25

    def of(self, usage: float) -> float:
        """The cost of moving a pod that uses `usage` cores, in cores over the horizon."""
        if self.payback_seconds <= 0:
            return math.inf
        return usage * self.restart_seconds / self.payback_seconds


@dataclass(frozen=True, slots=True)
class Prediction:
    """What moving `usage` cores from `source` to `destination` is predicted to do."""

    usage: float
    source: NodeLoad
    destination: NodeLoad
    #: Stalled cores the source loses.
    relief: float
    #: Stalled cores the destination gains.
    burden: float
    #: The move's cost, in cores over the payback horizon.
    cost: float
    #: The pressure from which a node is hot (`MoveCost.hot_pressure`).
    hot_pressure: float = 0.25

    @property
    def source_after(self) -> NodeLoad:
        return self.source.plus(-self.usage)

    @property
    def destination_after(self) -> NodeLoad:
        return self.destination.plus(self.usage)

    @property
    def net(self) -> float:
        """Stalled cores the fleet loses: relief less burden."""
        return self.relief - self.burden

    @property
    def moves_the_hot_node(self) -> bool:
        """The destination would be hot, and stall as much as the source did before the move:
        the move would only make it the next hot node (a move must cool the hotter of the two)."""
        after = self.destination_after.pressure
        return after >= self.hot_pressure and after >= self.source.pressure

    @property
    def gain(self) -> float:
        """How many times the net relief covers the cost (0 when it does not pay at all)."""
        if self.moves_the_hot_node or self.net <= 0:
            return 0.0
        if self.cost <= 0:
            return math.inf
        return self.net / self.cost

    @property
    def pays(self) -> bool:
        return self.gain > 1.0

    def describe(self, source: str, destination: str) -> str:
        """One line for the eviction's reason and the decision log."""
        before, after = self.source, self.source_after
        there, there_after = self.destination, self.destination_after
        gain = "inf" if math.isinf(self.gain) else f"{self.gain:.1f}"
        return (
            f"moving {self.usage:.2f} cores: pressure {before.pressure:.2f} -> "
            f"{after.pressure:.2f} on {source}, {there.pressure:.2f} -> "
            f"{there_after.pressure:.2f} on {destination}; relief {self.relief:.3f} - burden "
            f"{self.burden:.3f} stalled cores vs cost {self.cost:.3f} (gain x{gain})"
            + (
                f"; it would make {destination} the next hot node"
                if self.moves_the_hot_node
                else ""
            )
        )


def predict(usage: float, source: NodeLoad, destination: NodeLoad, cost: MoveCost) -> Prediction:
    """The prediction for moving a pod that uses `usage` cores from `source` to `destination`."""
    return Prediction(
        usage=usage,
        source=source,
        destination=destination,
        relief=source.stalled - source.plus(-usage).stalled,
        burden=destination.plus(usage).stalled - destination.stalled,
        cost=cost.of(usage),
        hot_pressure=cost.hot_pressure,
    )
