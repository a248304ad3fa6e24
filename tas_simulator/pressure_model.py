"""The world's CPU pressure (PSI cpu `some`): how the simulated nodes behave and what they
report, by the scenario's `pressureModel` (issues 46 and 54).

Ours predicts pressure with Erlang C (`tas.pressure`). When the world generated pressure
with the very same formula, ours inverted it exactly, which no real node allows: real PSI
depends on how bursty the work is, on cgroup limits, on SMT siblings and noisy neighbours. So
the world's default is another model, which ours does not know, and this module (like every
module that generates the world) never imports ours' predictor, directly or not: an import
contract in pyproject.toml forbids it.

- `bursty` (the default, every named scenario and family that names no model; defaults and
  why in `tas_simulator.scenario.PressureModel`): the share of time a node's runnable demand
  exceeds its cores, with that demand log-normal around its mean. Its coefficient of
  variation is `burstiness` on a one-core node and falls as the square root of the cores (a
  larger node runs more pods, whose independent bursts average out), times a per-node factor,
  log-normal with spread `nodeBias` and drawn from the seed and the node's name (the node's
  own hardware and neighbours). Each such burst starts a spell of waiting that the spare
  capacity drains, 1 / (1 - utilization) times as long: the reading is the bursts' share
  stretched so, reaching 1 as the node's demand reaches its cores. Against Erlang C it starts
  earlier on small and bursty nodes, rises more gently, and differs between nodes of one size.
- `erlang-c`, only where a scenario names it (`pressureModel: {kind: erlang-c}`): the M/M/c
  queue, the same for every node of a size, computed by the world's own table
  (`tas_inmemory.workload.cpu_pressures`), not by ours' code.

`noise` is measurement noise: added to what node-exporter's PSI counter accumulates (so a rate
over a window averages it), never to the stall the figures count, which stays the node's true
curve (`pressures`); the fluid limit and the hindsight placement use that curve too, so they
remain what they claim to be.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from tas_inmemory.workload import cpu_pressures, slot_seed, unit_hash
from tas_simulator.scenario import PressureModel, PressureModelKind

FloatArray = npt.NDArray[np.float64]

#: Abramowitz and Stegun 7.1.26: erf to within 1.5e-7, with no SciPy.
_P = 0.3275911
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erfc(x: FloatArray) -> FloatArray:
    """The complementary error function, element-wise (absolute error below 1.5e-7)."""
    # In place where the arithmetic allows (a temporary per operation was most of its cost);
    # the operations and their order are the formula's, so are the values.
    z = np.abs(x)
    t = z * _P
    t += 1.0
    np.divide(1.0, t, out=t)
    poly = t * _A[4]
    for a in (_A[3], _A[2], _A[1], _A[0]):
        poly += a
        poly *= t
    square = np.negative(z)
    square *= z
    poly *= np.exp(square)
    below = x < 0
    if below.any():
        poly[below] = 2.0 - poly[below]
    return poly


def _standard_normals(seeds: npt.NDArray[np.uint64]) -> FloatArray:
    """One standard normal per seed (Box-Muller on two hashed uniforms)."""
    first = unit_hash(seeds, np.zeros(len(seeds), dtype=np.int64))
    second = unit_hash(seeds, np.ones(len(seeds), dtype=np.int64))
    radius = np.sqrt(-2.0 * np.log(1.0 - first))
    return radius * np.cos(2.0 * math.pi * second)


def node_biases(model: PressureModel, seed: int, names: Sequence[str]) -> FloatArray:
    """Each node's factor on the burstiness: 1 under Erlang C or without a spread; otherwise
    log-normal, the same for a node of that name on that seed in every run."""
    if model.kind is PressureModelKind.ERLANG_C or model.node_bias == 0 or not names:
        return np.ones(len(names))
    seeds = np.array(
        [slot_seed(seed, int(hashlib.sha256(n.encode()).hexdigest()[:15], 16)) for n in names],
        dtype=np.uint64,
    )
    return np.exp(model.node_bias * _standard_normals(seeds))


def pressures(
    model: PressureModel, demand: FloatArray, cores: FloatArray, bias: FloatArray
) -> FloatArray:
    """Each node's true pressure at this demand (cores) on these cores, by the model."""
    if model.kind is PressureModelKind.ERLANG_C:
        return cpu_pressures(demand, cores)
    return _bursty(demand, cores, *_bursty_terms(model, cores, bias))


#: An index into a 2-D grid: `np.ix_`'s pair, a (rows, columns) pair, or a slice.
Cells = tuple[npt.NDArray[np.integer[Any]] | int | slice, ...] | slice


