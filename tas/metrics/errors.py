"""Errors of the metrics package, so callers can tell a bad flag from a failing fetch.

    ValueError
    ├── MetricSourceError      a `--metrics` spec or metrics config file that cannot work
    └── TextFormatError        Prometheus text that does not parse (line number in the message)
    Exception
    └── MetricFetchError       one fetch failed (unreachable, bad answer); retried every cycle
        └── AnswerError        Prometheus's error answer, or not its API's answer
                               (tas.metrics.promql_answer)

A `MetricFetchError` is never fatal: the view keeps the last good values until they go stale.
"""

from __future__ import annotations


class MetricSourceError(ValueError):
    """The metrics source is misconfigured; raised at startup, never while running."""


class TextFormatError(ValueError):
    """Input that is not in the Prometheus text exposition format."""


class MetricFetchError(Exception):
    """A fetch from a metrics source failed; the next sync period tries again."""
