"""PNG charts per scenario (matplotlib, Agg backend: no display needed).

- `<scenario>-nodes.png`: per-node CPU utilization and pressure over time, one row of panels
  per contender, the same axes everywhere (percentile bands instead of lines on big clusters);
- `<scenario>-spread.png`: the pressure spread over time, every contender on one chart, and
  the evictions over time beneath it.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from simulator.runner import ScenarioResult

_WIDTH = 13.0


def _minutes(values: list[float]) -> list[float]:
    return [v / 60.0 for v in values]


def node_chart(result: ScenarioResult, path: Path) -> None:
    runs = list(result.results.values())
    if not runs:
        return
    figure: Figure = plt.figure(figsize=(_WIDTH, 2.3 * len(runs) + 0.8))
    axes = figure.subplots(len(runs), 2, sharex=True, squeeze=False)
    for row, run in enumerate(runs):
        series = run.series
        t = _minutes(series.t)
        for col, (values, label) in enumerate(
            ((series.utilization, "CPU utilization"), (series.pressure, "CPU pressure (PSI)"))
        ):
            ax = axes[row][col]
            if series.banded and values:
                low = [v[0] for v in values]
                median = [v[1] for v in values]
                p90 = [v[2] for v in values]
                high = [v[3] for v in values]
                ax.fill_between(t, low, high, color="tab:blue", alpha=0.15, label="min-max")
                ax.plot(t, median, color="tab:blue", linewidth=1.2, label="median")
                ax.plot(t, p90, color="tab:red", linewidth=1.0, label="p90")
            else:
                for i, name in enumerate(series.nodes):
                    line = [v[i] if i < len(v) else math.nan for v in values]
                    ax.plot(t, line, linewidth=0.9, label=name)
            ax.set_ylim(-0.02, 1.05)
            ax.grid(alpha=0.3)
            if row == 0:
                ax.set_title(label)
            if col == 0:
                ax.set_ylabel(run.contender, fontsize=10, fontweight="bold")
            if row == len(runs) - 1:
                ax.set_xlabel("minutes")
    handles, labels = axes[0][1].get_legend_handles_labels()
    if handles and len(labels) <= 24:
        figure.legend(
            handles,
            labels,
            loc="upper center",
            ncol=min(len(labels), 8),
            fontsize=8,
            bbox_to_anchor=(0.5, 1.0),
        )
    figure.suptitle(
        f"{result.scenario.name}: per-node CPU (seed {result.seed})",
        y=0.995,
        x=0.01,
        ha="left",
        fontsize=11,
    )
    figure.tight_layout(rect=(0, 0, 1, 0.97 if len(runs) > 2 else 0.93))
    figure.savefig(path, dpi=90)
    plt.close(figure)


def spread_chart(result: ScenarioResult, path: Path) -> None:
    runs = list(result.results.values())
    if not runs:
        return
    figure: Figure = plt.figure(figsize=(_WIDTH, 6.5))
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    for run in runs:
        t = _minutes(run.series.t)
        top.plot(t, run.series.spread, linewidth=1.2, label=run.contender)
        bottom.step(t, run.series.evictions, where="post", linewidth=1.2, label=run.contender)
    warmup = result.scenario.warmup / 60.0
    for ax in (top, bottom):
        ax.axvline(warmup, color="grey", linestyle=":", linewidth=1)
        ax.grid(alpha=0.3)
    top.set_ylabel("pressure spread (std across nodes)")
    top.set_title(f"{result.scenario.name}: how evenly CPU pressure is spread (lower is better)")
    top.legend(fontsize=9, ncol=3)
    bottom.set_ylabel("evictions (cumulative)")
    bottom.set_xlabel("minutes (dotted: end of warm-up)")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def write_charts(result: ScenarioResult, directory: Path) -> list[Path]:
    name = result.scenario.name
    nodes = directory / f"{name}-nodes.png"
    spread = directory / f"{name}-spread.png"
    node_chart(result, nodes)
    spread_chart(result, spread)
    return [nodes, spread]
