"""`tas sweep-diff`: one contender on two sweeps of the same runs, paired by seed.

Covered: totals over every run and the share they changed; a scenario moved "clearly" only
when the interval of its per-seed differences lies wholly on one side of zero (a consistent
drop is lower, a noisy one is not, one seed claims nothing); untouched scenarios are told from
touched ones; sweeps that do not hold the same scenarios, seeds or contender are refused with
every mismatch listed; and the command as a user runs it, on two sweep folders, including
folders whose drawn scenarios differ behind the same names.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas_simulator.paired import UnpairedError, pair_sweeps, table
from tests.processes import tas_command


def figures(lost: float, *, stall: float = 100.0, placed: int = 0, evicted: int = 0) -> Any:
    return {
        "work_lost": {"core_seconds": lost},
        "stall": stall,
        "violating_placements": placed,
        "evictions": {"total": evicted},
    }


def runs(**scenarios: dict[str, Any]) -> dict[str, Any]:
    """A runs.json: each scenario's `ours` figures by seed, and an untouched `requests`."""
    return {
        "runs": {
            name: {"ours": seeded, "requests": {seed: figures(50.0) for seed in seeded}}
            for name, seeded in scenarios.items()
        }
    }


BEFORE = runs(
    a={"1": figures(10.0), "2": figures(12.0), "3": figures(11.0)},
    b={"1": figures(20.0, evicted=2), "2": figures(20.0, evicted=2), "3": figures(20.0)},
)


def by_name(paired: Any) -> dict[str, Any]:
    return {diff.name: diff for diff in paired.figures}


def test_identical_sweeps_differ_nowhere() -> None:
    paired = pair_sweeps(BEFORE, copy.deepcopy(BEFORE), contender="ours")
    assert paired.differ == ()
    assert (paired.scenarios, paired.seeds) == (2, 3)
    assert all(not d.lower and not d.higher and d.after == d.before for d in paired.figures)


def test_a_consistent_drop_is_clearly_lower_and_the_totals_say_by_how_much() -> None:
    after = copy.deepcopy(BEFORE)
    for seed, lost in (("1", 7.0), ("2", 9.0), ("3", 8.0)):  # 3 less on every seed
        after["runs"]["a"]["ours"][seed] = figures(lost)
    lost = by_name(pair_sweeps(BEFORE, after, contender="ours"))["work lost"]
    assert (lost.before, lost.after) == (93.0, 84.0)
    assert lost.change == pytest.approx(84 / 93 - 1)
    assert [m.scenario for m in lost.lower] == ["a"]
    assert (lost.lower[0].before, lost.lower[0].after) == (11.0, 8.0)
    assert lost.higher == []


def test_a_noisy_difference_is_not_a_clear_one() -> None:
    after = copy.deepcopy(BEFORE)
    after["runs"]["a"]["ours"]["1"] = figures(4.0)  # -6 on one seed
    after["runs"]["a"]["ours"]["2"] = figures(13.0)  # +1 on another
    paired = pair_sweeps(BEFORE, after, contender="ours")
    assert paired.differ == ("a",)
    assert not by_name(paired)["work lost"].lower


def test_a_rise_on_a_cost_is_clearly_higher() -> None:
    after = copy.deepcopy(BEFORE)
    for seed in ("1", "2", "3"):
        after["runs"]["b"]["ours"][seed]["evictions"]["total"] += 4
    evictions = by_name(pair_sweeps(BEFORE, after, contender="ours"))["evictions"]
    assert [m.scenario for m in evictions.higher] == ["b"]
    assert "evictions clearly higher: b (1.333 -> 5.333)" in table(
        pair_sweeps(BEFORE, after, contender="ours")
    )


def test_one_seed_claims_nothing_clear() -> None:
    before = runs(a={"1": figures(10.0)})
    after = runs(a={"1": figures(1.0)})
    paired = pair_sweeps(before, after, contender="ours")
    assert paired.differ == ("a",)
    assert not by_name(paired)["work lost"].lower
    assert "no scenario is said to move clearly" in table(paired)


