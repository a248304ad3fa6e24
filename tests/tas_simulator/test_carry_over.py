"""`tas sweep --carry-over EARLIER` (tas_simulator/carry_over.py): an earlier sweep's runs are
taken for the rows this code reproduces on one seed of every scenario, and only those, and only
for scenarios drawn the same; what was carried is said (sweep.json, docs/results.md) and
survives a resume; a folder that is no sweep stops the sweep before it runs anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tas_cli.main import main
from tas_simulator import results_doc
from tas_simulator.sweep import JOURNAL

MADE_UP = 123456.0


def _sweep(out: Path, *extra: str) -> int:
    return main(
        ["sweep", "--count", "3", "--seeds", "2", "--contenders", "requests,tas",
         "--workers", "1", "--out", str(out), *extra]
    )  # fmt: skip


@pytest.fixture(scope="module")
def earlier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("earlier")
    assert _sweep(out) == 0
    return out


def _entries(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / JOURNAL).read_text().splitlines()]


def _seeds(entries: list[dict[str, Any]], scenario: str) -> list[int]:
    return sorted({e["seed"] for e in entries if e["scenario"] == scenario})


def _tampered_copy(earlier: Path, to: Path) -> Path:
    """`earlier` as a sweep at other code would have left it: requests' second seed of
    default-0000 and tas's first (the seed an audit runs) claim a made-up work lost, requests'
    second seed of default-0001 is there twice with different figures, and default-0002 was
    drawn differently."""
    shutil.copytree(earlier, to)
    (to.parent / "commit.txt").write_text("abc1234\n")  # as make compare leaves it
    entries = _entries(to)
    first, second = _seeds(entries, "default-0000")
    for entry in entries:
        if entry["scenario"] == "default-0000" and (entry["contender"], entry["seed"]) in {
            ("requests", second),
            ("tas", first),
        }:
            entry["figures"]["work_lost"]["core_seconds"] = MADE_UP
    # requests' second seed of default-0001 recorded twice, at two codes: which one counted
    # is not known, so it is not carried.
    twice = next(
        e for e in entries
        if (e["scenario"], e["contender"], e["seed"])
        == ("default-0001", "requests", _seeds(entries, "default-0001")[1])
    )  # fmt: skip
    again = json.loads(json.dumps(twice))
    again["figures"]["work_lost"]["core_seconds"] = MADE_UP
    entries.append(again)
    (to / JOURNAL).write_text("".join(json.dumps(e) + "\n" for e in entries))
    drawn = to / "scenarios" / "default-0002.yaml"
    document = yaml.safe_load(drawn.read_text())
    document["description"] += " (drawn otherwise)"
    drawn.write_text(yaml.safe_dump(document))
    return to


def _work_lost(out: Path, scenario: str, contender: str) -> dict[int, float]:
    runs = json.loads((out / "runs.json").read_text())["runs"][scenario][contender]
    return {int(seed): figures["work_lost"]["core_seconds"] for seed, figures in runs.items()}


def test_rows_this_code_reproduces_are_carried_and_a_row_it_does_not_runs_in_full(
    earlier: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _tampered_copy(earlier, tmp_path / "earlier")
    out = tmp_path / "now"
    assert _sweep(out, "--carry-over", str(source)) == 0
    said = capsys.readouterr().err
    assert f"carrying over from {source}: every row runs first" in said
    assert "carried over from earlier at commit abc1234 (runs per row; 0: ran in full" in said

    # requests reproduced its audited seed everywhere, so its other seed was taken, not run:
    # the made-up figure shows, which is what a carried run is (the audit is the only check).
    second = _seeds(_entries(earlier), "default-0000")[1]
    assert _work_lost(out, "default-0000", "requests")[second] == MADE_UP
    # tas's audit differed: every run of it ran at this code, none of the made-up ones shows.
    assert _work_lost(out, "default-0000", "tas") == _work_lost(earlier, "default-0000", "tas")
    # default-0002 was drawn otherwise there: nothing of it carried.
    verdict = json.loads((out / "sweep.json").read_text())
    assert verdict["carried_over"] == {
        "from": ["earlier at commit abc1234"],
        # Per row, the second seed of default-0000 and default-0001 (requests': not that of
        # default-0001, recorded twice); tas ran in full.
        "runs": {"requests": 1, "tas": 0, "limit": 2, "hindsight": 2, "clairvoyant": 2},
    }
    carried = [e for e in _entries(out) if e.get("carried_from")]
    assert {e["carried_from"] for e in carried} == {"earlier at commit abc1234"}
    assert {(e["scenario"], e["seed"]) for e in carried} == {
        ("default-0000", second),
        ("default-0001", _seeds(_entries(earlier), "default-0001")[1]),
    }
    twice = _seeds(_entries(earlier), "default-0001")[1]
    assert (
        _work_lost(out, "default-0001", "requests")[twice]
        == (_work_lost(earlier, "default-0001", "requests")[twice])
    )

    # docs/results.md says it under the draw's first line.
    said = results_doc.carried_over(verdict)
    assert "(earlier at commit abc1234)" in said
    assert "runs carried: clairvoyant 2, hindsight 2, limit 2, requests 1" in said
    assert said.endswith("Ran in full on this commit: tas.")

    # Resumed without --carry-over, the carried runs are kept and still said to be carried.
    before = (out / "sweep.json").read_bytes()
    assert _sweep(out) == 0
    assert (out / "sweep.json").read_bytes() == before


def test_a_sweep_with_nothing_carried_says_nothing_of_it(earlier: Path) -> None:
    verdict = json.loads((earlier / "sweep.json").read_text())
    assert "carried_over" not in verdict
    assert results_doc.carried_over(verdict) == ""


def test_carrying_over_from_a_folder_that_is_no_sweep_stops_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _sweep(tmp_path / "now", "--carry-over", str(tmp_path / "nowhere")) == 2
    assert "no journal.jsonl here" in capsys.readouterr().err
    assert not (tmp_path / "now" / JOURNAL).exists()
