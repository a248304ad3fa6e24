"""Each node's own pressure curve, learned online from the (utilization, PSI) pairs it reports.

The shared model (`tas.pressure`) gives every node of C cores the curve of Erlang C with C
servers. Real nodes differ: burstiness, SMT siblings, cgroup limits and noisy neighbours make
one node stall at a utilization where another does not. A node's curve here is the same
family with its own *effective server count* s:

    pressure(utilization u) = ErlangC(s, u * s)

Few servers is a bursty node (at s = 1 pressure equals utilization: it stalls early and
gently); many is a smooth one (a sharp knee near full utilization). s = the node's cores is the
shared model. The family is one parameter, cheap to evaluate, and monotone in s at any
utilization, so each sample names the s its curve passes through.

The fit (`CurveLearner`): every informative sample (finite, utilization in
[MIN_UTILIZATION, MAX_UTILIZATION], PSI in [MIN_PSI, MAX_PSI]: below, the curve says nothing
about s; above, every s saturates) is inverted to its s; a node's s is the median of its last
`window` inversions, kept in a fixed-size ring, rounded to whole servers and clamped to
[1, MAX_SERVERS_FACTOR x cores]. The median makes one bad sample, or a node that flips
between two curves, move s at most to between them. A node with fewer than `min_samples`
informative samples (or none newer than `max_age` seconds) is on the fallback: the shared
model, and `NodeCurve.fallback` says so. Nodes not named by `retain` are forgotten; samples
older than `max_age` are aged out. Memory: one ring of `window` floats per node.

Pure: values in, values out; the learner is state a component owns (LoadAware's instance, the
extender's placement tracker), fed from the metric columns it already reads.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from tas.pressure import MIN_PSI as NOISE_FLOOR
from tas.pressure import erlang_c, servers_of
from tas.types import NodeName

#: Samples below this utilization are not fitted on: PSI there is noise (a pod's own limits).
MIN_UTILIZATION = 0.05
#: ... nor above this one: every curve of the family is 1 at full utilization.
MAX_UTILIZATION = 0.98
#: PSI outside [MIN_PSI, MAX_PSI] names no s (a wide range of s gives ~0, or ~1). The floor is
#: the noise's (`tas.pressure.MIN_PSI`): an idle node's positive noise (0.012 at 10% utilization)
#: would otherwise be inverted to a bursty curve of 2 servers on 16 cores.
MIN_PSI = NOISE_FLOOR
MAX_PSI = 0.99
#: A node's effective servers are at most this many times its cores (a node smoother than
#: Erlang C on its cores), and at least 1.
MAX_SERVERS_FACTOR = 2.0
#: The defaults: ring size, samples before the fit is used, and their age limit (seconds).
DEFAULT_WINDOW = 32
DEFAULT_MIN_SAMPLES = 8
DEFAULT_MAX_AGE = 3600.0
#: The utilization grid the inversion reads the family on (101 points, 0..1).
_GRID = 100


@dataclass(frozen=True, slots=True)
class NodeCurve:
    """One node's curve as the predictions use it, and what the operator is shown.

    `servers`: the effective server count the predictions use (the node's cores on the
    fallback); `fitted`: the median inversion before rounding (None without samples);
    `samples`: informative samples in the window; `fallback`: fewer than the learner's
    minimum, so the shared model stands."""

    servers: int
    samples: int
    fallback: bool
    fitted: float | None = None

    @property
    def override(self) -> int:
        """What `tas.pressure.NodeLoad.servers` takes: 0 (the shared model) on the fallback."""
        return 0 if self.fallback else self.servers


#: node -> its curve: what the pure layers are given (`tas.pressure.NodeLoad.measured`).
Curves = Mapping[NodeName, NodeCurve]


@functools.cache
def _row(servers: int) -> tuple[float, ...]:
    """ErlangC(servers, u * servers) on the utilization grid (one row per server count, built
    once: a row costs 101 x servers steps)."""
    return tuple(erlang_c(servers, k / _GRID * servers) for k in range(_GRID + 1))


def family_pressure(servers: float, utilization: float) -> float:
    """The family's pressure at `utilization` for (possibly fractional) `servers`: the grid
    read linearly in utilization and between the two whole server counts around it."""
    u = min(1.0, max(0.0, utilization))
    low = max(1, math.floor(servers))
    high = low + 1
    weight = servers - low if servers > low else 0.0
    p_low = _on_grid(_row(low), u)
    if weight <= 0:
        return p_low
    return p_low + weight * (_on_grid(_row(high), u) - p_low)


def _on_grid(row: tuple[float, ...], u: float) -> float:
    at = u * _GRID
    k = min(_GRID - 1, int(at))
    return row[k] + (at - k) * (row[k + 1] - row[k])


@functools.cache
def _columns(most: int) -> tuple[tuple[float, ...], ...]:
    """Per utilization grid point, minus the pressure of 1..`most` servers there: ascending in
    servers (pressure falls as servers rise), so `bisect` finds a crossing in C."""
    rows = [_row(s) for s in range(1, most + 1)]
    return tuple(tuple(-row[k] for row in rows) for k in range(_GRID + 1))


def _crossing(column: tuple[float, ...], psi: float) -> float:
    """The fractional server count (1-based) at which the column's pressure falls to `psi`."""
    at = bisect.bisect_left(column, -psi)  # column[at - 1] < -psi <= column[at]
    if at <= 0:
        return 1.0
    if at >= len(column):
        return float(len(column))
    before, after = -column[at - 1], -column[at]  # before > psi >= after
    share = (before - psi) / (before - after) if before > after else 1.0
    return at + share  # `at` servers at `before`, `at + 1` at `after`


