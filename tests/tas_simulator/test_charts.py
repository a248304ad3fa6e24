"""The simulator's PNG charts (`tas simulate` writes `<scenario>-nodes.png` and `-spread.png`).

Covered, on real runs drawn with real matplotlib:
- up to 8 nodes, the node chart draws one line per node, a node in the same colour in every
  panel; past 8 it draws one heatmap per panel (node x time), every panel on the 0..1 scale;
  a series that kept only percentiles is drawn as bands;
- contenders whose drawn series are identical (requests and requests-lnu when the latter
  evicts nothing) are drawn once and named together, in the node chart and the spread chart;
  NaN equals NaN there, and any difference keeps them apart;
- every seed's spread and evictions over time come back from `run_seeded` (the per-node
  values only for the first seed), and the spread chart shades a 95% band per contender when
  there is more than one seed, and none with one; the band is `stats.interval` per instant;
- the PNG files are written, and no title, label, tick or legend falls outside the image.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

from tas_simulator.charts import (
    NODE_LINES,
    NodeChartKind,
    band_over_seeds,
    draw_node_chart,
    draw_spread_chart,
    group_identical,
    node_chart_kind,
    write_charts,
)
from tas_simulator.figures import Series
from tas_simulator.scenario import SCENARIOS, Scenario, read_scenario
from tas_simulator.seeds import SeededResult, run_seeded
from tas_simulator.stats import interval

CONTENDERS = ["requests", "requests-lnu", "ours"]


def skewed(
    nodes: int, *, name: str, apply: Callable[[dict[str, Any]], None] | None = None
) -> Scenario:
    """psi-skewed's shape (equal requests, half the pods CPU-heavy) on `nodes` nodes, 10 minutes."""
    document: dict[str, Any] = {
        "name": name,
        "duration": "10m",
        "step": "5s",
        "seed": 7,
        "warmup": "2m",
        "startupDelay": "15s",
        "syncPeriod": "10s",
        "deschedulingInterval": "60s",
        "metrics": {"scrapeInterval": "15s", "window": "1m", "delay": "15s"},
        "nodes": [{"name": "worker-{i}", "count": nodes, "cpu": 8, "memory": "32Gi"}],
        "workloads": [
            {
                "name": "vm",
                "replicas": 8 * nodes,
                "requests": {"cpu": "750m", "memory": "2Gi"},
                "labels": {"app": "vm", "telemetry-policy": "psi-aware"},
                "usageMix": [
                    {
                        "share": 1,
                        "cpu": {"profile": "bursty", "mean": "1.5", "peak": "2.2", "period": "3m"},
                        "memory": {"profile": "steady", "value": "1500Mi"},
                    },
                    {
                        "share": 1,
                        "cpu": {"profile": "idle", "value": "50m"},
                        "memory": {"profile": "steady", "value": "600Mi"},
                    },
                ],
            }
        ],
        "policies": [{"file": "policies/psi-aware.yaml"}],
    }
    if apply is not None:
        apply(document)
    return read_scenario(document, base=SCENARIOS)


def run(scenario: Scenario, seeds: int, tmp: Path) -> SeededResult:
    (result,) = run_seeded(
        [scenario],
        contenders=CONTENDERS,
        seeds=seeds,
        base_seed=None,
        workers=1,
        dask_address=None,
        log_path=tmp / "simulate.log",
        progress=lambda done, total: None,
    )
    return result


@pytest.fixture(scope="module")
def twelve_nodes(tmp_path_factory: pytest.TempPathFactory) -> SeededResult:
    """12 nodes, and a 13th that joins at 4 minutes; 2 seeds."""

    def grow(document: dict[str, Any]) -> None:
        document["events"] = [
            {"at": "4m", "add-nodes": {"name": "worker-13", "cpu": 8, "memory": "32Gi"}}
        ]

    return run(skewed(12, name="skewed-12", apply=grow), 2, tmp_path_factory.mktemp("twelve"))


@pytest.fixture(scope="module")
def six_nodes(tmp_path_factory: pytest.TempPathFactory) -> SeededResult:
    return run(skewed(6, name="skewed-6"), 1, tmp_path_factory.mktemp("six"))


