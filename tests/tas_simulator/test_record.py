"""The comparison record (tas_simulator/record.py): a sweep saved into `record/` in one clone
resumes in another without running again; runs at other code are neither saved nor restored
for a resume; a restore never writes over a journal; nothing to save is a clear error."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tas_cli.main import main
from tas_simulator import record
from tas_simulator.sweep import JOURNAL


def _sweep(out: Path) -> int:
    return main(
        ["sweep", "--count", "2", "--seeds", "2", "--contenders", "requests",
         "--workers", "1", "--out", str(out)]
    )  # fmt: skip


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A comparison folder with one finished sweep, as make compare leaves it."""
    comparison = tmp_path_factory.mktemp("clone-a") / "comparison"
    assert _sweep(comparison / "sweep-default") == 0
    (comparison / "commit.txt").write_text("abc1234\n")
    return comparison


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_a_saved_sweep_resumes_in_another_clone_without_a_run(ran: Path, tmp_path: Path) -> None:
    saved = record.save(ran, tmp_path / "record")
    assert saved == [record.Packed("sweep-default", len(_lines(ran / "sweep-default" / JOURNAL)))]
    assert (tmp_path / "record" / "commit.txt").read_text() == "abc1234\n"

    elsewhere = tmp_path / "clone-b" / "comparison"
    restored = record.restore(tmp_path / "record", elsewhere, if_same_code=True)
    assert restored == saved
    assert (elsewhere / "commit.txt").read_text() == "abc1234\n"
    # The drawn scenarios' first line names the folder they were drawn in: the runs are still
    # the same runs here, so the sweep reuses every one (a run would append to the journal).
    journal = elsewhere / "sweep-default" / JOURNAL
    before = _lines(journal)
    assert _sweep(elsewhere / "sweep-default") == 0
    assert _lines(journal) == before
    assert (elsewhere / "sweep-default" / "sweep.json").read_bytes() == (
        ran / "sweep-default" / "sweep.json"
    ).read_bytes()


def test_saving_the_same_runs_twice_gives_the_same_bytes(ran: Path, tmp_path: Path) -> None:
    record.save(ran, tmp_path / "one")
    record.save(ran, tmp_path / "two")
    for name in (record.JOURNAL_GZ, record.SCENARIOS_GZ):
        one = tmp_path / "one" / "sweep-default" / name
        assert one.read_bytes() == (tmp_path / "two" / "sweep-default" / name).read_bytes()


def _at_other_code(ran: Path, to: Path) -> Path:
    """`ran`'s sweep as another code would have journaled it: every key differs."""
    (to / "sweep-default").mkdir(parents=True)
    (to / "sweep-default" / "scenarios").symlink_to(ran / "sweep-default" / "scenarios")
    entries = [json.loads(line) for line in _lines(ran / "sweep-default" / JOURNAL)]
    for entry in entries:
        entry["key"] = entry["key"][::-1]
    (to / "sweep-default" / JOURNAL).write_text("".join(json.dumps(e) + "\n" for e in entries))
    return to


def test_runs_at_other_code_are_not_saved(ran: Path, tmp_path: Path) -> None:
    other = _at_other_code(ran, tmp_path / "other")
    with pytest.raises(record.RecordError, match="save from the checkout that ran them"):
        record.save(other, tmp_path / "record")
    # Mixed with runs at this code: only those are kept.
    mixed = (ran / "sweep-default" / JOURNAL).read_text()
    (other / "sweep-default" / JOURNAL).write_text(
        (other / "sweep-default" / JOURNAL).read_text() + mixed + '{"torn'
    )
    record.save(other, tmp_path / "record")
    packed = tmp_path / "record" / "sweep-default" / record.JOURNAL_GZ
    assert gzip.decompress(packed.read_bytes()).decode() == mixed


def test_a_record_at_other_code_is_not_restored_for_a_resume(ran: Path, tmp_path: Path) -> None:
    record.save(ran, tmp_path / "record")
    packed = tmp_path / "record" / "sweep-default" / record.JOURNAL_GZ
    entries = [json.loads(line) for line in gzip.decompress(packed.read_bytes()).splitlines()]
    for entry in entries:
        entry["key"] = entry["key"][::-1]
    packed.write_bytes(gzip.compress("".join(json.dumps(e) + "\n" for e in entries).encode()))

    assert record.restore(tmp_path / "record", tmp_path / "resume", if_same_code=True) == []
    assert not (tmp_path / "resume" / "sweep-default" / JOURNAL).exists()
    # Restored to carry over from, it is put back as it is.
    carried = record.restore(tmp_path / "record", tmp_path / "earlier")
    assert carried == [record.Packed("sweep-default", len(entries))]
    assert (tmp_path / "earlier" / "sweep-default" / "scenarios" / "default-0000.yaml").is_file()


def test_a_restore_never_writes_over_a_journal(ran: Path, tmp_path: Path) -> None:
    record.save(ran, tmp_path / "record")
    (tmp_path / "here" / "sweep-default").mkdir(parents=True)
    (tmp_path / "here" / "sweep-default" / JOURNAL).write_text("mine\n")
    assert record.restore(tmp_path / "record", tmp_path / "here") == []
    assert (tmp_path / "here" / "sweep-default" / JOURNAL).read_text() == "mine\n"


def test_nothing_to_save_or_restore_is_a_clear_error_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert record.main(["save", str(tmp_path), "--record", str(tmp_path / "r")]) == 2
    assert "no sweep's journal.jsonl here; run make compare first" in capsys.readouterr().err
    assert record.main(["restore", "--record", str(tmp_path), "--to", str(tmp_path / "c")]) == 2
    assert "nothing to restore" in capsys.readouterr().err
    # make compare's resume from a record with no sweep yet (a README alone): every run runs.
    resume = ["restore", "--record", str(tmp_path), "--to", str(tmp_path / "c"), "--if-same-code"]
    assert record.main(resume) == 0
