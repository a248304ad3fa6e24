"""The textfile source and its one writer, `write_node_series`.

Covers: one node per `<node>.prom` (hidden and other files ignored), file mtime as the sample
time, a removed file removing its node, a broken file keeping the node's last good values and
naming the failure, a missing directory; writing series atomically while keeping the node's
other series and comments, refusing what could not be read back, and two writers in two
processes (the demo's telemetry and `tas set-health`) never losing each other's series.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from tas.adapters.metrics.textfile import TextfileSource, write_node_series
from tas.metrics.source import Sample
from tas.metrics.textformat import parse_text
from tas.types import MetricName, NodeName

HEALTH = MetricName("health_metric")
WANTED = frozenset({HEALTH})


def put(directory: Path, node: str, text: str, mtime: float = 1000.0) -> None:
    path = directory / f"{node}.prom"
    path.write_text(text)
    os.utime(path, (mtime, mtime))


def test_every_prom_file_is_a_node_and_its_mtime_the_sample_time(tmp_path: Path) -> None:
    put(tmp_path, "a", "node_health_metric 0\n", mtime=1000.0)
    put(tmp_path, "b", "node_health_metric 2\n", mtime=1001.0)
    put(tmp_path, ".c", "node_health_metric 9\n")
    (tmp_path / "notes.txt").write_text("node_health_metric 9\n")
    fetched = TextfileSource(tmp_path).fetch(WANTED)
    assert fetched.columns == {
        HEALTH: {NodeName("a"): Sample(0.0, 1000.0), NodeName("b"): Sample(2.0, 1001.0)}
    }
    assert fetched.errors == {}


def test_a_removed_file_removes_its_node(tmp_path: Path) -> None:
    source = TextfileSource(tmp_path)
    put(tmp_path, "a", "node_health_metric 0\n")
    put(tmp_path, "b", "node_health_metric 2\n")
    source.fetch(WANTED)
    (tmp_path / "a.prom").unlink()
    assert set(source.fetch(WANTED).columns[HEALTH]) == {"b"}


def test_a_rewritten_file_is_read_again(tmp_path: Path) -> None:
    source = TextfileSource(tmp_path)
    put(tmp_path, "a", "node_health_metric 0\n", mtime=1000.0)
    source.fetch(WANTED)
    put(tmp_path, "a", "node_health_metric 1\n", mtime=1005.0)
    assert source.fetch(WANTED).columns[HEALTH] == {"a": Sample(1.0, 1005.0)}


def test_a_broken_file_keeps_the_nodes_last_good_values_and_names_the_failure(
    tmp_path: Path,
) -> None:
    source = TextfileSource(tmp_path)
    put(tmp_path, "a", "node_health_metric 2\n", mtime=1000.0)
    source.fetch(WANTED)
    put(tmp_path, "a", "node_health_metric two\n", mtime=1001.0)
    fetched = source.fetch(WANTED)
    assert fetched.columns[HEALTH] == {"a": Sample(2.0, 1000.0)}
    assert list(fetched.errors) == ["node a"]
    assert "line 1: bad value 'two'" in fetched.errors["node a"]


def test_a_missing_directory_is_a_failure_not_an_empty_cluster(tmp_path: Path) -> None:
    fetched = TextfileSource(tmp_path / "nowhere").fetch(WANTED)
    assert fetched.columns == {}
    assert "cannot list" in fetched.errors[str(tmp_path / "nowhere")]


def test_writing_a_metric_replaces_that_series_and_keeps_the_others(tmp_path: Path) -> None:
    put(tmp_path, "a", "# HELP node_x X.\nnode_x 5\nnode_health_metric 0\n")
    write_node_series(tmp_path, "a", {"node_health_metric": 2.0})
    write_node_series(tmp_path, "a", {"node_cpu_pressure": 0.25, "node_x": 6})
    assert (tmp_path / "a.prom").read_text() == (
        "# HELP node_x X.\nnode_health_metric 2\nnode_cpu_pressure 0.25\nnode_x 6\n"
    )
    # No temp file left behind; the writers' lock file is hidden from the source.
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "a.prom"]


def test_writing_creates_the_directory_and_a_world_readable_file(tmp_path: Path) -> None:
    write_node_series(tmp_path / "run" / "metrics", "node-1", {"node_health_metric": -1.5})
    path = tmp_path / "run" / "metrics" / "node-1.prom"
    assert path.read_text() == "node_health_metric -1.5\n"
    assert path.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    ("node", "metric", "value", "message"),
    [
        pytest.param("../a", "node_x", 1.0, "cannot be a file name", id="path-node"),
        pytest.param(".a", "node_x", 1.0, "cannot be a file name", id="hidden-node"),
        pytest.param("", "node_x", 1.0, "cannot be a file name", id="empty-node"),
        pytest.param("a", "node-x", 1.0, "not a Prometheus series name", id="bad-metric"),
        pytest.param("a", "node_x", float("nan"), "not a finite number", id="nan"),
        pytest.param("a", "node_x", float("inf"), "not a finite number", id="inf"),
        pytest.param("a", "node_x", True, "not a finite number", id="bool"),
    ],
)
def test_writing_rejects_what_cannot_be_read_back(
    tmp_path: Path, node: str, metric: str, value: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        write_node_series(tmp_path, node, {"node_ok": 1.0, metric: value})
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def _write_many(directory: str, name: str, count: int) -> None:
    for index in range(count):
        write_node_series(Path(directory), "n", {name: float(index)})


def test_two_writers_of_one_file_never_lose_each_others_series(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    writers = [
        context.Process(target=_write_many, args=(str(tmp_path), name, 200))
        for name in ("node_health_metric", "node_cpu_pressure")
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(60)
    samples = {s.name: s.value for s in parse_text((tmp_path / "n.prom").read_text())}
    assert samples == {"node_health_metric": 199.0, "node_cpu_pressure": 199.0}