def servers_for(utilization: float, psi: float, *, most: int) -> float:
    """The (fractional) effective servers, in [1, most], whose curve passes through
    (utilization, psi): pressure falls as servers rise at any utilization below 1, so each of
    the two grid utilizations around `utilization` names a crossing, read linearly between."""
    columns = _columns(most)
    at = min(1.0, max(0.0, utilization)) * _GRID
    k = min(_GRID - 1, int(at))
    low, high = _crossing(columns[k], psi), _crossing(columns[k + 1], psi)
    return low + (at - k) * (high - low)


@functools.cache
def most_servers(cores: float) -> int:
    """The clamp's upper end for a node of `cores` cores."""
    return max(2, math.ceil(MAX_SERVERS_FACTOR * servers_of(cores)))


def informative(utilization: float, psi: float) -> bool:
    """Whether a sample says anything about s (module docstring); False for any non-finite."""
    return (
        math.isfinite(utilization)
        and math.isfinite(psi)
        and MIN_UTILIZATION <= utilization <= MAX_UTILIZATION
        and MIN_PSI <= psi <= MAX_PSI
    )


class _Ring:
    """A node's last `size` inversions and their times: two fixed lists and a cursor."""

    __slots__ = ("count", "cursor", "last_time", "times", "values")

    def __init__(self, size: int) -> None:
        self.values = [0.0] * size
        self.times = [0.0] * size
        self.cursor = 0
        self.count = 0
        self.last_time = -math.inf

    def add(self, value: float, time: float) -> None:
        self.values[self.cursor] = value
        self.times[self.cursor] = time
        self.cursor = (self.cursor + 1) % len(self.values)
        self.count = min(self.count + 1, len(self.values))
        self.last_time = time

    @property
    def oldest(self) -> float:
        """The oldest sample's time: the slot the next one overwrites once full."""
        return self.times[self.cursor if self.count == len(self.values) else 0]

    def recent(self, since: float) -> list[float]:
        if self.oldest >= since:
            return self.values[: self.count]
        return [self.values[i] for i in range(self.count) if self.times[i] >= since]


