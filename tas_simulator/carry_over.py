"""Runs carried over from an earlier sweep, for the rows this code still reproduces.

A sweep's journal reuses a run only for the same code (`tas_simulator.journal`), and every
contender runs through the same runner and descheduler: a change to ours alone runs the
baselines again too. The full record (`make compare` at the counts docs/decisions.md names) is
about ten hours on two cores, most of it baselines whose figures such a change does not move.

`tas sweep --carry-over DIR` takes the runs of an earlier sweep (DIR's journal and saved
scenarios) without running them again, row by row, and only where this code gives them again:
- each row first runs at this code on one seed of every scenario the earlier sweep has (the
  audit, journaled like any run);
- a row is carried only when every audited run's figures equal the earlier run's to the last
  bit; one difference, and the row runs in full;
- only scenarios whose saved document is the same as this sweep's draw are carried, and no run
  the earlier journal holds twice with different figures (resumed at other code).
A carried run is journaled with where it came from (`carried_from`: the folder's name and, where
`make compare`'s commit.txt says, the commit) and the verdict counts them per row
(`carried_over`), so a reader knows which figures were made at this code.

The audit catches a change that moves a row anywhere it acts in a scenario, as a rail for a
failing pipeline moves ours only in the scenarios where a source fails. It would miss a change
that moves a row on some seeds of a scenario and not on the audited one: that is the risk a
carried-over record takes, which is why the verdict says it was carried, and from where.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tas_simulator.jobs import Job, JobResult
from tas_simulator.journal import JOURNAL_FILE, Journal, read_entries
from tas_simulator.scenario import Scenario

log = logging.getLogger(__name__)

#: Runs a batch of jobs and returns their results in the same order (`tas_simulator.sweep`).
RunBatch = Callable[[Sequence[Job]], list[JobResult]]


class CarryOverError(Exception):
    """The earlier sweep cannot be read: no journal, or not a sweep's folder."""


@dataclass(frozen=True)
class EarlierSweep:
    """An earlier sweep's finished runs, by scenario, row and seed, for the scenarios it drew
    exactly as this sweep does."""

    folder: Path
    runs: dict[tuple[str, str, int], JobResult]
    #: The commit it ran on, where its comparison folder says (`make compare`'s commit.txt).
    commit: str = ""

    @property
    def label(self) -> str:
        """How a carried run says where it came from: the folder's name and its commit, not
        this machine's path to it."""
        return f"{self.folder.name} at commit {self.commit}" if self.commit else self.folder.name

    def run_of(self, job: Job) -> JobResult | None:
        return self.runs.get((job.scenario.name, job.contender, job.seed))


def read_earlier_sweep(folder: Path, scenarios: Sequence[Scenario]) -> EarlierSweep:
    """The runs `folder`'s journal holds for those of `scenarios` it saved as the same
    document (a saved file's first comment names the path it was drawn from, so the documents
    are compared, not the bytes)."""
    journal = folder / JOURNAL_FILE
    if not journal.is_file():
        raise CarryOverError(
            f"{folder}: no {JOURNAL_FILE} here; carry over from an earlier `tas sweep --out` folder"
        )
    same = {scenario.name for scenario in scenarios if _same_document(folder, scenario)}
    differing = len(scenarios) - len(same)
    if differing:
        log.warning(
            "%s: %d of %d scenarios are not drawn the same there; their runs are not carried",
            folder,
            differing,
            len(scenarios),
        )
    runs: dict[tuple[str, str, int], JobResult] = {}
    ambiguous: set[tuple[str, str, int]] = set()
    for result in read_entries(journal):
        if result.scenario not in same:
            continue
        key = (result.scenario, result.contender, result.seed)
        if key in runs and not _same_figures(runs[key], result):
            # A journal resumed at other code holds the run twice: which one its verdict
            # used is not known, so neither is carried (the run runs).
            ambiguous.add(key)
        runs[key] = result
    for key in ambiguous:
        del runs[key]
    if ambiguous:
        log.warning(
            "%s: %d runs recorded twice with other figures are not carried", folder, len(ambiguous)
        )
    return EarlierSweep(folder, runs, _commit(folder))


def _commit(folder: Path) -> str:
    """The commit in the sweep's own commit.txt, or its comparison folder's (`make compare`)."""
    for path in (folder / "commit.txt", folder.parent / "commit.txt"):
        if path.is_file():
            return path.read_text(encoding="utf-8").strip()
    return ""


def _same_document(folder: Path, scenario: Scenario) -> bool:
    earlier = folder / "scenarios" / f"{scenario.name}.yaml"
    if not earlier.is_file() or not scenario.source:
        return False
    try:
        return bool(_document(earlier) == _document(Path(scenario.source)))
    except (OSError, yaml.YAMLError):
        return False


def _document(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def carry_over(jobs: Sequence[Job], earlier: EarlierSweep, journal: Journal, run: RunBatch) -> None:
    """Audit each row on one seed of every scenario, then journal the earlier runs of every
    row the audit reproduced as carried."""
    audit = _audit_jobs(jobs, earlier)
    reproduced: dict[str, bool] = {}
    for job, result in zip(audit, run(audit), strict=True):
        was = earlier.run_of(job)
        same = was is not None and _same_figures(result, was)
        reproduced[job.contender] = reproduced.get(job.contender, True) and same
        if not same:
            log.warning(
                "carry-over: %s differs from %s on %s, seed %d: it runs in full",
                job.contender,
                earlier.folder,
                job.scenario.name,
                job.seed,
            )
    for job in jobs:
        was = earlier.run_of(job)
        if reproduced.get(job.contender) and was is not None and journal.known(job) is None:
            journal.carry(job, was, source=earlier.label)


def _audit_jobs(jobs: Sequence[Job], earlier: EarlierSweep) -> list[Job]:
    """Per scenario and row, the first job (its lowest seed) the earlier sweep ran."""
    audit: dict[tuple[str, str], Job] = {}
    for job in jobs:
        if earlier.run_of(job) is None:
            continue
        key = (job.scenario.name, job.contender)
        if key not in audit or job.seed < audit[key].seed:
            audit[key] = job
    return list(audit.values())


def _same_figures(now: JobResult, then: JobResult) -> bool:
    """The same figures to the last bit (a JSON round trip keeps every float's bits), or the
    same reason the row could not run."""
    return _canonical(now) == _canonical(then)


def _canonical(result: JobResult) -> str:
    return json.dumps([result.figures, result.unavailable], sort_keys=True)
