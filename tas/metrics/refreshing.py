"""The metric view every component reads: a cache refreshed in the background from one source.

Reading happens on every scheduling request, so it must never wait on I/O and must stay cheap:
`columns()` hands out a prebuilt mapping and only rebuilds a metric's column when one of its
values has just passed `max_age` (checked against the sample time, at read time). Fetching
happens in one daemon thread every sync period, and whenever the wanted names change.

A value is stale once it is older than `max_age`, or, where the source itself updates more
slowly than that, once it has missed `MISSED_UPDATES` of its own updates (`Cadence`). A sample
is never younger than the pipeline's delay when it arrives, and it is not replaced before the
next scrape: with Prometheus scraping every 30 s and answering 30 s late (a recording rule, an
adapter cache), every value is 30-60 s old in normal operation. A fixed 30 s limit would call
such a fleet missing most of the time, and missing values never violate: dontschedule would fail
open while nothing is wrong. So the limit follows what is observed, per metric: the age values
have when they arrive, plus `1 + MISSED_UPDATES` update intervals (of at most `MAX_CADENCE`).
An explicit `max_age` (the `--metric-max-age` flag) is kept as given.

Failure handling follows the spec: a failed fetch keeps the last good values until they go
stale, each failing target is logged once when it starts failing and once when it recovers,
and both are exported (`tas_metric_fetch_errors_total`, `tas_metric_age_seconds`). For the
alerts on stale and missing metrics (deploy/monitoring), each wanted metric's limit in force
(`tas_metric_max_age_seconds`) and its number of nodes with a fresh value
(`tas_metric_fresh_nodes`, 0 when every value is missing) are exported too: only the view
knows the limit, which follows each metric's cadence.
"""

from __future__ import annotations

import itertools
import logging
import math
import statistics
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from operator import itemgetter

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from tas.clock import SYSTEM_CLOCK, Clock
from tas.metrics.errors import FetchFailures
from tas.metrics.source import Fetched, MetricSource, SampleColumn
from tas.types import MetricColumn, MetricColumns, MetricName, NodeName

log = logging.getLogger(__name__)

_VALUE = itemgetter(0)  # Sample.value
_TIMESTAMP = itemgetter(1)  # Sample.timestamp

#: Updates a series may miss before its value is stale, where the default limit is shorter.
MISSED_UPDATES = 2
#: Nodes sampled per fetch to learn a metric's cadence (the median of what they show), and
#: the most nodes looked at for them: a fetch of 5,000 unchanged nodes costs a scan of 512.
_CADENCE_SAMPLE = 64
_CADENCE_SCAN = 512
#: The longest update interval taken for a cadence: Prometheus's default scrape interval. A
#: longer gap between two samples is a writer that paused (an event-driven textfile), not a
#: rhythm to wait for.
MAX_CADENCE = 60.0


@dataclass(frozen=True, slots=True)
class Cadence:
    """How a metric's values arrive: every `interval` seconds, `arrival_age` seconds old."""

    interval: float
    arrival_age: float

    @property
    def allowance(self) -> float:
        """The age at which a value has missed `MISSED_UPDATES` updates."""
        return self.arrival_age + (1 + MISSED_UPDATES) * self.interval

    @classmethod
    def observed(cls, before: SampleColumn, after: SampleColumn, now: float) -> Cadence | None:
        """The cadence the nodes whose sample advanced between two answers show (medians),
        None when none advanced."""
        intervals: list[float] = []
        ages: list[float] = []
        for node, sample in itertools.islice(after.items(), _CADENCE_SCAN):
            previous = before.get(node)
            if previous is None or sample.timestamp <= previous.timestamp:
                continue
            intervals.append(sample.timestamp - previous.timestamp)
            ages.append(max(0.0, now - sample.timestamp))
            if len(intervals) >= _CADENCE_SAMPLE:
                break
        if not intervals:
            return None
        interval = statistics.median(intervals)
        if interval > MAX_CADENCE:
            return None
        return cls(interval=interval, arrival_age=statistics.median(ages))


def default_max_age(sync_period: float) -> float:
    """Five sync periods, at least 30 s: a few missed fetches are not yet an outage."""
    return max(5.0 * sync_period, 30.0)


@dataclass(frozen=True)
class _Column:
    samples: SampleColumn
    #: The fresh values as readers see them (built once, shared by every read).
    fresh: MetricColumn
    #: Read time after which some value in `fresh` is stale: rebuild then.
    expires_at: float
    oldest: float
    #: Samples measured before this are stale (not in `fresh`).
    limit: float
    #: How this metric's values arrive, once seen to advance (None before).
    cadence: Cadence | None = None

    @cached_property
    def times(self) -> Mapping[NodeName, float]:
        """The sample time of each fresh value (for recent-placement estimates).

        Built on first use: only the extender's herd control reads it, and every fetch
        rebuilds every column.
        """
        if self.oldest >= self.limit:
            return dict(zip(self.samples, map(_TIMESTAMP, self.samples.values()), strict=True))
        return {n: s.timestamp for n, s in self.samples.items() if s.timestamp >= self.limit}