@pytest.mark.parametrize(
    ("after", "problem"),
    [
        pytest.param(
            runs(a=BEFORE["runs"]["a"]["ours"]), "scenarios in one sweep only: b", id="scenarios"
        ),
        pytest.param(
            runs(a=BEFORE["runs"]["a"]["ours"], b={"1": figures(1.0)}),
            "b: different seeds",
            id="seeds",
        ),
        pytest.param({"runs": {"a": {}, "b": {}}}, "a: ours did not run in both", id="contender"),
        pytest.param(
            runs(a=BEFORE["runs"]["a"]["ours"], b={s: {"unavailable": "x"} for s in "123"}),
            "b: a run of ours has no figures",
            id="unavailable",
        ),
        pytest.param({"verdict": {}}, "after: no 'runs' mapping", id="not-runs"),
    ],
)
def test_sweeps_that_do_not_hold_the_same_runs_are_refused(after: Any, problem: str) -> None:
    with pytest.raises(UnpairedError) as raised:
        pair_sweeps(BEFORE, after, contender="ours")
    assert any(problem in said for said in raised.value.problems), raised.value.problems


def sweep_folder(root: Path, name: str, document: Any, scenario: str = "nodes: 4\n") -> Path:
    folder = root / name
    (folder / "scenarios").mkdir(parents=True)
    (folder / "runs.json").write_text(json.dumps(document), encoding="utf-8")
    (folder / "scenarios" / "a.yaml").write_text(scenario, encoding="utf-8")
    return folder


def sweep_diff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tas_command("sweep-diff", *args), capture_output=True, text=True, timeout=120, check=False
    )


def test_the_command_prints_what_moved(tmp_path: Path) -> None:
    after = copy.deepcopy(BEFORE)
    for seed in ("1", "2", "3"):
        after["runs"]["a"]["ours"][seed]["work_lost"]["core_seconds"] -= 3
    done = sweep_diff(
        str(sweep_folder(tmp_path, "before", BEFORE)), str(sweep_folder(tmp_path, "after", after))
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "ours, after against before: 2 scenarios x 3 seeds, paired by seed; "
        "1 scenarios differ at all"
    )
    assert lines[2].split() == ["work", "lost", "(core-s)", "93.0", "84.0", "-9.7%", "1", "0"]
    assert "work lost clearly lower: a (11 -> 8)" in lines


def test_the_command_refuses_sweeps_of_other_scenarios_behind_the_same_names(
    tmp_path: Path,
) -> None:
    before = sweep_folder(tmp_path, "before", BEFORE)
    after = sweep_folder(tmp_path, "after", BEFORE, scenario="nodes: 8\n")
    done = sweep_diff(str(before), str(after))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "tas sweep-diff: the two sweeps cannot be paired:",
        "  1 drawn scenarios differ between the sweeps (a.yaml): another family or family seed",
    ]
    assert done.stdout == ""


def test_the_same_drawing_from_another_checkout_pairs(tmp_path: Path) -> None:
    # The header comment names the family file's path, which differs between checkouts.
    before = sweep_folder(tmp_path, "before", BEFORE, "# Drawn from /a/default.yaml\nnodes: 4\n")
    after = sweep_folder(tmp_path, "after", BEFORE, "# Drawn from /b/default.yaml\nnodes: 4\n")
    done = sweep_diff(str(before), str(after))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ours, after against before: 2 scenarios x 3 seeds")


def test_the_command_says_which_folder_has_no_runs(tmp_path: Path) -> None:
    done = sweep_diff(str(sweep_folder(tmp_path, "before", BEFORE)), str(tmp_path / "missing"))
    assert done.returncode == 1
    assert f"{tmp_path / 'missing' / 'runs.json'}: cannot be read" in done.stderr


JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)
FIGURE = st.fixed_dictionaries(
    {
        "work_lost": st.fixed_dictionaries({"core_seconds": st.floats(0, 1e6) | JSON}),
        "stall": st.floats(0, 1e6) | JSON,
        "violating_placements": st.integers(0, 99),
        "evictions": st.fixed_dictionaries({"total": st.integers(0, 99)}) | JSON,
    }
)
RUNS = st.fixed_dictionaries(
    {
        "runs": st.dictionaries(
            st.sampled_from(["a", "b"]),
            st.fixed_dictionaries(
                {"ours": st.dictionaries(st.sampled_from(["1", "2"]), FIGURE | JSON)}
            )
            | JSON,
        )
    }
)


@settings(max_examples=300, deadline=None)
@given(before=RUNS | JSON, after=RUNS | JSON)
def test_any_document_is_paired_or_refused_with_its_problems(before: Any, after: Any) -> None:
    # runs.json is a file a user hands over: whatever it holds, the answer is a comparison or
    # the list of what does not pair, never a traceback.
    try:
        said = table(pair_sweeps(before, after, contender="ours"))
    except UnpairedError as error:
        said = "\n".join(error.problems)
    assert said
