"""A sweep's journal: every finished run, written as it finishes, so an interrupted sweep
resumes where it stopped.

`make compare` runs for hours; a reboot, a kill or the end of a working day should not throw
those hours away. A run is deterministic (same code, scenario, contender and seed: same
figures, `tas_simulator.jobs`), so a finished run is reused exactly when all four are the same:
each line carries a key over them, and the code is every source and data file of the
project's packages but the simulator's modules no run imports (`code_digest`). Change one
line of what a run runs and nothing is reused; change how a sweep is judged or printed and
every run is; draw a different scenario under the same name and that scenario's runs are not.

One JSON object per line, appended and flushed as each run ends: a run killed mid-line leaves
a last line that does not parse, which is dropped on the next read (that run runs again). A run
carried over from an earlier sweep (`tas_simulator.carry_over`) says where from
(`carried_from`): it is reused like the rest, and the sweep's verdict counts it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tas_simulator.jobs import Job, JobResult

log = logging.getLogger(__name__)

#: A sweep's journal, in its folder.
JOURNAL_FILE = "journal.jsonl"

#: The packages whose code decides a run's figures (the project's own: `pyproject.toml`'s
#: `packages.find`, less the command line, the dashboard and the benchmarks).
_PACKAGES = (
    "tas_simulator",
    "tas_inmemory",
    "tas",
    "tas_herd",
    "tas_replay",
    "extender",
    "policy_controller",
    "descheduler",
    "tas_explain",
)
_SUFFIXES = (".py", ".yaml", ".yml", ".json")
#: The simulator's modules that judge, report or journal runs, which no run imports: an
#: import-linter contract in pyproject.toml forbids `tas_simulator.jobs` to import them, directly
#: or not. Left out of the digest so that mending how a sweep is judged or printed keeps the
#: hours of runs it judges.
NOT_IN_A_RUN = (
    "carry_over",
    "charts",
    "goals",
    "journal",
    "live",
    "paired",
    "record",
    "report",
    "results_doc",
    "seeds",
    "stats",
    "sweep",
)
_ROOT = Path(__file__).resolve().parent.parent


@cache
def code_digest() -> str:
    """The digest of this checkout's code that may decide a run (`digest_of_code`)."""
    return digest_of_code(_ROOT)


def digest_of_code(root: Path) -> str:
    """A digest of every source and data file of the packages under `root` that may decide a
    run: all of them but the simulator's modules `NOT_IN_A_RUN`."""
    left_out = {root / "tas_simulator" / f"{module}.py" for module in NOT_IN_A_RUN}
    digest = hashlib.sha256()
    for package in _PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path in left_out:
                continue
            if path.suffix in _SUFFIXES and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode())
                digest.update(b"\0")
                digest.update(path.read_bytes())
                digest.update(b"\0")
    return digest.hexdigest()


def _scenario_digest(source: str) -> bytes:
    """The saved scenario's document, digested once per version of the file (a sweep asks for
    each of its runs)."""
    if not source:
        return hashlib.sha256(b"").digest()
    stat = Path(source).stat()
    return _document_digest(source, stat.st_mtime_ns, stat.st_size)


@cache
def _document_digest(source: str, mtime_ns: int, size: int) -> bytes:
    """The document, not the text: a drawn scenario's first line is a comment naming the
    folder it was drawn in, and a run made in one clone is the same run in another (a journal
    moves between them: `tas_simulator.record`)."""
    document = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).digest()


def job_key(job: Job, code: str) -> str:
    """What decides the run's figures: the code, the scenario's saved document, contender,
    seed."""
    return run_key(code, job.scenario.source, job.contender, job.seed)


def run_key(code: str, scenario_file: str, contender: str, seed: int) -> str:
    """`job_key` of the run of `contender` on the scenario saved in `scenario_file`."""
    digest = hashlib.sha256()
    digest.update(hashlib.sha256(code.encode()).digest())
    digest.update(_scenario_digest(scenario_file))
    for part in (contender.encode(), str(seed).encode()):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


class Journal:
    """The runs finished so far in `path`, reused for jobs with the same key."""

    def __init__(self, path: Path, *, code: str | None = None) -> None:
        self.path = path
        self.code = code if code is not None else code_digest()
        self._found: dict[str, JobResult] = {}
        #: The keys of runs carried over from an earlier sweep, and where from.
        self._carried: dict[str, str] = {}
        if path.exists():
            self._read()

    def _read(self) -> None:
        text = self.path.read_text(encoding="utf-8")
        whole = []
        for line in text.splitlines(keepends=True):
            entry = _entry(line)
            if entry is None:
                continue
            key, result, carried_from = entry
            self._found[key] = result
            if carried_from:
                self._carried[key] = carried_from
            whole.append(line if line.endswith("\n") else line + "\n")
        if "".join(whole) != text:
            # A torn last line (or worse) is dropped, so what is appended next starts a line.
            log.warning(
                "%s: %d unreadable line(s) dropped; those runs run again",
                self.path,
                text.count("\n") + (not text.endswith("\n")) - len(whole),
            )
            self.path.write_text("".join(whole), encoding="utf-8")

    def known(self, job: Job) -> JobResult | None:
        """The journal's result for this job, if one with the same key finished."""
        return self._found.get(job_key(job, self.code))

    def carried_from(self, job: Job) -> str:
        """Where this job's run was carried over from (`tas_simulator.carry_over`), or ""."""
        return self._carried.get(job_key(job, self.code), "")

    def record(self, job: Job, result: JobResult) -> None:
        """Append the finished run (without its series: a sweep keeps only figures)."""
        self._append(job, result, carried_from="")

    def carry(self, job: Job, result: JobResult, *, source: str) -> None:
        """Append a run of an earlier sweep this code reproduces, saying where it came from."""
        self._append(job, result, carried_from=source)

    def _append(self, job: Job, result: JobResult, *, carried_from: str) -> None:
        key = job_key(job, self.code)
        entry: dict[str, Any] = {
            "key": key,
            "scenario": result.scenario,
            "contender": result.contender,
            "seed": result.seed,
            "figures": result.figures,
            "unavailable": result.unavailable,
        }
        if carried_from:
            entry["carried_from"] = carried_from
            self._carried[key] = carried_from
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry, sort_keys=True) + "\n")
            out.flush()
        self._found[key] = JobResult(
            result.scenario, result.contender, result.seed, result.figures, result.unavailable
        )


def read_entries(path: Path) -> list[JobResult]:
    """Every whole run `path` holds, whatever code made it (an unreadable line is skipped)."""
    entries = (_entry(line) for line in path.read_text(encoding="utf-8").splitlines())
    return [entry[1] for entry in entries if entry is not None]


def _entry(line: str) -> tuple[str, JobResult, str] | None:
    """A journal line's key, run and where it was carried from; None if it does not parse."""
    try:
        entry = json.loads(line)
        result = JobResult(
            entry["scenario"],
            entry["contender"],
            int(entry["seed"]),
            entry["figures"],
            entry.get("unavailable", ""),
        )
        return str(entry["key"]), result, str(entry.get("carried_from", ""))
    except (ValueError, KeyError, TypeError):
        return None
