"""The metric view's read path and the textfile source, at 5,000 nodes x 5 metrics.

Figures:
- read: one `columns()` call while nothing is near its age limit (every scheduling request
  makes one), next to a floor (reading one attribute through a method call); goal <= 5 us;
- read at an expiry: a `columns()` that must drop one metric's stale values (the O(nodes) case
  staleness costs, hit once per distinct sample time during an outage);
- textfile fetch, files unchanged (stat only) and files rewritten (read and parse), per node,
  next to a floor (one stat per file);
- text parsing of a node-exporter-sized answer (~2,000 lines), next to a floor (splitting it
  into lines and fields).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.report import Figure, print_figure
from tas.adapters.metrics.textfile import TextfileSource
from tas.metrics.refreshing import RefreshingMetricView
from tas.metrics.static import StaticMetricView
from tas.metrics.textformat import parse_text
from tas.types import MetricName

NODES = 5_000
METRICS = [MetricName(f"metric_{i}") for i in range(5)]
READS = 20_000


def per_call(function: Callable[[], object], calls: int, runs: int = 5) -> float:
    """Median seconds per call over `runs` runs of `calls` calls."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(calls):
            function()
        times.append((time.perf_counter() - started) / calls)
    return statistics.median(times)


def write_files(directory: Path, mtime: float, value: int) -> None:
    for n in range(NODES):
        path = directory / f"node-{n}.prom"
        path.write_text("".join(f"node_{m} {value + n % 7}\n" for m in METRICS))
        os.utime(path, (mtime, mtime))


class _Clock:
    """Wall time that the benchmark moves on (a `tas.clock.Clock`)."""

    def __init__(self) -> None:
        self.current = datetime.now(UTC)

    def now(self) -> datetime:
        return self.current

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        return stop.wait(seconds)


def main() -> None:
    clock = _Clock()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_files(directory, clock.current.timestamp(), 1)
        source = TextfileSource(directory)
        view = RefreshingMetricView(source, max_age=30.0, clock=clock)
        view.set_wanted(METRICS)

        started = time.perf_counter()
        view.refresh_once()
        first = (time.perf_counter() - started) / NODES
        assert all(len(column) == NODES for column in view.columns().values())
        started = time.perf_counter()
        view.refresh_once()
        unchanged = (time.perf_counter() - started) / NODES
        started = time.perf_counter()
        for n in range(NODES):
            (directory / f"node-{n}.prom").stat()
        stat_floor = (time.perf_counter() - started) / NODES

        static = StaticMetricView({m: {} for m in METRICS})
        read = per_call(view.columns, READS)
        floor = per_call(static.columns, READS)
        print_figure(
            Figure(
                "read columns()",
                read * 1e6,
                "us",
                floor * 1e6,
                "a method returning an attribute",
                max_value=5.0,
            )
        )

        # Every value is 31 s old on each read: each call rebuilds every metric's column.
        def expiring_read() -> object:
            clock.current += timedelta(seconds=31)
            return view.columns()

        view.refresh_once()
        expiring = per_call(expiring_read, 1, runs=1)
        print_figure(Figure("read at an expiry (all 5 metrics rebuilt)", expiring * 1e3, "ms"))

        print_figure(
            Figure(
                "textfile fetch, unchanged files",
                unchanged * 1e6,
                "us/node",
                stat_floor * 1e6,
                "one stat per file",
            )
        )
        print_figure(
            Figure(
                "textfile fetch, new files (read + parse)",
                first * 1e6,
                "us/node",
                stat_floor * 1e6,
                "one stat per file",
            )
        )

        # The components' default (no --metric-max-age): the limit follows each metric's
        # cadence, learned on every fetch from at most 512 nodes; the same unchanged fetch.
        default_view = RefreshingMetricView(source, clock=clock)
        default_view.set_wanted(METRICS)
        default_view.refresh_once()
        started = time.perf_counter()
        default_view.refresh_once()
        cadence = (time.perf_counter() - started) / NODES
        print_figure(
            Figure(
                "textfile fetch, unchanged files, default max age (cadence)",
                cadence * 1e6,
                "us/node",
                unchanged * 1e6,
                "the same fetch with --metric-max-age",
                max_ratio=1.5,
            )
        )

    text = "".join(
        f'node_cpu_seconds_total{{cpu="{c}",mode="{m}"}} {c * 1000.5 + i}\n'
        for i, (c, m) in enumerate(
            (c, m)
            for c in range(250)
            for m in ("idle", "user", "system", "iowait", "irq", "softirq", "steal", "nice")
        )
    )
    lines = text.count("\n")
    parse = per_call(lambda: parse_text(text), 3)
    split = per_call(lambda: [line.split() for line in text.split("\n")], 3)
    print_figure(
        Figure(
            f"parse {lines} exporter lines",
            parse * 1e3,
            "ms",
            split * 1e3,
            "split into lines and fields",
            max_ratio=30.0,
        )
    )


if __name__ == "__main__":
    main()