class NodeCurves:
    """`pressures` over a grid of nodes (rows) and steps (columns) whose cores and factors are
    known ahead, as the hindsight placement's are: what depends only on a node's cores and
    factor is computed once for the grid, so each call computes only what the demand adds.
    The same values as `pressures`, to the bit."""

    def __init__(self, model: PressureModel, cores: FloatArray, bias: FloatArray) -> None:
        """`cores`: nodes x steps; `bias`: each node's factor."""
        self.model = model
        self.cores = cores
        #: The bursty model's terms (`_bursty_terms`), stacked so one index takes all three.
        self._terms: FloatArray | None = None
        self._spread = True
        if model.kind is PressureModelKind.BURSTY:
            terms = _bursty_terms(model, cores, np.broadcast_to(bias[:, np.newaxis], cores.shape))
            self._terms = np.stack(terms)
            self._spread = bool((terms[2] > 0).all())

    def at(self, demand: FloatArray, cells: Cells, cores: FloatArray | None = None) -> FloatArray:
        """The pressures at `demand` in the grid's `cells` (an index into nodes x steps), whose
        cores the caller may give (`self.cores[cells]`) if it has them already."""
        if cores is None:
            cores = self.cores[cells]
        if self._terms is None:
            return cpu_pressures(demand, cores)
        index = (slice(None), *cells) if isinstance(cells, tuple) else (slice(None), cells)
        half, log_cores, scale = self._terms[index]
        return _bursty(demand, cores, half, log_cores, scale, spread=self._spread)


def _bursty_terms(
    model: PressureModel, cores: FloatArray, bias: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The bursty model's terms that depend on a node's cores and factor only: half the
    log-normal's variance, the log of the cores, and the erfc argument's scale."""
    cv = np.sqrt((1.0 + (model.burstiness * bias) ** 2) / np.maximum(cores, 1.0))
    sigma2 = np.log1p(cv * cv)
    sigma = np.sqrt(sigma2)
    log_cores = np.log(np.maximum(cores, 1e-300))
    return sigma2 / 2.0, log_cores, sigma * math.sqrt(2.0)


def _bursty(
    demand: FloatArray,
    cores: FloatArray,
    half: FloatArray,
    log_cores: FloatArray,
    scale: FloatArray,
    *,
    spread: bool = False,
) -> FloatArray:
    """The bursty model's pressure, element by element (`_bursty_terms` give the rest;
    `spread`: every `scale` is known to be positive)."""
    # Every element is computed, and those the formula does not reach set at the end: an
    # array that is all one piece costs less than picking the others out first.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = np.log(np.maximum(demand, 1e-300))
        np.subtract(z, half, out=z)  # the log-normal's mu
        np.subtract(log_cores, z, out=z)
        np.divide(z, scale, out=z)
        above = erfc(z)
        above *= 0.5
        calm = ~(demand > 0) if spread else ~((demand > 0) & (scale > 0))
        if calm.any():
            above[calm] = 0.0
        # A burst above the cores starts a spell of waiting that lasts until the spare
        # capacity drains it, 1 / (1 - utilization) times as long as the burst: the share of
        # time with a task waiting is the bursts' share, stretched so (a renewal argument).
        # It reaches 1 as the utilization does, with no step.
        spare = demand / cores
        np.subtract(1.0, spare, out=spare)
        waiting = np.subtract(1.0, above)
        waiting *= spare
        waiting += above
        np.divide(above, waiting, out=above)
    np.clip(above, 0.0, 1.0, out=above)
    full = ~(demand < cores)
    if full.any():
        above[full] = 1.0
    return above


def _noise_seeds(seed: int, steps: range, count: int) -> npt.NDArray[np.uint64]:
    """The seed of each node's read noise at each step: one row per step, a column per node."""
    nodes = np.arange(count, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # mod 2**64
    rows = np.array([slot_seed(seed, step) for step in steps], dtype=np.uint64)
    return np.asarray(rows[:, None] ^ nodes[None, :], dtype=np.uint64)


def measured(model: PressureModel, values: FloatArray, seed: int, step: int) -> FloatArray:
    """What node-exporter reads of these true values at this step: with the model's noise
    (reproducible from the seed and the step), kept within 0..1."""
    if model.noise == 0 or not len(values):
        return values
    normals = _standard_normals(_noise_seeds(seed, range(step, step + 1), len(values))[0])
    return np.clip(values + model.noise * normals, 0.0, 1.0)


class ReadNoise:
    """`measured` for one run, step after step: the same values, with the noise drawn for
    `block` steps at once (a draw per step was a tenth of a small simulation's step)."""

    def __init__(self, model: PressureModel, seed: int, *, block: int = 256) -> None:
        self.model = model
        self.seed = seed
        self.block = block
        self._first = 0
        self._normals: FloatArray = np.zeros((0, 0))

    def measured(self, values: FloatArray, step: int) -> FloatArray:
        if self.model.noise == 0 or not len(values):
            return values
        rows, count = self._normals.shape
        if count != len(values) or not self._first <= step < self._first + rows:
            seeds = _noise_seeds(self.seed, range(step, step + self.block), len(values))
            self._normals = _standard_normals(seeds.ravel()).reshape(seeds.shape)
            self._first = step
        normals: FloatArray = self._normals[step - self._first]
        return np.clip(values + self.model.noise * normals, 0.0, 1.0)
