"""docs/results.md is written by `make compare` from its outputs (`tas_simulator.results_doc`).

The fixture `tests/docs/comparison/` is a real small run, trimmed: `tas simulate --all --seeds 2
--duration 3m` (three of its scenarios kept) and `tas sweep --count 2 --seeds 2` (runs.json kept
to its seeds, one drawn scenario's first lines). Covered:
- the document opens with the generated, do-not-edit header and names the commit it ran on;
- a table per named scenario with every contender and both reference rows, a figure in bold
  exactly where summary.json names a clear best;
- the goals are `tas_simulator.goals`' own verdicts, MET, MISSED or UNDECIDED, on the named
  scenarios and on the sweep;
- runs smaller than make compare's say so at the top (a family not swept included); full-size
  runs do not;
- a part not run is said to be missing, an empty folder is refused (exit 1);
- the same outputs give the same bytes, and `make compare` writes docs/results.md with it,
  sweeping every shipped family at its own seed and at a fresh one;
- both draws of a family are shown, a draw not run is named; README.md's results section is
  written between its markers from the same outputs, every goal cell in it is a goal line of
  results.md (on the fixture, and on the committed README.md and docs/results.md), and it names
  no commit and no issue.

`sweep-default-fresh/` is `tas sweep --count 2 --seeds 2 --family-seed 20261201` (sweep.json
with intervals over scenarios; runs.json and scenarios/ trimmed as above).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

from tas_simulator.goals import Verdict, named_goals, sweep_goals
from tas_simulator.report import COLUMNS
from tas_simulator.results_doc import (
    DISPLAY,
    FRESH,
    FRESH_FAMILY_SEED,
    FULL_SEEDS,
    FULL_SWEEP_COUNTS,
    FULL_SWEEP_SEEDS,
    HEADER,
    README_BEGIN,
    README_END,
    Comparison,
    ReadmeError,
    main,
    read_comparison,
    readme_section,
    render,
    with_readme_section,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "comparison"


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    return read_comparison(FIXTURE)


@pytest.fixture(scope="module")
def document(comparison: Comparison) -> str:
    return render(comparison)


def section(document: str, title: str) -> str:
    """The text under a `### title` heading, up to the next heading."""
    found = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^#)", document, re.S | re.M)
    assert found, f"no section {title!r}"
    return found.group(1)


def test_the_document_says_it_is_generated_and_from_which_commit(document: str) -> None:
    assert document.startswith(HEADER + "\n")
    assert "Do not edit" in HEADER
    assert "commit `2e738a4`" in document


def test_every_named_scenario_has_a_table_with_every_contender_and_both_references(
    comparison: Comparison, document: str
) -> None:
    assert comparison.summary is not None
    for name, entry in comparison.summary["scenarios"].items():
        text = section(document, name)
        rows = [line for line in text.splitlines() if line.startswith("| ")]
        assert len(rows) == 1 + len(entry["contenders"]) + len(entry["references"])
        assert rows[-2].startswith("| *limit (ref)*")
        assert rows[-1].startswith("| *clairvoyant (ref)*")


def test_a_figure_is_bold_exactly_where_summary_json_names_a_clear_best(
    comparison: Comparison, document: str
) -> None:
    assert comparison.summary is not None
    paths = {title: fig if key is None else f"{fig}.{key}" for title, fig, key, _ in COLUMNS}
    shown = {name: contender for contender, name in DISPLAY.items()}
    for name, entry in comparison.summary["scenarios"].items():
        rows = [line.strip("|").split(" | ") for line in section(document, name).splitlines()]
        rows = [[cell.strip() for cell in row] for row in rows if len(row) > 1]
        header, body = rows[0], rows[2:]
        bold = {
            (shown.get(row[0], row[0]), paths[header[i]])
            for row in body
            for i, cell in enumerate(row)
            if cell.startswith("**")
        }
        expected = {
            (contender, path)
            for path, contender in entry["best"].items()
            if contender is not None and any(paths.get(title) == path for title in header)
        }
        assert bold == expected, name


def test_a_clear_best_is_bold_in_its_row_and_column_only(comparison: Comparison) -> None:
    """The fixture's two seeds make every figure a tie; here summary.json names one best."""
    assert comparison.summary is not None
    entry = comparison.summary["scenarios"]["psi-skewed"]
    best = {**dict.fromkeys(entry["best"]), "work_lost.share": "ours"}
    summary = {"scenarios": {"psi-skewed": {**entry, "best": best}}}
    text = section(render(dataclasses.replace(comparison, summary=summary)), "psi-skewed")
    bold = [line for line in text.splitlines() if "**" in line]
    share = f"{entry['contenders']['ours']['work_lost']['share']:.2%}"
    assert len(bold) == 1
    assert bold[0].startswith("| ours |")
    assert f"**{share}**" in bold[0]
    assert bold[0].count("**") == 2