def series(nodes: int, *, banded: bool = False) -> Series:
    names = [f"node-{i}" for i in range(nodes)]
    return Series(every=1, t=[0.0, 5.0], nodes=names, banded=banded)


def panels(figure: Figure) -> list[Any]:
    """The chart's panels, without the colour bars."""
    return [ax for ax in figure.axes if ax.get_label() != "<colorbar>"]


def row_labels(figure: Figure) -> list[str]:
    return [ax.get_ylabel() for ax in panels(figure) if ax.get_ylabel()]


# ------------------------------------------------------------------------ kind of node chart


@pytest.mark.parametrize(
    ("drawn", "kind"),
    [
        pytest.param([series(NODE_LINES)], NodeChartKind.LINES, id="eight-nodes-are-lines"),
        pytest.param([series(NODE_LINES + 1)], NodeChartKind.HEATMAP, id="nine-are-a-heatmap"),
        pytest.param(
            [series(NODE_LINES), Series(every=1, nodes=["node-8"])],
            NodeChartKind.HEATMAP,
            id="nodes-counted-over-every-run",
        ),
        pytest.param([series(4, banded=True)], NodeChartKind.BANDS, id="percentiles-are-bands"),
    ],
)
def test_a_node_chart_is_lines_up_to_eight_nodes_and_a_heatmap_past_them(
    drawn: list[Series], kind: NodeChartKind
) -> None:
    assert node_chart_kind(drawn) is kind


def test_past_eight_nodes_every_panel_is_a_heatmap_on_one_colour_scale(
    twelve_nodes: SeededResult,
) -> None:
    assert twelve_nodes.first is not None
    figure = draw_node_chart(twelve_nodes.first)
    assert figure is not None
    drawn = panels(figure)
    assert drawn
    for ax in drawn:
        assert len(ax.images) == 1
        assert not ax.lines
        image: AxesImage = ax.images[0]
        assert image.get_clim() == (0.0, 1.0)
        values = image.get_array()
        assert isinstance(values, np.ma.MaskedArray)
        t = twelve_nodes.first.results["ours"].series.t
        assert values.shape == (13, len(t))
        # The node that joined late is blank (masked), not idle, before it joined.
        blank = np.ma.getmaskarray(values)
        assert blank[12, [k for k, at in enumerate(t) if at < 240.0]].all()
        assert not blank[12, [k for k, at in enumerate(t) if at > 240.0]].any()
        assert not blank[:12].any()
    labels = [t.get_text() for t in drawn[0].get_yticklabels()]
    assert labels == [f"worker-{i}" for i in range(1, 14)]  # worker-2 before worker-10


def test_up_to_eight_nodes_each_node_is_one_line_in_the_same_colour_in_every_panel(
    six_nodes: SeededResult,
) -> None:
    assert six_nodes.first is not None
    figure = draw_node_chart(six_nodes.first)
    assert figure is not None
    colours: dict[str, set[str]] = {}
    for ax in panels(figure):
        assert not ax.images
        assert len(ax.lines) == 6
        for line in ax.lines:
            colours.setdefault(str(line.get_label()), set()).add(str(line.get_color()))
    assert sorted(colours) == [f"worker-{i}" for i in range(1, 7)]
    assert all(len(found) == 1 for found in colours.values())
    assert len({next(iter(found)) for found in colours.values()}) == 6


# ---------------------------------------------------------------------- identical contenders


def test_identical_series_are_grouped_in_order_and_nan_equals_nan() -> None:
    nan = math.nan
    drawn = {
        "requests": [[0.1, nan], [0.2, 0.3]],
        "ours": [[0.1, nan], [0.2, 0.31]],
        "requests-lnu": [[0.1, nan], [0.2, 0.3]],
    }
    assert group_identical(drawn) == [("requests", "requests-lnu"), ("ours",)]


