"""`tas simulate`'s command line, as a user meets it: a real process (issue 21).

Covered:
- a scenario name that is neither a file nor a named scenario is exit 2, offering the closest
  name and listing every named one, before anything runs or is written;
- under its tables, a legend says what each column shown counts and in which unit, and every
  column the tables can show has one;
- (issue 45) every line it prints fits 110 columns (the table in blocks of columns, each with
  the contender column, notes and legend wrapped), where a row of every contender was 230;
  fewer than 3 seeds is warned of; `--out` has help; it says where it wrote; simulate.log
  holds the run's log (what ran, its progress, its tables);
- (issue 54) it prints the goals of the scenarios it ran only, counted MET, MISSED, UNDECIDED.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tas_simulator.report import COLUMNS, LEGEND
from tas_simulator.scenario import named_scenarios
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
    headers = " ".join(line for line in lines if line.startswith("contender "))
    shown = [title for title in LEGEND if title in headers]
    assert "viol.place" in shown
    assert "lost core·s" in shown
    start = next(i for i, line in enumerate(lines) if line.startswith("What the columns count"))
    # An entry per column, its text wrapped under itself: continuation lines start blank.
    entries: list[str] = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        if line.startswith("   ") and entries:
            entries[-1] += " " + line.strip()
        else:
            entries.append(line.strip())
    assert len(entries) == len(shown), entries
    for title, entry in zip(shown, entries, strict=True):
        assert entry.startswith(title + " "), entries
        assert " ".join(LEGEND[title].split()) in " ".join(entry.split())
    assert "core-seconds" in LEGEND["lost core·s"]  # the units
    assert "0..1" in LEGEND["hottest"]


def test_every_line_fits_110_columns_and_it_says_what_it_wrote_and_logged(
    tmp_path: Path,
) -> None:
    done = simulate(tmp_path, "health-demo", "--seeds", "2", "--duration", "2m", "--no-charts")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    said = [
        line for line in lines if not line.startswith("wrote ")
    ]  # paths are as long as they are
    assert max(len(line) for line in said) <= 110, max(said, key=len)
    # Every contender and every column still there, in blocks one under the other.
    headers = [line for line in lines if line.startswith("contender ")]
    assert len(headers) >= 2
    for name in ("requests", "volcano-loadaware", "ours", "clairvoyant (ref)"):
        assert sum(line.startswith(name + " ") for line in lines) == len(headers), name
    assert "gain stall" in headers[-1]

    assert done.stderr.splitlines()[0] == (
        "tas simulate: warning: 2 seeds give 95% intervals too wide to tell contenders apart: "
        "use --seeds 3 or more (default 5) for figures to compare"
    )
    out = tmp_path / "out"
    assert f"wrote {out / 'summary.json'} (" in done.stdout
    assert f"wrote {out / 'simulate.log'}\n" in done.stdout
    log = (out / "simulate.log").read_text(encoding="utf-8")
    assert "scenario health-demo: 2 min, seeds from its own, 2 seed(s)" in log
    # Every run of the plan, however many contenders there are: the progress ends at its total.
    assert re.search(r"\b(\d+) of \1 runs done\n", log), log
    assert "contender " in log  # the tables


def test_out_has_help_and_three_seeds_are_not_warned_of(tmp_path: Path) -> None:
    usage = subprocess.run(
        tas_command("simulate", "--help"), capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "--out DIR" in usage
    assert "where to write summary.json" in " ".join(usage.split())
    done = simulate(
        tmp_path, "health-demo", "--seeds", "3", "--contenders", "ours", "--duration", "1m",
        "--no-charts",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr


def test_it_judges_only_the_goals_of_the_scenarios_it_ran(tmp_path: Path) -> None:
    """(issue 54) psi-skewed alone: its one goal, counted MET/MISSED/UNDECIDED, and no line
    for a scenario that did not run."""
    done = simulate(
        tmp_path, "psi-skewed", "--seeds", "1", "--contenders", "requests,ours", "--duration",
        "2m", "--no-charts",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    (title,) = [line for line in lines if "against its goals" in line]
    assert re.fullmatch(
        r"ours against its goals on the scenarios run: \d MET, \d MISSED, \d UNDECIDED", title
    )
    goals = lines[lines.index(title) + 1 :]
    goals = goals[: goals.index("")]
    assert [line.split(":")[0].split(maxsplit=1)[1] for line in goals] == ["psi-skewed"]
    assert "NOT JUDGED" not in done.stdout
    assert "not run" not in done.stdout