def test_the_goals_are_the_simulators_own_verdicts(comparison: Comparison, document: str) -> None:
    assert comparison.summary is not None
    assert comparison.sweeps
    sweeps = [g for s in comparison.sweeps for g in sweep_goals(s.verdict)]
    for goal in [*named_goals(comparison.summary), *sweeps]:
        verdict = str(goal.met) if goal.met is Verdict.NOT_JUDGED else f"**{goal.met}**"
        assert f"- {verdict} {goal.name}: {goal.shown}" in document


def test_runs_smaller_than_make_compares_say_so(document: str) -> None:
    assert "These runs are smaller than `make compare`'s" in document
    assert f"named scenarios on 2 seeds, not {FULL_SEEDS}" in document
    assert f"2 scenarios of default's shipped draw, not {FULL_SWEEP_COUNTS['default']}" in document
    assert "no sweep of large-slow" in document


def test_full_size_runs_are_not_called_a_smoke_test(comparison: Comparison) -> None:
    assert comparison.summary is not None
    sweep = comparison.sweeps[0]
    scenarios = {
        name: {**entry, "seeds": list(range(FULL_SEEDS))}
        for name, entry in comparison.summary["scenarios"].items()
    }
    full = dataclasses.replace(
        comparison,
        summary={"scenarios": scenarios},
        sweeps=tuple(
            dataclasses.replace(
                sweep,
                verdict={**sweep.verdict, "scenarios": count},
                seeds=FULL_SWEEP_SEEDS,
                family=f"scenarios/families/{family}.yaml",
                folder=f"sweep-{family}{draw}",
            )
            for family, count in FULL_SWEEP_COUNTS.items()
            for draw in ("", FRESH)
        ),
        full_durations={},
    )
    assert "smaller than" not in render(full)


def test_a_part_not_run_is_said_to_be_missing(comparison: Comparison) -> None:
    text = render(dataclasses.replace(comparison, sweeps=()))
    assert "Not run: no `sweep-<family>/sweep.json`." in text
    assert "### Goals on the named scenarios" in text


def test_an_empty_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path), "--out", str(tmp_path / "results.md")]) == 1
    assert "run make compare" in capsys.readouterr().err
    assert not (tmp_path / "results.md").exists()


