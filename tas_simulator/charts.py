"""PNG charts per scenario (matplotlib's Agg canvas: no display needed).

- `<scenario>-nodes.png`: per-node CPU utilization and pressure over time on the first seed,
  one row of panels per contender, the same axes and colour scale everywhere. Up to 8 nodes,
  one line per node, each node in the same colour in every panel; past 8, lines can no longer
  be told apart, so each panel is a heatmap (node x time, colour = the value). A series that
  kept only percentiles (`Series.banded`, past `figures.MAX_NODE_LINES` nodes) is drawn as
  bands: there is no per-node value left to draw.
- `<scenario>-spread.png`: the pressure spread over time, every contender on one chart, and
  the cumulative evictions beneath it: the mean over the seeds at each sampled instant, shaded
  with its 95% interval (`stats.interval`) when there is more than one seed.

Contenders whose drawn series are identical (requests and requests-lnu when the latter never
evicts) are drawn once and named together, "requests = requests-lnu": drawn one over the
other, only the last would show and the first would look missing.

What to draw (the kind of node chart, which contenders go together, the bands over seeds) is
decided by pure functions, so tests check the decisions without reading pixels.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from tas_simulator.contenders import CONTENDERS
from tas_simulator.figures import Series
from tas_simulator.runner import ScenarioResult
from tas_simulator.seeds import SeededResult
from tas_simulator.stats import interval

#: Past this many nodes a per-node chart is a heatmap (the spec's "Version 2", Figures).
NODE_LINES = 8

_WIDTH = 13.0
_DPI = 90
# Okabe & Ito's colours, told apart by most readers, with indigo for their sky blue (too
# near their blue) and black at `ours`' place among the contenders (the ninth): every two
# contenders at least 30 apart in CIELAB (tab:purple and tab:pink were 28), ours 50 from all.
_PALETTE = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7",
    "#8C6D31", "#332288", "#7F7F7F", "#000000", "#88CCEE",
)  # fmt: skip
#: The node chart's columns: the `Series` attribute, its title, its heatmap's colour map.
_QUANTITIES: tuple[tuple[str, str, str], ...] = (
    ("utilization", "CPU utilization", "viridis"),
    ("pressure", "CPU pressure (PSI some)", "inferno"),
)


class NodeChartKind(enum.StrEnum):
    LINES = "lines"
    HEATMAP = "heatmap"
    BANDS = "bands"


def node_chart_kind(series: Sequence[Series]) -> NodeChartKind:
    """Lines up to `NODE_LINES` nodes, a heatmap past them, bands when a series kept only
    percentiles. Counted over every run, so all panels of a chart are of one kind."""
    if any(s.banded for s in series):
        return NodeChartKind.BANDS
    if len(node_order(series)) > NODE_LINES:
        return NodeChartKind.HEATMAP
    return NodeChartKind.LINES


def node_order(series: Sequence[Series]) -> list[str]:
    """Every node of the runs in natural order (worker-2 before worker-10): a node keeps its
    row, and its colour, in every panel."""
    names = {name for s in series for name in s.nodes}
    return sorted(names, key=_natural)


def _natural(name: str) -> tuple[tuple[int, int | str], ...]:
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name)
    )


def group_identical(drawn: Mapping[str, object]) -> list[tuple[str, ...]]:
    """The contenders grouped by what is drawn for them (equal values, NaN equal to NaN), in
    the order of their first member."""
    groups: dict[object, list[str]] = {}
    for name, values in drawn.items():
        groups.setdefault(_comparable(values), []).append(name)
    return [tuple(members) for members in groups.values()]


def group_label(members: Sequence[str], separator: str = " = ") -> str:
    return separator.join(members)


def _comparable(value: object) -> object:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list | tuple):
        return tuple(_comparable(v) for v in value)
    return value


@dataclass(frozen=True)
class Band:
    """A value over the seeds at each sampled instant: the mean and its 95% interval."""

    t: list[float]
    mean: list[float]
    low: list[float]
    high: list[float]
    seeds: int


def band_over_seeds(
    by_seed: Mapping[int, Series], values: Callable[[Series], Sequence[float]]
) -> Band:
    """Per sampled instant, the interval of `values` over the seeds. The seeds of one scenario
    sample the same instants; should one be shorter, the band ends with it."""
    ordered = [by_seed[seed] for seed in sorted(by_seed)]
    if not ordered:
        raise ValueError("a band needs at least one seed")
    columns = [values(s) for s in ordered]
    length = min(min(len(s.t), len(column)) for s, column in zip(ordered, columns, strict=True))
    found = [interval([float(column[i]) for column in columns]) for i in range(length)]
    return Band(
        t=list(ordered[0].t[:length]),
        mean=[i.mean for i in found],
        low=[i.low for i in found],
        high=[i.high for i in found],
        seeds=len(ordered),
    )


def contender_colour(name: str, names: Sequence[str] = ()) -> str:
    """A contender's colour, the same in every chart of every run: by its place among the
    known contenders, then among `names` for others."""
    known = list(CONTENDERS)
    if name in known:
        index = known.index(name)
    else:
        others = [n for n in names if n not in CONTENDERS]
        index = len(known) + (others.index(name) if name in others else 0)
    return _PALETTE[index % len(_PALETTE)]


def _minutes(values: Sequence[float]) -> list[float]:
    return [v / 60.0 for v in values]


# ------------------------------------------------------------------------------ node chart


def draw_node_chart(result: ScenarioResult) -> Figure | None:
    """The per-node chart of one seed's runs, or None when no contender ran."""
    runs = list(result.results.values())
    if not runs:
        return None
    series = [run.series for run in runs]
    kind = node_chart_kind(series)
    nodes = node_order(series)
    by_name = {run.contender: run.series for run in runs}
    groups = group_identical(
        {
            run.contender: (run.series.nodes, run.series.utilization, run.series.pressure)
            for run in runs
        }
    )
    row_height = (
        2.3 if kind is not NodeChartKind.HEATMAP else min(4.5, max(2.3, 0.9 + 0.1 * len(nodes)))
    )
    figure = Figure(figsize=(_WIDTH, row_height * len(groups) + 1.0), layout="constrained")
    axes = figure.subplots(len(groups), 2, sharex=True, sharey=True, squeeze=False)
    images: dict[int, AxesImage] = {}
    for row, members in enumerate(groups):
        drawn = by_name[members[0]]
        for col, (attribute, title, colours) in enumerate(_QUANTITIES):
            ax: Axes = axes[row][col]
            values: list[list[float]] = getattr(drawn, attribute)
            if kind is NodeChartKind.HEATMAP:
                images[col] = _heatmap(ax, drawn, values, nodes, colours)
            elif kind is NodeChartKind.BANDS:
                _bands(ax, drawn, values)
            else:
                _lines(ax, drawn, values, nodes)
            if row == 0:
                ax.set_title(title)
            if col == 0:
                ax.set_ylabel(group_label(members, "\n= "), fontsize=10, fontweight="bold")
            if row == len(groups) - 1:
                ax.set_xlabel("minutes")
            if kind is not NodeChartKind.HEATMAP:
                ax.grid(alpha=0.3)
    if kind is NodeChartKind.HEATMAP:
        for col, (_, title, _) in enumerate(_QUANTITIES):
            bar = figure.colorbar(images[col], ax=list(axes[:, col]), shrink=0.9, aspect=30)
            bar.set_label(f"{title}, 0 to 1", fontsize=9)
        note = f"{len(nodes)} nodes, one row each; grey: not in the cluster"
    elif kind is NodeChartKind.BANDS:
        handles, labels = axes[0][1].get_legend_handles_labels()
        figure.legend(handles, labels, loc="outside upper right", ncol=len(labels), fontsize=8)
        note = "percentiles across nodes"
    else:
        handles = [
            Line2D([], [], color=_PALETTE[i % len(_PALETTE)], linewidth=1.5)
            for i in range(len(nodes))
        ]
        figure.legend(handles, nodes, loc="outside upper right", ncol=len(nodes), fontsize=8)
        note = "one line per node"
    figure.suptitle(
        f"{result.scenario.name}: per-node CPU, seed {result.seed} ({note})",
        x=0.01,
        ha="left",
        fontsize=11,
    )
    return figure


