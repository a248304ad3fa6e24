"""A window of recorded history as values per step: what `tas replay` evaluates. Pure, no I/O.

The adapter (`tas_replay.prometheus`) asks Prometheus for each series at every step of the
window, and for the time of the sample behind each of those values (`timestamp()`), as the live
metric source does. `fresh_steps` then applies the live staleness rule to them: a value whose
sample is older than `max_age` at a step is missing there, so a gap in scraping longer than
`--metric-max-age` is a gap in the replay too, and missing never violates.

Errors:
    ReplayInputError (ValueError)   a window or time the user wrote that cannot be replayed
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from tas.durations import DurationError, parse_duration
from tas.types import MetricName, NodeName

#: Prometheus refuses a range query of more than 11,000 points per series
#: (prometheus/prometheus web/api/v1/api.go, queryRange: "exceeded maximum resolution of 11,000
#: points per timeseries"), so the adapter asks in pieces of at most this many steps.
QUERY_STEPS = 10_000
#: A replay holds every step of every series in memory: beyond this many steps the window is
#: refused with what to change (7 days at 5 s steps is 120,961 steps; at 30 s, 20,161).
MAX_STEPS = 125_000

_RELATIVE = re.compile(r"-\s*(?P<amount>.+)")
_DAYS = re.compile(r"(\d+(?:\.\d*)?)([dw])")


class ReplayInputError(ValueError):
    """A window the user gave that cannot be replayed: said in one line, with what to change."""


@dataclass(frozen=True, slots=True)
class Window:
    """Steps `start, start + step, ...` up to `end` (Unix seconds), both ends included."""

    start: float
    end: float
    step: float

    @property
    def count(self) -> int:
        return math.floor((self.end - self.start) / self.step + 1e-9) + 1

    def time(self, index: int) -> float:
        return self.start + index * self.step

    def pieces(self, most: int = QUERY_STEPS) -> list[Window]:
        """The window cut into consecutive windows of at most `most` steps each."""
        cut: list[Window] = []
        first = 0
        while first < self.count:
            last = min(first + most, self.count) - 1
            cut.append(Window(self.time(first), self.time(last), self.step))
            first = last + 1
        return cut

    def as_json(self) -> dict[str, float]:
        return {"start": self.start, "end": self.end, "step": self.step}


def parse_time(text: str, *, now: float) -> float:
    """Unix seconds from RFC 3339 (`2026-11-17T00:00:00Z`), `now`, `-<duration>` before now
    (`-7d`, `-36h`, `-1d12h`: Go durations plus `d` and `w`), or Unix seconds (as Prometheus's
    API takes them)."""
    stripped = text.strip()
    if stripped == "now":
        return now
    try:
        return float(stripped)
    except ValueError:
        pass
    relative = _RELATIVE.fullmatch(stripped)
    if relative is not None:
        amount = relative["amount"]
        days = sum(float(n) * (7 if unit == "w" else 1) for n, unit in _DAYS.findall(amount))
        rest = _DAYS.sub("", amount)
        try:
            seconds = days * 86400 + (parse_duration(rest) if rest else 0.0)
        except DurationError as error:
            raise ReplayInputError(f"{text!r}: {error}") from error
        return now - seconds
    try:
        moment = datetime.fromisoformat(stripped.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as error:
        raise ReplayInputError(
            f"{text!r} is not a time: write RFC 3339 (2026-11-17T00:00:00Z), now, -7d, "
            "or Unix seconds"
        ) from error
    if moment.tzinfo is None:
        raise ReplayInputError(f"{text!r} has no time zone: add Z or an offset such as +01:00")
    return moment.timestamp()


def make_window(start: float, end: float, step: float) -> Window:
    """The window, or a `ReplayInputError` saying why it cannot be replayed."""
    if not step > 0:
        raise ReplayInputError(f"--step must be positive, not {step:g}s")
    if not end > start:
        raise ReplayInputError(
            f"the window is empty: --end ({_iso(end)}) is not after --start ({_iso(start)})"
        )
    window = Window(start, end, step)
    if window.count > MAX_STEPS:
        raise ReplayInputError(
            f"the window has {window.count:,} steps of {step:g}s, more than the {MAX_STEPS:,} a "
            "replay holds: raise --step or shorten the window"
        )
    return window


def _iso(seconds: float) -> str:
    from datetime import UTC

    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


#: Per step, a value or None (missing or stale).
Steps = list[float | None]


def fresh_steps(
    window: Window,
    values: Iterable[tuple[float, float]],
    sampled: Mapping[float, float] | None,
    *,
    max_age: float,
) -> Steps:
    """One series as a value per step of `window`, None where it is missing.

    `values` are the (step time, value) points a range query answered; `sampled` the time of
    the sample behind the value at each step time (None: the query has no sample times, as for
    a rate, and an answered value is fresh). A value is missing where no point was answered,
    where it is not finite, or where its sample is older than `max_age` at the step: the live
    metric view's rule (`tas.metrics.refreshing`), so history is judged as it was lived.
    """
    out: Steps = [None] * window.count
    start, step = window.start, window.step
    for at, value in values:
        index = round((at - start) / step)
        if not 0 <= index < len(out) or not math.isfinite(value):
            continue
        if sampled is not None:
            sample_time = sampled.get(at)
            if sample_time is None or at - sample_time > max_age:
                continue
        out[index] = value
    return out


@dataclass
class PodHistory:
    """A pod as kube-state-metrics recorded it: where it ran, its `telemetry-policy` label, its
    owner, requests and usage per step.

    Where it ran is held as spans of steps (`(first, last, node)`, both included, in order),
    not a node per step: a week at 30 s is 20,161 steps, and a cluster's pods over a week are
    tens of thousands, each on one node for all its life."""

    namespace: str
    name: str
    spans: list[tuple[int, int, NodeName]] = field(default_factory=list)
    policy: str | None = None
    owner_kind: str | None = None
    owner_name: str | None = None
    started: float | None = None
    #: Requests summed over the pod's containers: "cpu" (cores), "memory" (bytes).
    requests: dict[str, float] = field(default_factory=dict)
    cpu: Steps | None = None
    memory: Steps | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def add(self, index: int, node: NodeName) -> None:
        """Record the pod on `node` at step `index` (steps added in increasing order)."""
        if self.spans:
            first, last, current = self.spans[-1]
            if current == node and last + 1 >= index:
                self.spans[-1] = (first, max(last, index), node)
                return
        self.spans.append((index, index, node))

    def node_at(self, index: int) -> NodeName | None:
        for first, last, node in self.spans:
            if first <= index <= last:
                return node
            if first > index:
                return None
        return None

    def first_step(self) -> int | None:
        return self.spans[0][0] if self.spans else None

    def next_node(self, index: int) -> NodeName | None:
        """The node the pod is on at `index`, or else the next one it is placed on."""
        return next((node for _, last, node in self.spans if last >= index), None)


@dataclass
class History:
    """Everything a replay reads over one window."""

    window: Window
    #: Metric (as policies name it) -> node -> value per step (None: missing or stale).
    metrics: dict[MetricName, dict[NodeName, Steps]]
    pods: list[PodHistory] = field(default_factory=list)
    #: Node -> allocatable "cpu" (cores), "memory" (bytes), "pods" (the last recorded values).
    allocatable: dict[NodeName, dict[str, float]] = field(default_factory=dict)

    def nodes(self) -> list[NodeName]:
        found: set[NodeName] = set(self.allocatable)
        for columns in self.metrics.values():
            found.update(columns)
        for pod in self.pods:
            found.update(node for _, _, node in pod.spans)
        return sorted(found)


class StepColumns:
    """The metric view at each step, for the rule engine: only the values present there.

    The history is held per node (a series each); a replay reads it per step. Transposing each
    metric once into rows (one tuple of node values per step, in C) makes a step's view one
    `dict(zip(...))` when no value is missing, rather than a Python loop over every node.
    """

    def __init__(self, metrics: Mapping[MetricName, Mapping[NodeName, Sequence[float | None]]]):
        self._metrics = [
            (metric, tuple(columns), list(zip(*columns.values(), strict=True)))
            for metric, columns in metrics.items()
            if columns
        ]

    def at(self, index: int) -> dict[MetricName, dict[NodeName, float]]:
        view: dict[MetricName, dict[NodeName, float]] = {}
        for metric, nodes, rows in self._metrics:
            row = rows[index]
            if None in row:
                view[metric] = {n: v for n, v in zip(nodes, row, strict=True) if v is not None}
            else:
                view[metric] = dict(zip(nodes, row, strict=True))
        return view
