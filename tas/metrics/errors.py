"""Errors of the metrics package, so callers can tell a bad flag from a failing fetch.

    ValueError
    ├── MetricSourceError      a `--metrics` spec or metrics config file that cannot work
    └── TextFormatError        Prometheus text that does not parse (line number in the message)
    Exception
    └── MetricFetchError       one fetch failed (unreachable, bad answer); retried every cycle
        └── AnswerError        Prometheus's error answer, or not its API's answer
                               (tas.metrics.promql_answer)

A `MetricFetchError` is never fatal: the view keeps the last good values until they go stale.
What fails is told once as it starts failing and once as it works again (`FetchFailures`), not
at every retry: a source down for an hour is two log lines, not one per sync period.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType


class MetricSourceError(ValueError):
    """The metrics source is misconfigured; raised at startup, never while running."""


class TextFormatError(ValueError):
    """Input that is not in the Prometheus text exposition format."""


class MetricFetchError(Exception):
    """A fetch from a metrics source failed; the next sync period tries again."""


class FetchFailures:
    """The targets (nodes, series, scrape targets) whose last fetch failed, with why; each told
    once: a warning as it starts failing, info as it works again."""

    def __init__(self, logger: logging.Logger, *, failed: str, recovered: str) -> None:
        """`failed`: the warning, a %-format of the target and the error; `recovered`: the
        info line, a %-format of the target."""
        self._log = logger
        self._failed_format = failed
        self._recovered_format = recovered
        self._failing: dict[str, str] = {}
        self.failing: Mapping[str, str] = MappingProxyType(self._failing)

    def failed(self, target: str, error: object) -> None:
        if target not in self._failing:
            self._log.warning(self._failed_format, target, error)
        self._failing[target] = str(error)

    def worked(self, target: str) -> None:
        if self._failing.pop(target, None) is not None:
            self._log.info(self._recovered_format, target)
