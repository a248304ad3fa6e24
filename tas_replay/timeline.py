"""A PNG timeline per replayed policy: nodes by time, violating intervals, would-be evictions.

Needs matplotlib (the `[sim]` extra): `tas replay` runs on the base install and draws the
timelines only when matplotlib is there (`available()`), saying so when it is not. Drawn on
matplotlib's Agg canvas (no display). Nodes that never violated nor filtered are left out: a
500-node fleet with three bad nodes should show three rows, not 497 empty ones.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from tas_replay.evaluate import PolicyReplay
from tas_replay.history import Window

#: More rows than this are cut (the nodes with the most violating seconds kept).
MAX_ROWS = 60


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def file_name(key: str) -> str:
    """`default/psi-aware` -> `timeline-default-psi-aware.png`."""
    return "timeline-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", key) + ".png"


def draw_timeline(key: str, result: PolicyReplay, window: Window, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    ranked = sorted(
        result.nodes.items(),
        key=lambda item: (-item[1].violating_seconds, -item[1].dontschedule_seconds, item[0]),
    )[:MAX_ROWS]
    rows = [node for node, _ in sorted(ranked)]
    hours = 3600.0
    figure = Figure(figsize=(11, 1.5 + 0.3 * max(len(rows), 1)))
    axes = figure.add_subplot()
    for row, node in enumerate(rows):
        record = result.nodes[node]
        spans = [
            ((s - window.start) / hours, (e - s) / hours) for s, e in record.dontschedule_intervals
        ]
        axes.broken_barh(spans, (row - 0.4, 0.8), color="#f2c14e", alpha=0.6)
        spans = [((s - window.start) / hours, (e - s) / hours) for s, e in record.intervals]
        axes.broken_barh(spans, (row - 0.3, 0.6), color="#d1495b")
    for start, end in result.breaker_open_intervals:
        axes.axvspan(
            (start - window.start) / hours, (end - window.start) / hours, color="#999", alpha=0.3
        )
    index = {node: row for row, node in enumerate(rows)}
    evictions = [
        ((e["time"] - window.start) / hours, index[e["node"]])
        for e in result.would_evict
        if e["node"] in index
    ]
    if evictions:
        xs, ys = zip(*evictions, strict=True)
        axes.scatter(xs, ys, marker="x", color="black", zorder=3, label="would evict")
    axes.set_yticks(range(len(rows)), rows)
    axes.set_ylim(-1, max(len(rows), 1))
    axes.set_xlim(0, (window.end - window.start) / hours)
    axes.set_xlabel("hours since the window's start")
    open_hours = result.breaker_open_seconds / hours
    axes.set_title(
        f"{key}: violating (red), dontschedule (yellow), would-be evictions (x), "
        f"breaker open (grey, {open_hours:.1f} h)"
    )
    handles = [
        Patch(color="#d1495b", label="violating"),
        Patch(color="#f2c14e", label="dontschedule"),
    ]
    axes.legend(handles=handles, loc="upper right", fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
