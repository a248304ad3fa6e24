"""The workload model: what pods use, and what a node's kernel would report about it.

The same for every contender the simulator compares, and for `make run`'s dashboard: the
components never see this module, only the metric values it produces (through the real metric
code path). Pure: values in, values out; no clock, no I/O, no randomness of its own (every
random choice comes from a seed the caller gives).

- Usage profiles per pod, for CPU (cores) and memory (bytes): `steady`, `bursty` (mean, peak,
  period, jitter), `ramp`, `idle`, `trace` (values over time). `UsageBank` evaluates thousands
  of them at once (the simulator's scale-500 holds 10,000 pods).
- CPU: a node's demand D is the sum of its pods' usage, its capacity C its cores.
  Utilization = min(D, C) / C. Pressure (PSI `some`, 0..1) = the Erlang C probability that
  work must wait for one of C servers at offered load D (1 when D >= C): small at moderate
  load, steep towards saturation (C = 8: about 0.06 at 50%, 0.46 at 80%, 0.84 at 95%). It is
  computed here, on its own (a numpy table per core count), not with `tas.pressure`, the
  descheduler's predictor: the world a comparison runs in must not share its code with a
  contender's model (an import contract in pyproject.toml forbids it). The simulator's world
  uses it only where a scenario names it (`pressureModel: {kind: erlang-c}`,
  `tas_simulator.pressure_model`); `make run`'s demo world uses it as its pressure.
- Work lost to stalls = max(0, D - C) per unit of time.
- Memory: pressure rises from 0 at 85% of capacity to 1 at 100%; above 100% the kernel's OOM
  killer (here, the kubelet's node-pressure eviction) ends the largest pod.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

#: Memory pressure starts at this share of capacity and reaches 1 at 100%.
MEMORY_PRESSURE_START = 0.85
#: Points per Erlang C table (utilization 0..1); linear interpolation between them.
_TABLE_POINTS = 2001


class ProfileKind(enum.StrEnum):
    STEADY = "steady"
    BURSTY = "bursty"
    RAMP = "ramp"
    IDLE = "idle"
    TRACE = "trace"


@dataclass(frozen=True, slots=True)
class UsageProfile:
    """One resource's usage over time. Which fields count depends on `kind`:

    - steady: `value`;
    - idle: `value` (small);
    - bursty: `mean`, `peak`, `period` (seconds), `jitter` (0..1), `base` (default mean / 2):
      once per period the pod runs at `peak` for the share of the period that makes the time
      average exactly `mean`, and at `base` otherwise; the burst starts at a random point of
      each period (spread by `jitter`) and each pod has its own phase;
    - ramp: from `start` to `end`, linearly between `ramp_from` and `ramp_to` (seconds since
      the scenario began), constant outside;
    - trace: `points` (time, value), linear between points; `loop` repeats it.
    """

    kind: ProfileKind
    value: float = 0.0
    mean: float = 0.0
    peak: float = 0.0
    period: float = 60.0
    jitter: float = 0.0
    base: float | None = None
    start: float = 0.0
    end: float = 0.0
    ramp_from: float = 0.0
    ramp_to: float = 0.0
    points: tuple[tuple[float, float], ...] = ()
    loop: bool = False

    @property
    def bursty_base(self) -> float:
        return self.mean / 2 if self.base is None else self.base

    @property
    def duty(self) -> float:
        """Bursty: the share of each period spent at `peak`."""
        base = self.bursty_base
        if self.peak <= base:
            return 1.0
        return min(1.0, max(0.0, (self.mean - base) / (self.peak - base)))

    def average(self) -> float:
        """The long-run average (trace: over its points; ramp: its end value)."""
        if self.kind is ProfileKind.BURSTY:
            return self.mean
        if self.kind is ProfileKind.RAMP:
            return self.end
        if self.kind is ProfileKind.TRACE:
            return sum(v for _, v in self.points) / len(self.points) if self.points else 0.0
        return self.value


#: Each kind's number in `UsageBank`'s columns (its place in `ProfileKind`).
_BURSTY_KIND = list(ProfileKind).index(ProfileKind.BURSTY)
_RAMP_KIND = list(ProfileKind).index(ProfileKind.RAMP)


def steady(value: float) -> UsageProfile:
    return UsageProfile(ProfileKind.STEADY, value=value)


# ------------------------------------------------------------------------ randomness


# The hashes below multiply modulo 2**64 on purpose. They take arrays only: numpy wraps an
# array's integer overflow silently (it warns only for scalars), so no `np.errstate` is needed,
# and entering one on every call was a measurable share of a simulation step.


def _mix(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finalizer: a well-spread 64-bit hash, the same on every platform."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def unit_hash(seeds: npt.NDArray[np.uint64], counter: npt.NDArray[np.int64]) -> FloatArray:
    """A uniform value in [0, 1) for each (seed, counter): reproducible noise, no state."""
    mixed = _mix(seeds ^ (counter.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)))
    return (mixed >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def slot_seed(seed: int, index: int) -> int:
    """The seed of one pod's usage stream, from the scenario's seed and the pod's index."""
    value = np.array([(seed * 1_000_003 + index) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)
    return int(_mix(value)[0])


# ------------------------------------------------------------------------ evaluation


class UsageBank:
    """Many usage profiles evaluated at once: `values(t)` is one array, one entry per profile.

    Profiles are added once (a pod's usage identity outlives its pod: it follows the pod to
    its replacement) and evaluated every step. Steady, idle, bursty and ramp profiles are
    evaluated as arrays; traces by interpolation, one call per distinct trace.
    """

    def __init__(self) -> None:
        self._kinds: list[int] = []
        self._a: list[float] = []  # steady/idle value, bursty base, ramp start
        self._b: list[float] = []  # bursty peak, ramp end
        self._c: list[float] = []  # bursty period, ramp from
        self._d: list[float] = []  # bursty duty, ramp to
        self._e: list[float] = []  # bursty jitter
        self._phase: list[float] = []
        self._seed: list[int] = []
        self._traces: dict[tuple[tuple[tuple[float, float], ...], bool], list[int]] = {}
        self._arrays: tuple[FloatArray, ...] | None = None
        self._seeds: npt.NDArray[np.uint64] = np.zeros(0, dtype=np.uint64)

    def add(self, profile: UsageProfile, *, seed: int) -> int:
        """Register a profile with its own random stream; returns its index."""
        index = len(self._kinds)
        kinds = list(ProfileKind)
        self._kinds.append(kinds.index(profile.kind))
        a = b = c = d = e = 0.0
        phase = 0.0
        if profile.kind in (ProfileKind.STEADY, ProfileKind.IDLE):
            a = profile.value
        elif profile.kind is ProfileKind.BURSTY:
            a, b, c, d, e = (
                profile.bursty_base,
                profile.peak,
                max(profile.period, 1e-9),
                profile.duty,
                profile.jitter,
            )
            phase = float(unit_hash(np.array([seed], np.uint64), np.array([-1], np.int64))[0])
            phase *= c
        elif profile.kind is ProfileKind.RAMP:
            a, b, c, d = profile.start, profile.end, profile.ramp_from, profile.ramp_to
        else:
            self._traces.setdefault((profile.points, profile.loop), []).append(index)
        for column, value in zip(
            (self._a, self._b, self._c, self._d, self._e, self._phase),
            (a, b, c, d, e, phase),
            strict=True,
        ):
            column.append(value)
        self._seed.append(seed & 0xFFFFFFFFFFFFFFFF)
        self._arrays = None
        return index

    def _columns(self) -> tuple[FloatArray, ...]:
        if self._arrays is None:
            self._arrays = (
                np.array(self._kinds, dtype=np.float64),
                np.array(self._a, dtype=np.float64),
                np.array(self._b, dtype=np.float64),
                np.array(self._c, dtype=np.float64),
                np.array(self._d, dtype=np.float64),
                np.array(self._e, dtype=np.float64),
                np.array(self._phase, dtype=np.float64),
            )
            self._seeds = np.array(self._seed, dtype=np.uint64)
        return self._arrays

    def values(self, t: float) -> FloatArray:
        """Every profile's value at time `t` (seconds since the scenario began)."""
        return self._evaluate(t, bursts_averaged=False)

    def expected(self, t: float) -> FloatArray:
        """Every profile's expected value at `t`: its value, except that a bursty profile gives
        its time average (base + duty x (peak - base)) rather than where its burst happens to
        be. The load a balanced placement is judged on, not a moment's noise."""
        return self._evaluate(t, bursts_averaged=True)

    def _evaluate(self, t: float, *, bursts_averaged: bool) -> FloatArray:
        if not self._kinds:
            return np.zeros(0)
        kinds, a, b, c, d, e, phase = self._columns()
        out = a.copy()  # steady, idle
        bursty = kinds == _BURSTY_KIND
        if bursty.any():
            base, peak, duty = a[bursty], b[bursty], d[bursty]
            out[bursty] = (
                base + duty * (peak - base)
                if bursts_averaged
                else _bursty(
                    t, base, peak, c[bursty], duty, e[bursty], phase[bursty], self._seeds[bursty]
                )
            )
        ramp = kinds == _RAMP_KIND
        if ramp.any():
            out[ramp] = _ramp(t, a[ramp], b[ramp], c[ramp], d[ramp])
        for (points, loop), indices in self._traces.items():
            out[indices] = trace_value(points, t, loop=loop)
        return np.maximum(out, 0.0)


def _bursty(
    t: float,
    base: FloatArray,
    peak: FloatArray,
    period: FloatArray,
    duty: FloatArray,
    jitter: FloatArray,
    phase: FloatArray,
    seeds: npt.NDArray[np.uint64],
) -> FloatArray:
    shifted = t + phase
    cycle = np.floor(shifted / period)
    within = shifted - cycle * period
    # Where the burst starts in this period: spread over the idle part of it by `jitter`.
    offset = unit_hash(seeds, cycle.astype(np.int64)) * jitter * (1.0 - duty) * period
    burst = (within >= offset) & (within < offset + duty * period)
    return np.where(burst, peak, base)


def _ramp(
    t: float, start: FloatArray, end: FloatArray, t0: FloatArray, t1: FloatArray
) -> FloatArray:
    span = np.maximum(t1 - t0, 1e-9)
    share = np.clip((t - t0) / span, 0.0, 1.0)
    return start + (end - start) * share


def trace_value(points: Sequence[tuple[float, float]], t: float, *, loop: bool = False) -> float:
    """A trace's value at `t`: linear between points, the first/last value outside them."""
    if not points:
        return 0.0
    times = [p[0] for p in points]
    if loop and times[-1] > times[0]:
        span = times[-1] - times[0]
        t = times[0] + (t - times[0]) % span
    return float(np.interp(t, times, [p[1] for p in points]))


# ------------------------------------------------------------------------------ CPU


#: The utilizations (0..1) at which `_pressure_table` holds Erlang C.
_TABLE_GRID = np.linspace(0.0, 1.0, _TABLE_POINTS)


def erlang_c_waiting(servers: int, load: FloatArray) -> FloatArray:
    """Erlang C, element-wise over offered loads (cores of demand) on `servers` servers: the
    probability that work must wait (1 where the load reaches the servers).

    Through the Erlang B recursion B_k = A B_(k-1) / (k + A B_(k-1)), B_0 = 1, carried for
    every load at once, then C = c B / (c - A (1 - B)).
    """
    if servers < 1:
        raise ValueError(f"servers must be at least 1, got {servers}")
    offered = np.maximum(np.asarray(load, dtype=np.float64), 0.0)
    blocking = np.ones_like(offered)
    for k in range(1, servers + 1):
        carried = offered * blocking
        blocking = carried / (k + carried)
    with np.errstate(divide="ignore", invalid="ignore"):
        waiting = servers * blocking / (servers - offered * (1.0 - blocking))
    return np.where(offered >= servers, 1.0, np.clip(np.nan_to_num(waiting), 0.0, 1.0))


def erlang_c(servers: int, load: float) -> float:
    """`erlang_c_waiting` for one load: the exact value the tables interpolate."""
    return float(erlang_c_waiting(servers, np.array([load]))[0])


@functools.lru_cache(maxsize=64)
def _pressure_table(servers: int) -> FloatArray:
    return erlang_c_waiting(servers, _TABLE_GRID * servers)


def cpu_pressure(demand: float, cores: float) -> float:
    """PSI cpu `some` (0..1) of a node with `cores` cores at CPU demand `demand`."""
    return float(cpu_pressures(np.array([demand]), np.array([cores]))[0])


def cpu_pressures(demand: FloatArray, cores: FloatArray) -> FloatArray:
    """`cpu_pressure` for many nodes at once (a table per distinct core count)."""
    out = np.ones_like(demand, dtype=np.float64)
    servers = np.maximum(1, np.rint(cores)).astype(np.int64)  # whole servers, at least one
    for count in np.unique(servers):
        mask = servers == count
        load = demand[mask] / float(count)
        values = np.interp(np.clip(load, 0.0, 1.0), _TABLE_GRID, _pressure_table(int(count)))
        out[mask] = np.where(load >= 1.0, 1.0, values)
    return out


def cpu_utilization(demand: float, cores: float) -> float:
    return min(demand, cores) / cores if cores > 0 else 0.0


def work_lost(demand: float, cores: float) -> float:
    """Cores of demand not served (per unit of time): what stalls cost the pods."""
    return max(0.0, demand - cores)


# --------------------------------------------------------------------------- memory


def memory_pressure(used: float, capacity: float) -> float:
    """PSI memory `some` (0..1): 0 up to 85% of capacity, rising linearly to 1 at 100%."""
    if capacity <= 0:
        return 1.0
    share = used / capacity
    return min(1.0, max(0.0, (share - MEMORY_PRESSURE_START) / (1.0 - MEMORY_PRESSURE_START)))


def memory_pressures(used: FloatArray, capacity: FloatArray) -> FloatArray:
    share = np.divide(used, capacity, out=np.ones_like(used, dtype=np.float64), where=capacity > 0)
    return np.clip((share - MEMORY_PRESSURE_START) / (1.0 - MEMORY_PRESSURE_START), 0.0, 1.0)


def oom_victims(usages: Sequence[tuple[str, float]], capacity: float) -> list[str]:
    """Pods the OOM killer ends on a node whose memory use exceeds its capacity: the largest
    first (ties by name), until what is left fits."""
    total = sum(u for _, u in usages)
    victims: list[str] = []
    for name, used in sorted(usages, key=lambda item: (-item[1], item[0])):
        if total <= capacity:
            break
        victims.append(name)
        total -= used
    return victims
