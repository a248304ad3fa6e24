"""The comparison record, kept in the repository: `make compare`'s runs, packed small.

The full record (docs/decisions.md, "make compare's size") takes about ten hours on two cores,
a working session three, and a machine's `/tmp` does not outlive its session. So `record/`
holds what a comparison folder ran, for the next session (or anyone) to take up:
- each sweep's journal (`journal.jsonl.gz`: the runs at the code that made them, partial or
  whole) and its drawn scenarios (`scenarios.json.gz`: name to saved text);
- the named scenarios' summary (`simulate/summary.json.gz`), where it was run;
- `commit.txt`, the commit the runs were made at (`make compare`'s).

`python -m tas_simulator.record save [COMPARISON]` packs a comparison folder (`make record`);
only the runs made at this checkout's run code are kept, so save from the checkout that ran
them. `python -m tas_simulator.record restore [--to DIR] [--if-same-code]` puts it back: each
sweep's journal and scenarios, and the summary, into DIR (default `comparison/`), never over a
journal DIR already has. `make compare` restores with `--if-same-code`, so a sweep resumes
where the record stopped while the run code is the same (`tas_simulator.journal`); after a
change to run code, restore into a folder of its own and carry over from it
(`make compare CARRY_OVER=DIR`, `tas_simulator.carry_over`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from tas_simulator.journal import JOURNAL_FILE, code_digest, run_key

log = logging.getLogger(__name__)

#: Where `make record` keeps the record, and where `make compare` writes its outputs.
RECORD = Path("record")
COMPARISON = Path("comparison")
#: The record's files, per sweep and for the named scenarios.
JOURNAL_GZ = "journal.jsonl.gz"
SCENARIOS_GZ = "scenarios.json.gz"
SUMMARY = Path("simulate") / "summary.json"
COMMIT = "commit.txt"


class RecordError(Exception):
    """Nothing to save or restore, or runs at other code than this checkout's."""


@dataclass(frozen=True)
class Packed:
    """One sweep packed or put back: its folder's name and how many runs."""

    sweep: str
    runs: int


def save(comparison: Path, record: Path) -> list[Packed]:
    """Pack every sweep of `comparison` (and its named scenarios' summary) into `record`,
    replacing what the record held: the runs made at this checkout's run code."""
    sweeps = sorted(p.parent for p in comparison.glob(f"*/{JOURNAL_FILE}"))
    if not sweeps:
        raise RecordError(f"{comparison}: no sweep's {JOURNAL_FILE} here; run make compare first")
    packed = [(folder.name, *_current_runs(folder)) for folder in sweeps]
    stale = [name for name, lines, total in packed if total and not lines]
    if stale:
        raise RecordError(
            f"{', '.join(stale)}: none of the runs is at this checkout's run code; save from "
            "the checkout that ran them"
        )
    record.mkdir(parents=True, exist_ok=True)
    names = {name for name, _, _ in packed}
    for old in record.glob(f"*/{JOURNAL_GZ}"):
        if old.parent.name not in names:  # a sweep no longer in the comparison
            for part in (JOURNAL_GZ, SCENARIOS_GZ):
                (old.parent / part).unlink(missing_ok=True)
    done = []
    for name, lines, total in packed:
        into = record / name
        into.mkdir(exist_ok=True)
        _write_gz(into / JOURNAL_GZ, "".join(lines))
        _write_gz(into / SCENARIOS_GZ, json.dumps(_scenario_texts(comparison / name), indent=0))
        if len(lines) < total:
            log.warning("%s: %d runs at other code left out", name, total - len(lines))
        done.append(Packed(name, len(lines)))
    summary = comparison / SUMMARY
    if summary.is_file():
        (record / SUMMARY.parent).mkdir(exist_ok=True)
        _write_gz(record / f"{SUMMARY}.gz", summary.read_text(encoding="utf-8"))
    commit = comparison / COMMIT
    if commit.is_file():
        (record / COMMIT).write_text(commit.read_text(encoding="utf-8"), encoding="utf-8")
    return done


