"""The Prometheus HTTP API's answer to a query, read without I/O.

Every Prometheus user in the project (the metric view's source, per-pod usage, the
descheduler's `metricsUtilization`) gets its answers through `read_answer`, so an error answer,
a warning or an odd value means the same thing everywhere. The client that does the I/O is
`tas.adapters.metrics.prometheus.PrometheusClient`; this module takes the status code and body it
got,
the way httpx keeps its protocol logic apart from its transports (the "sans-I/O" idea).

The envelope, as https://prometheus.io/docs/prometheus/latest/querying/api/ documents it:

    {"status": "success" | "error", "data": {"resultType": ..., "result": ...},
     "errorType": "bad_data" | "timeout" | "execution" | ..., "error": "...",
     "warnings": ["..."], "infos": ["..."]}

Values are strings (`"1.5"`, `"NaN"`, `"+Inf"`, `"-Inf"`), read as Python floats as they are:
whether a non-finite value is useful is the caller's decision. A native-histogram sample
(`"histogram"` in place of `"value"`) is not one number and is left out.

Errors (both are `tas.metrics.errors.MetricFetchError`, retried every sync period):

    MetricFetchError
    └── AnswerError        Prometheus said error, or the body is not its API's answer;
                           `error_type` is the API's errorType (None when there is none)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tas.metrics.errors import MetricFetchError


class AnswerError(MetricFetchError):
    """Prometheus answered with an error, or with something that is not an API answer."""

    def __init__(
        self, detail: str, *, status_code: int, error_type: str | None = None, where: str = ""
    ) -> None:
        self.detail = detail
        self.status_code = status_code
        self.error_type = error_type
        self.where = where
        super().__init__(f"{where}: {detail}" if where else detail)

    def at(self, where: str) -> AnswerError:
        """The same error, its message prefixed with where it came from (URL and query)."""
        return AnswerError(
            self.detail, status_code=self.status_code, error_type=self.error_type, where=where
        )


@dataclass(frozen=True)
class InstantSample:
    """One series of an instant vector: its labels, its value and the time it is for."""

    labels: Mapping[str, str]
    timestamp: float
    value: float


@dataclass(frozen=True)
class RangeSeries:
    """One series of a range vector: its labels and its (time, value) points, oldest first."""

    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Vector:
    series: tuple[InstantSample, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Matrix:
    series: tuple[RangeSeries, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scalar:
    timestamp: float
    value: float
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class String:
    timestamp: float
    value: str
    warnings: tuple[str, ...] = ()


Answer = Vector | Matrix | Scalar | String


def read_answer(status_code: int, body: bytes | str) -> Answer:
    """The typed answer in an HTTP response from `/api/v1/query` or `/api/v1/query_range`.

    Raises `AnswerError` for an error answer (any HTTP status) and for a body that is not
    the API's JSON (a proxy's HTML error page, a truncated reply)."""
    try:
        document: Any = json.loads(body)
    except ValueError:
        document = None
    if not isinstance(document, dict) or document.get("status") not in ("success", "error"):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        raise AnswerError(
            f"HTTP {status_code}: not a Prometheus API answer: {text[:200]!r}",
            status_code=status_code,
        )
    if document["status"] == "error":
        error_type = document.get("errorType")
        error_type = error_type if isinstance(error_type, str) else None
        raise AnswerError(
            f"HTTP {status_code} ({error_type or 'error'}): {document.get('error')}",
            status_code=status_code,
            error_type=error_type,
        )
    warnings = _strings(document.get("warnings")) + _strings(document.get("infos"))
    data = document.get("data")
    kind = data.get("resultType") if isinstance(data, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    try:
        if kind == "vector" and isinstance(result, list):
            samples = (_instant(series) for series in result)
            return Vector(tuple(s for s in samples if s is not None), warnings)
        if kind == "matrix" and isinstance(result, list):
            return Matrix(tuple(_range(s) for s in result), warnings)
        if kind == "scalar":
            at, value = _point(result)
            return Scalar(at, value, warnings)
        if kind == "string" and isinstance(result, list) and len(result) == 2:
            return String(float(result[0]), str(result[1]), warnings)
    except (KeyError, TypeError, ValueError) as error:
        raise AnswerError(
            f"malformed series in a {kind}: {error}", status_code=status_code
        ) from error
    raise AnswerError(f"malformed answer: {str(data)[:200]}", status_code=status_code)


def read_vector(status_code: int, body: bytes | str) -> Vector:
    """`read_answer` for callers that need one value per series (an instant vector)."""
    answer = read_answer(status_code, body)
    if not isinstance(answer, Vector):
        kind = type(answer).__name__.lower()
        raise AnswerError(f"gives a {kind}, not one value per series", status_code=status_code)
    return answer


def _instant(series: Any) -> InstantSample | None:
    if "histogram" in series and "value" not in series:
        return None
    at, value = _point(series["value"])
    return InstantSample(_labels(series["metric"]), at, value)


def _range(series: Any) -> RangeSeries:
    return RangeSeries(_labels(series["metric"]), tuple(_point(p) for p in series["values"]))


def _point(pair: Any) -> tuple[float, float]:
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], str):
        raise ValueError(f'{pair!r} is not [time, "value"]')
    return float(pair[0]), float(pair[1])


def _labels(labels: Any) -> Mapping[str, str]:
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise ValueError(f"{labels!r} is not a label set")
    return labels


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list) else ()