def _lines(ax: Axes, series: Series, values: list[list[float]], nodes: Sequence[str]) -> None:
    t = _minutes(series.t)
    for i, name in enumerate(series.nodes):
        line = [v[i] if i < len(v) else math.nan for v in values]
        colour = _PALETTE[nodes.index(name) % len(_PALETTE)]
        ax.plot(t, line, color=colour, linewidth=0.9, label=name)
    ax.set_ylim(-0.02, 1.05)


def _bands(ax: Axes, series: Series, values: list[list[float]]) -> None:
    t = _minutes(series.t)
    if values:
        low, median, p90, high = ([v[q] for v in values] for q in range(4))
        ax.fill_between(t, low, high, color="tab:blue", alpha=0.15, label="min-max")
        ax.plot(t, median, color="tab:blue", linewidth=1.2, label="median")
        ax.plot(t, p90, color="tab:red", linewidth=1.0, label="p90")
    ax.set_ylim(-0.02, 1.05)


def _heatmap(
    ax: Axes, series: Series, values: list[list[float]], nodes: Sequence[str], colours: str
) -> AxesImage:
    matrix = np.full((len(nodes), len(values)), np.nan)
    position = {name: i for i, name in enumerate(nodes)}
    rows = [position[name] for name in series.nodes]
    for k, sample in enumerate(values):
        for i, value in enumerate(sample[: len(rows)]):
            matrix[rows[i], k] = value
    t = _minutes(series.t)
    half = (t[1] - t[0]) / 2 if len(t) > 1 else 0.5
    start, end = (t[0] - half, t[-1] + half) if t else (0.0, 1.0)
    image = ax.imshow(
        np.ma.masked_invalid(matrix),
        aspect="auto",
        interpolation="nearest",
        cmap=matplotlib.colormaps[colours].with_extremes(bad="#d9d9d9"),
        vmin=0.0,
        vmax=1.0,
        extent=(start, end, len(nodes) - 0.5, -0.5),
    )
    step = max(1, math.ceil(len(nodes) / 24))
    ticks = list(range(0, len(nodes), step))
    ax.set_yticks(ticks, [nodes[i] for i in ticks], fontsize=7)
    return image


