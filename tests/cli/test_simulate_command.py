"""`tas simulate`'s command line, as a user meets it: a real process (issue 21).

Covered:
- a scenario name that is neither a file nor a named scenario is exit 2, offering the closest
  name and listing every named one, before anything runs or is written;
- under its tables, a legend says what each column shown counts and in which unit, and every
  column the tables can show has one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from simulator.report import COLUMNS
from simulator.scenario import named_scenarios
from tas_cli.simulate import LEGEND
from tests.processes import tas_command


def simulate(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tas_command("simulate", *args, "--out", str(directory / "out")),
        capture_output=True, text=True, timeout=300, check=False, cwd=directory,
    )  # fmt: skip


def test_an_unknown_scenario_lists_the_named_ones_and_exits_2(tmp_path: Path) -> None:
    done = simulate(tmp_path, "health-demo", "helth-demo")
    assert done.returncode == 2
    said = done.stderr.strip()
    assert said.startswith(
        "tas simulate: no scenario named 'helth-demo' (did you mean health-demo?)"
    )
    assert all(name in said for name in named_scenarios()), said
    assert not (tmp_path / "out").exists(), "nothing runs for a scenario that is not there"


def test_every_column_the_tables_can_show_has_a_legend() -> None:
    assert [title for title, *_ in COLUMNS] == list(LEGEND)


def test_the_tables_are_followed_by_a_legend_of_their_columns(tmp_path: Path) -> None:
    done = simulate(
        tmp_path, "health-demo", "--seeds", "1", "--contenders", "ours", "--duration", "2m",
        "--no-charts",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("contender "))
    shown = [title for title in LEGEND if title in header]
    assert "viol.place" in shown
    assert "lost core·s" in shown
    start = next(i for i, line in enumerate(lines) if line.startswith("What the columns count"))
    legend = lines[start + 1 : start + 1 + len(shown)]
    for title, line in zip(shown, legend, strict=True):
        assert line.split()[0] == title.split()[0], legend
        assert LEGEND[title] in line
    assert "core-seconds" in LEGEND["lost core·s"]  # the units
    assert "0..1" in LEGEND["hottest"]
