"""Runs as independent jobs: one scenario, one contender, one seed, anywhere.

A run shares nothing with any other (each builds its own world, clock and components), so a
batch of them spreads over a process pool on this machine's cores, or over an existing Dask
distributed cluster when a sweep outgrows one machine. Whatever spreads them, the results
come back in the order the jobs were given: the same inputs give byte-identical output.

How a job reaches a worker: the `Scenario` value itself is pickled (it holds no open files;
trace points are already read), so a worker needs only this package installed, not the
scenario files.
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tas_simulator.figures import Figures, Series
from tas_simulator.scenario import Scenario

#: Called after each finished run with (done, total).
Progress = Callable[[int, int], None]
#: Called with each finished job and its result as it finishes (a sweep's journal).
Record = Callable[["Job", "JobResult"], None]

#: The reference rows of every comparison (issue 23), run as jobs like the contenders but
#: never contenders themselves: `limit`, the fluid bound (`tas_simulator.limit`), and
#: `clairvoyant`, the shipped `ours` reading true values (`run_contender(clairvoyant=True)`);
#: `hindsight`, a placement with no moves that knows every pod's future (`tas_simulator.hindsight`).
LIMIT = "limit"
HINDSIGHT = "hindsight"
CLAIRVOYANT = "clairvoyant"
REFERENCES = (LIMIT, HINDSIGHT, CLAIRVOYANT)
#: The contender the clairvoyant reference runs.
CLAIRVOYANT_OF = "ours"
#: Ours on the scenario with its policies' deschedule strategies taken out
#: (`Scenario.without_deschedule`): what ours would have lost had it not obeyed them. Run by
#: a sweep only where ours lost clearly more than requests (`tas_simulator.sweep.why_worse`).
UNRULED = "ours-no-deschedule"


class DaskUnavailableError(RuntimeError):
    """`--dask` was asked for, but the `distributed` package is not installed."""


@dataclass(frozen=True)
class Job:
    scenario: Scenario
    contender: str
    seed: int
    #: Keep the per-node series and the eviction times (the node chart draws one seed's).
    #: Every job keeps the spread and the evictions over time, one number per sampled step,
    #: so the spread chart can draw their interval over the seeds.
    keep_series: bool = False


@dataclass(frozen=True)
class JobResult:
    scenario: str
    contender: str
    seed: int
    #: None when the contender cannot run this scenario (`unavailable` says why).
    figures: Figures | None
    unavailable: str = ""
    #: None only when unavailable; without `keep_series`, only its `t`, `spread` and `evictions`.
    series: Series | None = None
    eviction_times: tuple[float, ...] = field(default=())


def run_job(job: Job) -> JobResult:
    """One run, start to end. Importable at module level, so process pools and Dask workers
    can call it by reference."""
    from tas_simulator.contenders import Unavailable, resolve
    from tas_simulator.hindsight import hindsight_placement
    from tas_simulator.limit import fluid_limit
    from tas_simulator.runner import run_contender

    if job.contender == LIMIT:
        figures = fluid_limit(job.scenario, seed=job.seed)
        return JobResult(job.scenario.name, job.contender, job.seed, figures)
    if job.contender == HINDSIGHT:
        figures = hindsight_placement(job.scenario, seed=job.seed)
        return JobResult(job.scenario.name, job.contender, job.seed, figures)
    clairvoyant = job.contender == CLAIRVOYANT
    runs = CLAIRVOYANT_OF if job.contender in (CLAIRVOYANT, UNRULED) else job.contender
    scenario = job.scenario.without_deschedule() if job.contender == UNRULED else job.scenario
    resolved = resolve(runs, scenario.contenders.get(runs))
    if isinstance(resolved, Unavailable):
        return JobResult(job.scenario.name, job.contender, job.seed, None, resolved.reason)
    result = run_contender(
        scenario, resolved, seed=job.seed, clairvoyant=clairvoyant, node_series=job.keep_series
    )
    return JobResult(
        job.scenario.name,
        job.contender,
        job.seed,
        result.figures,
        series=result.series if job.keep_series else _spread_only(result.series),
        eviction_times=tuple(result.eviction_times) if job.keep_series else (),
    )


def _spread_only(series: Series) -> Series:
    """What the spread chart needs of a seed: a few thousand numbers, where the per-node
    values are nodes times that."""
    return Series(
        every=series.every,
        t=list(series.t),
        spread=list(series.spread),
        evictions=list(series.evictions),
    )


def default_workers() -> int:
    """Every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def run_jobs(
    jobs: Sequence[Job],
    *,
    workers: int | None = None,
    dask_address: str | None = None,
    log_path: Path | None = None,
    progress: Progress | None = None,
    record: Record | None = None,
) -> list[JobResult]:
    """Every job's result, in the order of `jobs`; `record` is called with each as it ends.

    `workers=1` runs them here, one after another (no pool: the simplest thing to debug);
    more runs a process pool of that size; `dask_address` sends them to that Dask scheduler
    (`tcp://host:8786`) instead."""
    if dask_address:
        return _run_on_dask(jobs, dask_address, progress, record)
    count = workers if workers is not None else default_workers()
    if count <= 1 or len(jobs) <= 1:
        results = []
        for job in jobs:
            results.append(run_job(job))
            if record is not None:
                record(job, results[-1])
            if progress is not None:
                progress(len(results), len(jobs))
        return results
    # spawn, not fork: the caller may hold threads (a test server, a logging handler), and a
    # forked child inherits their locks in whatever state they were.
    context = multiprocessing.get_context("spawn")
    ordered: list[JobResult | None] = [None] * len(jobs)
    with ProcessPoolExecutor(
        max_workers=min(count, len(jobs)),
        mp_context=context,
        initializer=configure_run_logging,
        initargs=(str(log_path) if log_path else "",),
    ) as pool:
        futures = {pool.submit(run_job, job): index for index, job in enumerate(jobs)}
        for done, future in enumerate(as_completed(futures), start=1):
            ordered[futures[future]] = result = future.result()
            if record is not None:
                record(jobs[futures[future]], result)
            if progress is not None:
                progress(done, len(jobs))
    return [result for result in ordered if result is not None]


def configure_run_logging(log_path: str) -> None:
    """Runs' components log what they decide; those lines belong in the run's log file
    (appended: each line is one write, so workers can share it), never on the terminal."""
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    if log_path:
        handler: logging.Handler = logging.FileHandler(log_path, mode="a", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    else:
        handler = logging.NullHandler()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)


def _run_on_dask(
    jobs: Sequence[Job], address: str, progress: Progress | None, record: Record | None
) -> list[JobResult]:
    try:
        # An optional extra, untyped: held as Any rather than silenced call by call.
        distributed: Any = importlib.import_module("distributed")
    except ImportError as error:
        raise DaskUnavailableError(
            "--dask needs the 'distributed' package: pip install 'telemetry-aware-scheduling[sim]'"
        ) from error
    # The default client while it lives: `as_completed` and `Future.result` look it up.
    client: Any = distributed.Client(address, set_as_default=True)
    try:
        # pure=False: two identical jobs are two runs (they are, on purpose, when a test asks).
        futures = client.map(run_job, list(jobs), pure=False)
        index = {future.key: i for i, future in enumerate(futures)}
        ordered: list[JobResult | None] = [None] * len(jobs)
        for done, future in enumerate(distributed.as_completed(futures), start=1):
            ordered[index[future.key]] = result = future.result()
            if record is not None:
                record(jobs[index[future.key]], result)
            if progress is not None:
                progress(done, len(jobs))
        return [result for result in ordered if result is not None]
    finally:
        client.close()
