"""`tas set-health NODE VALUE [--dir DIR]`.

Covers: writing `node_health_metric` for a node (keeping its other series), reading it back
through the textfile source under the policy name `health_metric`, the default directory, and
a clear error with exit code 2 for a value that is not a finite number.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tas.metrics import open_metric_view
from tas.types import MetricName
from tas_cli import set_health


def tas(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="tas")
    set_health.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


def test_set_health_writes_the_series_a_health_metric_policy_reads(tmp_path: Path) -> None:
    (tmp_path / "b.prom").write_text("node_cpu_pressure 0.5\nnode_health_metric 0\n")
    assert tas("set-health", "b", "2", "--dir", str(tmp_path)) == 0
    assert (tmp_path / "b.prom").read_text() == "node_cpu_pressure 0.5\nnode_health_metric 2\n"
    view = open_metric_view(f"textfile:{tmp_path}")
    view.set_wanted([MetricName("health_metric")])
    view.refresh_once()
    assert view.columns() == {"health_metric": {"b": 2.0}}


def test_the_default_directory_is_run_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert tas("set-health", "node-1", "1.5") == 0
    assert (tmp_path / "run" / "metrics" / "node-1.prom").read_text() == "node_health_metric 1.5\n"


@pytest.mark.parametrize(
    "value",
    [pytest.param("high", id="word"), pytest.param("nan", id="nan"), pytest.param("inf", id="inf")],
)
def test_a_value_that_is_not_a_finite_number_exits_2_with_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    assert tas("set-health", "b", value, "--dir", str(tmp_path)) == 2
    assert f"VALUE must be a finite number, not {value!r}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_node_name_that_cannot_be_a_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tas("set-health", "../x", "1", "--dir", str(tmp_path)) == 2
    assert "cannot be a file name" in capsys.readouterr().err
