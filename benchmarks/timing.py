"""How a benchmark times a piece of work: the median process CPU time of several runs.

Process CPU time, not wall time: these machines are noisy, and CPU time leaves out what other
processes take; the median leaves out the run a collection or a page fault landed in.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_cpu_seconds(
    run: Callable[[], object], *, runs: int, prepare: Callable[[], object] | None = None
) -> float:
    """The median process CPU seconds of `runs` calls of `run`; `prepare`, when given, is
    called before each and not timed (advancing a clock, collecting garbage)."""
    timings = []
    for _ in range(runs):
        if prepare is not None:
            prepare()
        started = time.process_time()
        run()
        timings.append(time.process_time() - started)
    return statistics.median(timings)