# ---------------------------------------------------------------------------- spread chart


def draw_spread_chart(result: SeededResult) -> Figure | None:
    """The spread and evictions over time, mean over the seeds with its 95% band, or None when
    no contender ran."""
    runs = {name: by_seed for name, by_seed in result.series.items() if by_seed}
    if not runs:
        return None
    names = list(runs)
    figure = Figure(figsize=(_WIDTH, 7.0), layout="constrained")
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    seeds = max(len(by_seed) for by_seed in runs.values())
    # The spread is sampled from a continuous quantity; evictions are counts that jump.
    for ax, values, where in ((top, _spread, None), (bottom, _evictions, "post")):
        bands = {name: band_over_seeds(by_seed, values) for name, by_seed in runs.items()}
        for members in group_identical(
            {name: (b.t, b.mean, b.low, b.high) for name, b in bands.items()}
        ):
            band = bands[members[0]]
            colour = contender_colour(members[0], names)
            t = _minutes(band.t)
            label = group_label(members)
            if where is None:
                ax.plot(t, band.mean, color=colour, linewidth=1.3, label=label)
            else:
                ax.step(t, band.mean, where=where, color=colour, linewidth=1.3, label=label)
            if band.seeds > 1:
                # The interval of a mean can reach below zero; neither a spread nor a count can.
                ax.fill_between(
                    t,
                    [max(0.0, v) for v in band.low],
                    band.high,
                    step=where,
                    color=colour,
                    alpha=0.18,
                    linewidth=0,
                )
        ax.axvline(result.scenario.warmup / 60.0, color="grey", linestyle=":", linewidth=1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    over = (
        f"mean over {seeds} seeds, shaded: its 95% interval"
        if seeds > 1
        else f"seed {result.seeds[0]}"
    )
    top.set_title(
        f"{result.scenario.name}: how evenly CPU pressure is spread (lower is better); {over}",
        loc="left",
        fontsize=11,
    )
    top.set_ylabel("pressure spread\n(std across nodes)")
    bottom.set_ylabel("evictions (cumulative)")
    # Counts: whole ticks, and a zero line that stays in view when nothing was evicted.
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    highest = max(1.0, bottom.get_ylim()[1])
    bottom.set_ylim(-0.04 * highest, highest)
    bottom.set_xlabel("minutes (dotted: end of warm-up)")
    return figure


def _spread(series: Series) -> Sequence[float]:
    return series.spread


def _evictions(series: Series) -> Sequence[float]:
    return [float(v) for v in series.evictions]


# ---------------------------------------------------------------------------------- files


def write_charts(result: SeededResult, directory: Path) -> list[Path]:
    """The scenario's charts as PNG files in `directory`; the paths written."""
    written = []
    name = result.scenario.name
    drawn = (
        (directory / f"{name}-nodes.png", draw_node_chart(result.first) if result.first else None),
        (directory / f"{name}-spread.png", draw_spread_chart(result)),
    )
    for path, figure in drawn:
        if figure is not None:
            figure.savefig(path, dpi=_DPI)
            written.append(path)
    return written