def test_the_same_outputs_give_the_same_bytes(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    assert main([str(FIXTURE), "--out", str(out)]) == 0
    first = out.read_bytes()
    assert main([str(FIXTURE), "--out", str(out)]) == 0
    assert out.read_bytes() == first


def count_variable(family: str) -> str:
    """The Makefile variable that holds a family's count of drawn scenarios (DEFAULT_COUNT)."""
    return f"{family.upper().replace('-', '_')}_COUNT"


def test_make_compare_writes_docs_results_md_with_it() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ncompare:", 1)[1].split("\n\n", 1)[0]
    assert "-m tas_simulator.results_doc comparison --out docs/results.md" in recipe
    shipped = {path.stem for path in (ROOT / "scenarios" / "families").glob("*.yaml")}
    assert shipped == set(FULL_SWEEP_COUNTS)  # every shipped family swept, at the count said here
    for family, count in FULL_SWEEP_COUNTS.items():
        # The count is the recipe's default, which an operator may raise for a larger draw.
        assert f"\n{count_variable(family)} ?= {count}\n" in makefile
        assert (
            f"--family {family} --count $({count_variable(family)}) --seeds {FULL_SWEEP_SEEDS}"
        ) in recipe
    assert "comparison/commit.txt" in recipe
    committed = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert committed.startswith(HEADER + "\n")


# -- both draws, and README's section from the same outputs (issue 54, issue 57) -------------

_CELL = re.compile(r"(\*\*(?:MET|MISSED|UNDECIDED)\*\*|NOT JUDGED) ([^|]+?)\s*(?:\||$)")


def readme_cells(text: str) -> list[tuple[str, str]]:
    """Every goal cell of a README results table: (verdict, figure)."""
    return [
        (verdict, figure)
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith("| goal ")
        for verdict, figure in _CELL.findall(line.split(" | ", 1)[1])
    ]


def assert_each_cell_is_a_goal_line(cells: list[tuple[str, str]], results: str) -> None:
    assert cells
    for verdict, figure in cells:
        line = rf"^- {re.escape(verdict)} [^\n]*: {re.escape(figure)}"
        assert re.search(line, results, re.M), (verdict, figure)


def test_both_draws_of_a_family_are_shown_and_a_draw_not_run_is_named(
    comparison: Comparison, document: str
) -> None:
    titles = [s.title for s in comparison.sweeps]
    assert titles == ["default (shipped draw)", "default (fresh draw, family seed 20261201)"]
    assert "### Goals on default (fresh draw, family seed 20261201)" in document
    assert "### Goals on default (shipped draw)" in document
    assert "fresh draw of default" not in document
    shipped_only = tuple(s for s in comparison.sweeps if not s.fresh)
    text = render(dataclasses.replace(comparison, sweeps=shipped_only))
    assert "no fresh draw of default" in text
    said = readme_section(dataclasses.replace(comparison, sweeps=shipped_only))
    assert "These runs fall short of `make compare`'s: " in said
    assert "no fresh draw of default." in said
    fresh = next(s for s in comparison.sweeps if s.fresh)
    goals = document.split(f"### Goals on {fresh.title}\n", 1)[1]
    # A sweep with intervals over scenarios: each goal says its interval.
    assert re.search(r"work lost against requests'.*: \d\.\d\dx \(\d\.\d\dx to \d\.\d\dx\)", goals)


def test_readmes_section_agrees_with_results_md_from_the_same_outputs(
    comparison: Comparison, document: str
) -> None:
    text = readme_section(comparison)
    assert text.startswith(README_BEGIN + "\n")
    assert text.endswith("\n" + README_END)
    assert_each_cell_is_a_goal_line(readme_cells(text), document)
    assert comparison.commit is not None
    assert comparison.commit not in text  # the commit is named in results.md only
    named = re.search(r"On the named scenarios, ours' goals: (.*)\.", text)
    assert named is not None
    assert f"### Goals on the named scenarios\n\n{named.group(1)}.\n" in document


def test_the_committed_readme_agrees_with_the_committed_results_md() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    results = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert readme.count(README_BEGIN) == readme.count(README_END) == 1
    text = readme.split(README_BEGIN, 1)[1].split(README_END, 1)[0]
    assert_each_cell_is_a_goal_line(readme_cells(text), results)
    named = re.search(r"On the named scenarios, ours' goals: (.*)\.", text)
    if named is None:
        # Not run: both pages say so.
        assert "no run of the named scenarios" in text
        assert "no run of the named scenarios" in results
    else:
        assert f"{named.group(1)}.\n" in results
    # Plain words: no internal references, no commit hash (results.md names it once).
    section_ = readme.split("## How it compares", 1)[1].split("\n## ", 1)[0]
    assert not re.search(r"\bissue \d+", section_)
    assert not re.search(r"`[0-9a-f]{7}`", section_)


def test_main_writes_readmes_section_between_its_markers_and_keeps_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nbefore\n{README_BEGIN}\nold\n{README_END}\nafter\n")
    out = tmp_path / "results.md"
    assert main([str(FIXTURE), "--out", str(out), "--readme", str(readme)]) == 0
    written = readme.read_text()
    assert written.startswith("# Title\n\nbefore\n" + README_BEGIN)
    assert written.endswith(README_END + "\nafter\n")
    assert "\nold\n" not in written
    assert written == with_readme_section(written, readme_section(read_comparison(FIXTURE)))
    readme.write_text("# no markers\n")
    assert main([str(FIXTURE), "--out", str(out), "--readme", str(readme)]) == 1
    assert "results:begin" in capsys.readouterr().err
    with pytest.raises(ReadmeError):
        with_readme_section("no markers", "x")


def test_make_compare_sweeps_a_fresh_draw_of_every_family_and_writes_the_readme() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"\nFRESH_FAMILY_SEED = {FRESH_FAMILY_SEED}\n" in makefile
    recipe = makefile.split("\ncompare:", 1)[1].split("\n\n", 1)[0].replace("\\\n\t\t", "")
    for family in FULL_SWEEP_COUNTS:
        assert (
            f"--family {family} --count $({fresh_count_variable(family)}) "
            f"--seeds {FULL_SWEEP_SEEDS} --family-seed $(FRESH_FAMILY_SEED) "
            f"--out comparison/sweep-{family}{FRESH}"
        ) in recipe
    assert "--out docs/results.md --readme README.md" in recipe


def fresh_count_variable(family: str) -> str:
    """The variable that sizes a family's fresh draw apart from its shipped one."""
    return count_variable(family).removesuffix("_COUNT") + "_FRESH_COUNT"


def sweep_lines(*variables: str) -> list[str]:
    """The `tas sweep` commands `make -n compare` would run with these variables, one a line."""
    ran = subprocess.run(
        ["make", "-n", "compare", *variables], cwd=ROOT, capture_output=True, text=True, check=True
    )
    said = ran.stdout.replace("\\\n", " ")
    return [line for line in said.splitlines() if "tas sweep " in line]


def drawn_counts(*variables: str) -> dict[str, int]:
    """Each sweep `make -n compare` would run, by its output folder: how many scenarios."""
    return {
        out.group(1): int(count.group(1))
        for line in sweep_lines(*variables)
        if (out := re.search(r"--out comparison/(\S+)", line))
        and (count := re.search(r"--count (\d+)", line))
    }


def test_a_fresh_draw_is_as_large_as_its_shipped_one_unless_sized_apart() -> None:
    # The record's shape (docs/decisions.md, "make compare's size"): one command reproduces it.
    assert drawn_counts() == {
        f"sweep-{family}{fresh}": count
        for family, count in FULL_SWEEP_COUNTS.items()
        for fresh in ("", FRESH)
    }
    record = drawn_counts("DEFAULT_COUNT=320", f"{fresh_count_variable('large-slow')}=200")
    assert record == {
        "sweep-default": 320,
        f"sweep-default{FRESH}": 320,
        "sweep-large-slow": FULL_SWEEP_COUNTS["large-slow"],
        f"sweep-large-slow{FRESH}": 200,
    }


def test_make_compare_carries_each_sweep_over_from_its_namesake_only_when_asked() -> None:
    carried = sweep_lines("CARRY_OVER=earlier")
    assert len(carried) == 2 * len(FULL_SWEEP_COUNTS)
    for line in carried:
        out = re.search(r"--out comparison/(\S+)", line)
        assert out
        assert line.split()[-2:] == ["--carry-over", f"earlier/{out.group(1)}"]
    assert not any("--carry-over" in line for line in sweep_lines())


def test_a_sweep_run_in_another_checkout_names_its_family_from_the_checkouts_root(
    tmp_path: Path,
) -> None:
    """A sweep run from another checkout (a worktree frozen at the code it measures) names its
    shipped family as a reader finds it here, not by that machine's path."""
    from tas_simulator.results_doc import _family

    scenarios = tmp_path / "sweep-default" / "scenarios"
    scenarios.mkdir(parents=True)
    (scenarios / "default-0000.yaml").write_text(
        "# Drawn from /elsewhere/frozen/scenarios/families/default.yaml, scenario 0.\nname: x\n",
        encoding="utf-8",
    )
    assert _family(tmp_path / "sweep-default") == "scenarios/families/default.yaml"
    (scenarios / "default-0000.yaml").write_text(
        "# Drawn from /home/me/my-family.yaml, scenario 0.\nname: x\n", encoding="utf-8"
    )
    assert _family(tmp_path / "sweep-default") == "/home/me/my-family.yaml"


def test_make_compare_puts_back_the_records_sweeps_at_this_code_before_it_sweeps() -> None:
    """A clone resumes the record where it stopped (tas_simulator/record.py): the restore comes
    before the first sweep, and only for runs at this code (a resume, never a carry-over)."""
    ran = subprocess.run(
        ["make", "-n", "compare"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    lines = ran.stdout.splitlines()
    restore = next(i for i, line in enumerate(lines) if "tas_simulator.record restore" in line)
    assert "--if-same-code" in lines[restore]
    assert restore < next(i for i, line in enumerate(lines) if "tas sweep " in line)
    made = subprocess.run(
        ["make", "-n", "record"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    # Under make test, make -n says which directory it enters: the recipe is one of its lines.
    assert any(line.endswith("-m tas_simulator.record save") for line in made.stdout.splitlines())