@dataclass(frozen=True)
class _State:
    columns: Mapping[MetricName, _Column]
    published: MetricColumns
    expires_at: float

    @cached_property
    def times(self) -> Mapping[MetricName, Mapping[NodeName, float]]:
        # Cached: one mapping per state, which herd control recognises by identity.
        return {name: column.times for name, column in self.columns.items()}


_EMPTY = _State(columns={}, published={}, expires_at=math.inf)


class RefreshingMetricView:
    """A `MetricView` over a `MetricSource`, refreshed every `sync_period` seconds."""

    def __init__(
        self,
        source: MetricSource,
        *,
        sync_period: float = 2.0,
        max_age: float | None = None,
        registry: CollectorRegistry | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if not sync_period > 0:
            raise ValueError(f"sync period must be positive, not {sync_period!r}")
        self.source = source
        self.sync_period = sync_period
        self.max_age = default_max_age(sync_period) if max_age is None else max_age
        if not self.max_age > 0:
            raise ValueError(f"max age must be positive, not {max_age!r}")
        #: The default limit stretches to a slower source's cadence; a given one is kept.
        self.follows_cadence = max_age is None
        self._clock = clock
        self._state = _EMPTY
        self._wanted: frozenset[MetricName] = frozenset()
        self._ready = False
        #: Every name some completed refresh has asked the source for.
        self._asked: frozenset[MetricName] = frozenset()
        kind = source.kind.replace("%", "%%")
        self._failures = FetchFailures(
            log,
            failed=f"metrics: {kind} fetch of %s failed: %s",
            recovered=f"metrics: {kind} fetch of %s works again",
        )
        self._lock = threading.Lock()  # guards replacing _state
        self._refreshing = threading.Lock()  # one refresh at a time
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._errors = Counter(
            "tas_metric_fetch_errors_total",
            "Failed metric fetches, by source kind and target (a metric, a node or a file).",
            ["source", "target"],
            registry=registry,
        )
        if registry is not None:
            registry.register(_FreshnessCollector(self))

    # -- the MetricView protocol ------------------------------------------------------------

    def columns(self) -> MetricColumns:
        state = self._state
        now = self._clock.now().timestamp()
        if now <= state.expires_at:
            return state.published
        return self._republish(state, now)

    def sample_times(self) -> Mapping[MetricName, Mapping[NodeName, float]]:
        """The sample time of every value `columns()` hands out (same freshness)."""
        self.columns()  # republishes a column whose oldest value just went stale
        return self._state.times

    def set_wanted(self, names: Iterable[MetricName]) -> None:
        wanted = frozenset(names)
        if wanted != self._wanted:
            self._wanted = wanted
            self._wake.set()  # fetch new names now rather than at the next period

    @property
    def ready(self) -> bool:
        """A refresh has completed, and every metric wanted now has been asked for by one.
        Ready on the first refresh alone, a component started before its policies arrived
        (that refresh asked for nothing) would answer without their values until the next."""
        return self._ready and self._wanted <= self._asked

    @property
    def wanted(self) -> frozenset[MetricName]:
        return self._wanted

    # -- refreshing -------------------------------------------------------------------------

    def start(self) -> None:
        """Refresh now and then every sync period, in a daemon thread, until `stop()`."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="tas-metrics", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop refreshing and release the source's connections.

        A fetch still running after `timeout` is left to finish in its daemon thread, with
        the source open: closing it under the fetch would only turn the answer into an error.
        """
        self._stopping.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                log.info("metrics: a %s fetch is still running; not waiting", self.source.kind)
                return
        self.source.close()

    def refresh_once(self) -> None:
        """Fetch every wanted metric once and publish what came back (blocking)."""
        with self._refreshing:
            wanted = self._wanted
            try:
                fetched = self.source.fetch(wanted)
            except Exception as error:  # a bug in a source must not end refreshing
                log.exception("metrics: %s source failed", self.source.kind)
                fetched = Fetched(errors={"source": f"{type(error).__name__}: {error}"})
            with self._lock:
                self._state = self._merge(
                    self._state, wanted, fetched, self._clock.now().timestamp()
                )
            self._note_errors(fetched)
            self._asked |= wanted
            self._ready = True

    def _run(self) -> None:
        while not self._stopping.is_set():
            self.refresh_once()
            self._wake.wait(self.sync_period)
            self._wake.clear()

    def _merge(
        self, state: _State, wanted: frozenset[MetricName], fetched: Fetched, now: float
    ) -> _State:
        columns: dict[MetricName, _Column] = {}
        for name in wanted:
            answer = fetched.columns.get(name)
            previous = state.columns.get(name)
            cadence = previous.cadence if previous is not None else None
            if answer is not None:
                samples = _finite(answer)
                if self.follows_cadence and previous is not None:
                    cadence = Cadence.observed(previous.samples, samples, now) or cadence
                columns[name] = self._column(samples, now, cadence)
            elif previous is not None:  # not answered: keep the last good values
                columns[name] = self._column(previous.samples, now, cadence)
        return self._state_of(columns)

    def max_age_of(self, name: MetricName) -> float:
        """The age past which a value of `name` counts as missing: `max_age`, or longer for
        a source that updates more slowly (module docstring)."""
        column = self._state.columns.get(name)
        return self._limit_age(column.cadence if column is not None else None)

    def _limit_age(self, cadence: Cadence | None) -> float:
        if cadence is None or not self.follows_cadence:
            return self.max_age
        return max(self.max_age, cadence.allowance)

    def _republish(self, seen: _State, now: float) -> MetricColumns:
        with self._lock:
            state = self._state
            if state is seen:  # nobody else rebuilt it meanwhile
                columns = {
                    name: column
                    if now <= column.expires_at
                    else self._column(column.samples, now, column.cadence)
                    for name, column in state.columns.items()
                }
                state = self._state = self._state_of(columns)
            return state.published

    def _column(self, samples: SampleColumn, now: float, cadence: Cadence | None) -> _Column:
        # Every fetch rebuilds every column, on the thread readers share the GIL with: passes
        # run in C (map, zip, dict) where they can, a Python loop only over stale samples.
        max_age = self._limit_age(cadence)
        limit = now - max_age
        oldest = min(map(_TIMESTAMP, samples.values()), default=math.inf)
        if oldest >= limit:  # every sample fresh, the usual case
            fresh = dict(zip(samples, map(_VALUE, samples.values()), strict=True))
            expires = oldest + max_age
        else:
            fresh = {node: s.value for node, s in samples.items() if s.timestamp >= limit}
            stamps = (s.timestamp for s in samples.values() if s.timestamp >= limit)
            expires = min(stamps, default=math.inf) + max_age
        return _Column(
            samples, fresh, expires_at=expires, oldest=oldest, limit=limit, cadence=cadence
        )

    @staticmethod
    def _state_of(columns: Mapping[MetricName, _Column]) -> _State:
        return _State(
            columns=columns,
            published={name: column.fresh for name, column in columns.items()},
            expires_at=min((c.expires_at for c in columns.values()), default=math.inf),
        )

    def _note_errors(self, fetched: Fetched) -> None:
        kind = self.source.kind
        for target, message in fetched.errors.items():
            self._errors.labels(source=kind, target=target).inc()
            self._failures.failed(target, message)
        for target in fetched.ok & self._failures.failing.keys():
            self._failures.worked(target)

    @property
    def failing(self) -> Mapping[str, str]:
        """Targets whose last fetch failed -> error message."""
        return dict(self._failures.failing)

    def ages(self) -> dict[MetricName, float]:
        """Seconds since the oldest value held for each metric was measured."""
        now = self._clock.now().timestamp()
        return {
            name: now - column.oldest
            for name, column in self._state.columns.items()
            if math.isfinite(column.oldest)
        }


def _finite(answer: SampleColumn) -> SampleColumn:
    """The samples with a finite value: a NaN or infinity is no usable value."""
    if all(map(math.isfinite, map(_VALUE, answer.values()))):
        return dict(answer)
    return {node: s for node, s in answer.items() if math.isfinite(s.value)}


class _FreshnessCollector(Collector):
    """Computes the age, limit and fresh-node gauges when scraped, so they are never out of
    date: `tas_metric_age_seconds` for each metric held, the other two for each one wanted."""

    def __init__(self, view: RefreshingMetricView) -> None:
        self._view = view

    def collect(self) -> Iterator[Metric]:
        ages, limits, fresh = self._families()
        for name, age in sorted(self._view.ages().items()):
            ages.add_metric([name], age)
        columns = self._view.columns()  # republishes what went stale since the last read
        for name in sorted(self._view.wanted):
            limits.add_metric([name], self._view.max_age_of(name))
            fresh.add_metric([name], len(columns.get(name, {})))
        yield from (ages, limits, fresh)

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "tas_metric_age_seconds",
                "Age of the oldest value held for a metric; past tas_metric_max_age_seconds it "
                "counts as missing.",
                labels=["metric"],
            ),
            GaugeMetricFamily(
                "tas_metric_max_age_seconds",
                "The age past which a value of a wanted metric counts as missing: "
                "--metric-max-age, or by default two missed updates of a slower source.",
                labels=["metric"],
            ),
            GaugeMetricFamily(
                "tas_metric_fresh_nodes",
                "Nodes with a fresh value of a wanted metric (0: missing on every node, so no "
                "rule on it violates and its policies do nothing).",
                labels=["metric"],
            ),
        )