def test_contenders_drawing_the_same_series_are_named_together(twelve_nodes: SeededResult) -> None:
    # The premise: requests-lnu's descheduler moved nothing on any seed, so its runs are
    # requests' runs.
    lnu = twelve_nodes.contenders["requests-lnu"].by_seed
    assert all(figures["evictions"]["total"] == 0 for figures in lnu.values())
    assert twelve_nodes.contenders["ours"].by_seed[7]["evictions"]["total"] > 0

    spread = draw_spread_chart(twelve_nodes)
    assert spread is not None
    top = spread.axes[0]
    legend = top.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["requests = requests-lnu", "ours"]
    assert [
        line.get_label() for line in top.lines if not str(line.get_label()).startswith("_")
    ] == [
        "requests = requests-lnu",
        "ours",
    ]

    assert twelve_nodes.first is not None
    nodes = draw_node_chart(twelve_nodes.first)
    assert nodes is not None
    assert row_labels(nodes) == ["requests\n= requests-lnu", "ours"]


# ------------------------------------------------------------------------- spread over seeds


def test_every_seeds_spread_comes_back_and_only_the_first_seeds_nodes(
    twelve_nodes: SeededResult,
) -> None:
    assert twelve_nodes.seeds == [7, 8]
    for contender in CONTENDERS:
        first, second = (twelve_nodes.series[contender][seed] for seed in (7, 8))
        assert len(second.spread) == len(second.t) == len(first.t) > 100
        assert len(second.evictions) == len(second.t)
        assert len(first.nodes) == 13
        assert first.pressure
        assert (second.nodes, second.pressure, second.utilization) == ([], [], [])
    assert twelve_nodes.series["ours"][7].spread != twelve_nodes.series["ours"][8].spread


def test_a_band_is_the_interval_over_seeds_at_each_instant() -> None:
    by_seed = {
        2: Series(every=1, t=[0.0, 5.0, 10.0], spread=[0.1, 0.4, 0.2]),
        1: Series(every=1, t=[0.0, 5.0, 10.0], spread=[0.3, 0.2, 0.2]),
        3: Series(every=1, t=[0.0, 5.0], spread=[0.2, 0.3]),
    }
    band = band_over_seeds(by_seed, lambda s: s.spread)
    assert band.t == [0.0, 5.0]
    assert band.seeds == 3
    expected = interval([0.3, 0.1, 0.2])
    assert (band.mean[0], band.low[0], band.high[0]) == pytest.approx(
        (expected.mean, expected.low, expected.high)
    )


def bands(ax: Any) -> list[PolyCollection]:
    return [c for c in ax.collections if isinstance(c, PolyCollection)]


def test_the_spread_chart_shades_a_band_per_contender_over_seeds(
    twelve_nodes: SeededResult, six_nodes: SeededResult
) -> None:
    figure = draw_spread_chart(twelve_nodes)
    assert figure is not None
    top = figure.axes[0]
    assert len(bands(top)) == 2  # requests = requests-lnu, ours
    assert "mean over 2 seeds" in top.get_title(loc="left")

    one_seed = draw_spread_chart(six_nodes)
    assert one_seed is not None
    assert not bands(one_seed.axes[0])
    assert "seed 7" in one_seed.axes[0].get_title(loc="left")


# ------------------------------------------------------------------------------- the files


def fits(figure: Figure, path: Path) -> bool:
    """Whether everything drawn (titles, labels, ticks, legends, colour bars) lies within the
    saved image: nothing is clipped."""
    figure.savefig(path, dpi=90)
    drawn = figure.get_tightbbox()
    assert drawn is not None
    width, height = figure.get_size_inches()
    slack = 0.02  # inches: antialiasing of a glyph's edge
    return bool(
        drawn.x0 >= -slack
        and drawn.y0 >= -slack
        and drawn.x1 <= width + slack
        and drawn.y1 <= height + slack
    )


@pytest.mark.parametrize("fixture", ["twelve_nodes", "six_nodes"])
def test_the_charts_are_written_and_no_label_falls_outside_them(
    fixture: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    result: SeededResult = request.getfixturevalue(fixture)
    written = write_charts(result, tmp_path)
    name = result.scenario.name
    assert written == [tmp_path / f"{name}-nodes.png", tmp_path / f"{name}-spread.png"]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result.first is not None
    nodes, spread = draw_node_chart(result.first), draw_spread_chart(result)
    assert nodes is not None
    assert spread is not None
    assert fits(nodes, tmp_path / "nodes.png")
    assert fits(spread, tmp_path / "spread.png")