def restore(record: Path, into: Path, *, if_same_code: bool = False) -> list[Packed]:
    """Put the record's sweeps back into `into`, each where `into` has no journal for it yet;
    with `if_same_code`, only a sweep whose runs are at this checkout's run code (the others
    are said, and left: carry them over instead)."""
    packed = sorted(p.parent for p in record.glob(f"*/{JOURNAL_GZ}"))
    if not packed and if_same_code:
        log.info("%s: no sweep recorded yet; every run runs", record)
        return []  # make compare's resume: nothing to resume is no error
    if not packed:
        raise RecordError(f"{record}: no sweep's {JOURNAL_GZ} here; nothing to restore")
    done = []
    for folder in packed:
        target = into / folder.name
        if (target / JOURNAL_FILE).exists():
            log.warning("%s: has a journal already; the record's is not put over it", target)
            continue
        texts: dict[str, str] = json.loads(_read_gz(folder / SCENARIOS_GZ))
        journal = _read_gz(folder / JOURNAL_GZ)
        (target / "scenarios").mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            (target / "scenarios" / f"{name}.yaml").write_text(text, encoding="utf-8")
        (target / JOURNAL_FILE).write_text(journal, encoding="utf-8")
        if if_same_code and not _current_runs(target)[0]:
            (target / JOURNAL_FILE).unlink()
            log.warning(
                "%s: the record's runs are at other run code than this checkout's, not restored "
                "(restore --to DIR, then make compare CARRY_OVER=DIR)",
                folder.name,
            )
            continue
        done.append(Packed(folder.name, journal.count("\n")))
    summary = record / f"{SUMMARY}.gz"
    if summary.is_file() and not (into / SUMMARY).exists() and (done or not if_same_code):
        (into / SUMMARY.parent).mkdir(parents=True, exist_ok=True)
        (into / SUMMARY).write_text(_read_gz(summary), encoding="utf-8")
    commit = record / COMMIT
    if commit.is_file() and not (into / COMMIT).exists() and done:
        (into / COMMIT).write_text(commit.read_text(encoding="utf-8"), encoding="utf-8")
    return done


def _current_runs(folder: Path) -> tuple[list[str], int]:
    """The journal's lines whose run is at this checkout's run code (the key made again from
    the line's scenario, contender and seed), and how many lines it has."""
    code = code_digest()
    lines = (folder / JOURNAL_FILE).read_text(encoding="utf-8").splitlines(keepends=True)
    current = []
    for line in lines:
        try:
            entry = json.loads(line)
            scenario = folder / "scenarios" / f"{entry['scenario']}.yaml"
            key = run_key(code, str(scenario), entry["contender"], int(entry["seed"]))
        except (ValueError, KeyError, TypeError, OSError, yaml.YAMLError):
            continue  # a torn line, or a run of a scenario not saved here: not kept
        if entry.get("key") == key:
            current.append(line if line.endswith("\n") else line + "\n")
    return current, len(lines)


def _scenario_texts(folder: Path) -> dict[str, str]:
    return {
        path.stem: path.read_text(encoding="utf-8")
        for path in sorted((folder / "scenarios").glob("*.yaml"))
    }


def _write_gz(path: Path, text: str) -> None:
    # mtime 0: the same runs pack to the same bytes, so git sees no change where there is none.
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(text.encode("utf-8"))


def _read_gz(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode("utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tas_simulator.record",
        description="Pack a comparison folder into record/ (save), or put it back (restore).",
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    packing = verbs.add_parser("save", help="pack a comparison folder into the record")
    packing.add_argument("comparison", nargs="?", type=Path, default=COMPARISON)
    packing.add_argument("--record", type=Path, default=RECORD)
    putting = verbs.add_parser("restore", help="put the record back into a comparison folder")
    putting.add_argument("--record", type=Path, default=RECORD)
    putting.add_argument("--to", type=Path, default=COMPARISON, dest="into")
    putting.add_argument(
        "--if-same-code",
        action="store_true",
        help="only sweeps whose runs are at this checkout's run code (make compare's resume)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        if args.verb == "save":
            done = save(args.comparison, args.record)
            verb, where = "saved", args.record
        else:
            done = restore(args.record, args.into, if_same_code=args.if_same_code)
            verb, where = "restored", args.into
    except RecordError as err:
        print(f"record: {err}", file=sys.stderr)
        return 2
    for packed in done:
        print(f"{verb} {packed.sweep}: {packed.runs} runs ({where / packed.sweep})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
