"""`tas set-health NODE VALUE [--dir DIR] [--create] [--url URL]`.

Covers: writing `node_health_metric` for a node (keeping its other series), reading it back
through the textfile source under the policy name `health_metric`, the default directory, and
a clear error with exit code 2 for a value that is not a finite number.

Loud on typos, as a user meets them (real `tas` processes; issues 21 and 45):
- a node the running `make run` (its dashboard API, at --url or $TAS_DEMO_URL) does not have
  exits 2, writes nothing, and names its nodes and the closest one, `--create` or not;
- without --dir, from any directory, the running `make run`'s own metrics directory is written
  (it says where in `/api/state`); when none answers, run/metrics;
- with no `make run` answering, a node without a file in the directory exits 2 naming the
  directory's nodes (and the closest one); `--create` writes a new node's file on purpose;
- a node of the running `make run` written to another directory is refused, saying so;
- a missing `--dir` is an error naming the path and how to create it, and is not created.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tas.adapters.metrics import open_metric_view
from tas.types import MetricName
from tas_cli.main import main
from tests.demo_process import start_demo
from tests.processes import free_port, tas_command


def tas(*argv: str) -> int:
    return main(list(argv))


def test_set_health_writes_the_series_a_health_metric_policy_reads(tmp_path: Path) -> None:
    (tmp_path / "b.prom").write_text("node_cpu_pressure 0.5\nnode_health_metric 0\n")
    assert tas("set-health", "b", "2", "--dir", str(tmp_path)) == 0
    assert (tmp_path / "b.prom").read_text() == "node_cpu_pressure 0.5\nnode_health_metric 2\n"
    view = open_metric_view(f"textfile:{tmp_path}")
    view.set_wanted([MetricName("health_metric")])
    view.refresh_once()
    assert view.columns() == {"health_metric": {"b": 2.0}}


def test_without_a_running_demo_the_default_directory_is_run_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TAS_DEMO_URL", nobody_answers())
    (tmp_path / "run" / "metrics").mkdir(parents=True)
    (tmp_path / "run" / "metrics" / "node-1.prom").write_text("")
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


def set_health_process(
    *args: str, cwd: Path, url: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`tas set-health ...` as typed in a terminal; `url` is what $TAS_DEMO_URL says."""
    environment = dict(os.environ)
    environment.pop("TAS_DEMO_URL", None)
    if url is not None:
        environment["TAS_DEMO_URL"] = url
    return subprocess.run(
        tas_command("set-health", *args),
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def nobody_answers() -> str:
    """A dashboard address where no `make run` listens (a port just freed)."""
    return f"http://127.0.0.1:{free_port()}"


def test_an_unknown_node_exits_2_and_names_the_directory_s_nodes(tmp_path: Path) -> None:
    (tmp_path / "node-a.prom").write_text("node_health_metric 0\n")
    (tmp_path / "node-b.prom").write_text("node_health_metric 1\n")
    url = nobody_answers()
    done = set_health_process("node-bb", "2", "--dir", str(tmp_path), cwd=tmp_path, url=url)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"set-health: no node 'node-bb' in {tmp_path} (did you mean node-b?) (the nodes there: "
        f"node-a, node-b; no `make run` answers at {url}); --create writes a new node's file "
        "in a directory of your own\n"
    )
    assert sorted(p.name for p in tmp_path.glob("*.prom")) == ["node-a.prom", "node-b.prom"]


def test_create_writes_a_new_node_s_file_on_purpose(tmp_path: Path) -> None:
    (tmp_path / "node-a.prom").write_text("node_health_metric 0\n")
    done = set_health_process(
        "node-f", "1", "--dir", str(tmp_path), "--create", cwd=tmp_path, url=nobody_answers()
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "node-f.prom").read_text() == "node_health_metric 1\n"


def test_a_missing_directory_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    done = set_health_process("node-c", "2", cwd=tmp_path, url=nobody_answers())
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"set-health: run/metrics does not exist ({tmp_path}/run/metrics)")
    assert line.endswith("mkdir -p run/metrics")
    typo = tmp_path / "metrcs"
    done = set_health_process("node-c", "2", "--dir", str(typo), "--create", cwd=tmp_path)
    assert done.returncode == 2
    assert f"{typo} does not exist" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_node_names_the_running_make_run_s_nodes(tmp_path: Path) -> None:
    with start_demo(tmp_path) as demo:
        metrics = str(demo.metrics)
        for create in ((), ("--create",)):  # --create adds no node the demo does not have
            done = set_health_process(
                "node-cc", "2", "--dir", metrics, *create, cwd=tmp_path, url=demo.dashboard
            )
            assert done.returncode == 2
            assert done.stderr == (
                f"set-health: no node 'node-cc' in the running `make run` at {demo.dashboard} "
                "(did you mean node-c?); its nodes: node-a, node-b, node-c, node-d, node-e\n"
            )
            assert not (demo.metrics / "node-cc.prom").exists()
        # Without --dir, from another directory: the demo says where its metrics are.
        other = tmp_path / "somewhere-else"
        other.mkdir()
        done = set_health_process("node-c", "2", "--create", cwd=other, url=demo.dashboard)
        assert done.returncode == 0, done.stderr
        # Then what the demo's policy does with the value (tests/tas_cli/test_set_health_says.py).
        written = f"node-c: node_health_metric 2 ({demo.metrics / 'node-c.prom'}): "
        assert done.stdout.startswith(written)
        assert "node_health_metric 2\n" in (demo.metrics / "node-c.prom").read_text()
        assert list(other.iterdir()) == []
        done = set_health_process("node-q", "2", "--create", cwd=other, url=demo.dashboard)
        assert done.returncode == 2
        assert "no node 'node-q' in the running `make run`" in done.stderr
        assert not (demo.metrics / "node-q.prom").exists()
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        done = set_health_process(
            "node-c", "2", "--dir", str(elsewhere), "--url", demo.dashboard, cwd=tmp_path
        )
        assert done.returncode == 2
        assert "node-c is a node of the running `make run`" in done.stderr
        assert f"is {elsewhere} its metrics directory?" in done.stderr
        assert list(elsewhere.iterdir()) == []
