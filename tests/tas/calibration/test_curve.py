"""The pressure curve's learner on noise (tas/calibration/curve.py, tas/pressure.py's MIN_PSI).

Covered:
- an idle node's noisy PSI (positive: a reading cannot fall below 0) is not fitted on, so the
  node stays on the shared model instead of learning a bursty curve from noise;
- a node under real pressure is still fitted.
"""

from __future__ import annotations

from tas.calibration.curve import CurveLearner
from tas.types import NodeName

NODE = NodeName("node-a")


def test_an_idle_nodes_noise_teaches_no_curve() -> None:
    # 10% busy on 16 cores, PSI 0.012: inverted, that is 2 effective servers (a node that
    # stalls at 10% load), which is noise, not the node.
    learner = CurveLearner(min_samples=4)
    for step in range(10):
        learner.observe(
            NODE, cores=16.0, utilization=0.1, psi=0.012 + 0.001 * (step % 3), time=step
        )
    curve = learner.curve(NODE, 16.0)
    assert curve.fallback
    assert curve.servers == 16
    assert curve.samples == 0


def test_a_node_under_real_pressure_is_still_fitted() -> None:
    # PSI = utilization: the curve of one effective server.
    learner = CurveLearner(min_samples=4)
    for step in range(10):
        u = 0.3 + 0.05 * step
        learner.observe(NODE, cores=16.0, utilization=u, psi=u, time=step)
    curve = learner.curve(NODE, 16.0)
    assert not curve.fallback
    assert curve.servers == 1
