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
    z = np.abs(x)
    t = 1.0 / (1.0 + _P * z)
    poly = t * (_A[0] + t * (_A[1] + t * (_A[2] + t * (_A[3] + t * _A[4]))))
    tail = poly * np.exp(-z * z)
    return np.asarray(np.where(x >= 0, tail, 2.0 - tail), dtype=np.float64)


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
    out = np.ones_like(demand, dtype=np.float64)
    under = demand < cores
    d, c = demand[under], cores[under]
    cv = np.sqrt((1.0 + (model.burstiness * bias[under]) ** 2) / np.maximum(c, 1.0))
    sigma2 = np.log1p(cv * cv)
    sigma = np.sqrt(sigma2)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = np.log(np.maximum(d, 1e-300)) - sigma2 / 2.0
        z = (np.log(np.maximum(c, 1e-300)) - mu) / (sigma * math.sqrt(2.0))
    above = np.where((d > 0) & (sigma > 0), 0.5 * erfc(z), 0.0)
    # A burst above the cores starts a spell of waiting that lasts until the spare capacity
    # drains it, 1 / (1 - utilization) times as long as the burst: the share of time with a
    # task waiting is the bursts' share, stretched so (a renewal argument). It reaches 1 as
    # the utilization does, with no step.
    rho = d / c
    out[under] = np.clip(above / (above + (1.0 - above) * (1.0 - rho)), 0.0, 1.0)
    return out


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