class CurveLearner:
    """Each node's curve, from the samples it is fed (`observe`); bounded (module docstring).

    Not thread-safe: one owner feeds and reads it (LoadAware's cycle; the extender's tracker
    under its lock)."""

    def __init__(
        self,
        *,
        window: int = DEFAULT_WINDOW,
        min_samples: int = DEFAULT_MIN_SAMPLES,
        max_age: float = DEFAULT_MAX_AGE,
    ) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1 sample, not {window!r}")
        if not 1 <= min_samples <= window:
            raise ValueError(f"min_samples must be in [1, window], not {min_samples!r}")
        if not max_age > 0:
            raise ValueError(f"max_age must be positive, not {max_age!r}")
        self.window = window
        self.min_samples = min_samples
        self.max_age = max_age
        self._rings: dict[NodeName, _Ring] = {}
        self._cores: dict[NodeName, float] = {}
        self._curves: dict[NodeName, NodeCurve] = {}
        self._now = -math.inf

    def observe(
        self, node: NodeName, *, cores: float, utilization: float, psi: float, time: float
    ) -> None:
        """One sample of `node` (utilization and PSI 0..1, taken at `time`). A sample that
        says nothing (`informative`), or is not newer than the node's last, is ignored; so is
        a node without cores."""
        if not (math.isfinite(cores) and cores > 0 and math.isfinite(time)):
            return
        self._now = max(self._now, time)
        if not informative(utilization, psi):
            return
        ring = self._rings.get(node)
        if ring is None:
            ring = self._rings[node] = _Ring(self.window)
        elif time <= ring.last_time:
            return  # the same sample read again (a view that did not refresh)
        if self._cores.get(node) != cores:
            self._cores[node] = cores
        ring.add(servers_for(utilization, psi, most=most_servers(cores)), time)
        self._curves.pop(node, None)

    def observe_columns(
        self,
        utilization: Mapping[NodeName, float],
        psi: Mapping[NodeName, float],
        *,
        cores: Mapping[NodeName, float],
        now: float,
        times: Mapping[NodeName, float] | None = None,
    ) -> None:
        """Every node with both values and a size: one sample each, at its sample time where
        `times` gives one, else `now`."""
        own = times or {}
        for node, p in psi.items():
            u = utilization.get(node)
            size = cores.get(node)
            if u is None or size is None:
                continue
            self.observe(node, cores=size, utilization=u, psi=p, time=own.get(node, now))
        if math.isfinite(now):
            self._now = max(self._now, now)

    def retain(self, nodes: Collection[NodeName]) -> None:
        """Forget every node not in `nodes` (it left the cluster), and any whose newest sample
        is older than `max_age`."""
        keep = nodes if isinstance(nodes, (set, frozenset, dict)) else set(nodes)
        oldest = self._now - self.max_age
        for node, ring in list(self._rings.items()):
            if node not in keep or ring.last_time < oldest:
                del self._rings[node]
                self._cores.pop(node, None)
                self._curves.pop(node, None)
            elif node in self._curves and ring.oldest < oldest:
                self._curves.pop(node)  # some of its samples aged out: fit again

    def curve(self, node: NodeName, cores: float) -> NodeCurve:
        """The node's curve: fitted from its recent samples, or the fallback (shared model)."""
        cached = self._curves.get(node)
        if cached is not None and self._cores.get(node) == cores:
            return cached
        shared = servers_of(cores) if math.isfinite(cores) and cores > 0 else 1
        ring = self._rings.get(node)
        recent = ring.recent(self._now - self.max_age) if ring is not None else []
        if not recent:
            found = NodeCurve(servers=shared, samples=0, fallback=True)
        else:
            fitted = _median(recent)
            servers = min(most_servers(cores), max(1, round(fitted))) if cores > 0 else shared
            found = NodeCurve(
                servers=servers if len(recent) >= self.min_samples else shared,
                samples=len(recent),
                fallback=len(recent) < self.min_samples,
                fitted=fitted,
            )
        if ring is not None and self._cores.get(node) == cores:
            self._curves[node] = found
        return found

    def curves(self, cores: Mapping[NodeName, float]) -> dict[NodeName, NodeCurve]:
        """Every node of `cores` with samples: its curve (a node not listed is on the shared
        model)."""
        return {n: self.curve(n, cores[n]) for n in self._rings if n in cores}

    def __len__(self) -> int:
        return len(self._rings)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
