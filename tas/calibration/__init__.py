"""What ours learns of the cluster it runs in, from what the cluster already shows.

- `curve`: each node's pressure curve (utilization -> PSI), fitted online from its samples,
  with the shared model (`tas.pressure`) as the fallback;
- `delays`: the metric pipeline's lag (a value's age from its own sample time) and the pods'
  start-up (`PodScheduled` -> `Ready`), and the windows that follow them within an operator's
  limits.

`Calibration` is what a component hands on: a value the pure layers take, and what its
self-metrics and `tas explain` show. Pure: values in, values out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tas.calibration.curve import Curves, NodeCurve


@dataclass(frozen=True, slots=True)
class Calibration:
    """One component's calibration at one moment."""

    #: Each node's curve, for the nodes with samples (any other is on the shared model).
    curves: Curves = field(default_factory=dict)
    #: A high percentile of the metric values' age when read (seconds); None: not observed.
    metric_lag: float | None = None
    #: A high percentile of the pods' start-up (seconds); None: not observed.
    startup: float | None = None
    #: The window that follows them (herd control's, or LoadAware's payback horizon); None:
    #: the shipped setting stands.
    window: float | None = None


__all__ = ["Calibration", "Curves", "NodeCurve"]
