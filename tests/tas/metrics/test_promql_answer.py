"""Reading the Prometheus HTTP API's answers (`tas.metrics.promql_answer`), without a server.

Bodies are the JSON the API documents (https://prometheus.io/docs/prometheus/latest/querying/api/).
Covered: instant vectors, range matrices, scalars and strings become typed values; NaN and
+/-Inf come through as floats; native-histogram samples are left out; warnings and infos are
kept; error answers carry the HTTP status and errorType; a body that is not the API's answer
(HTML, truncated, malformed series) is an `AnswerError`, which is a `MetricFetchError`;
`read_vector` refuses anything but a vector; `at` names the query without losing the type.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tas.metrics.errors import MetricFetchError
from tas.metrics.promql_answer import (
    AnswerError,
    InstantSample,
    Matrix,
    RangeSeries,
    Scalar,
    String,
    Vector,
    read_answer,
    read_vector,
)


def success(kind: str, result: Any, **extra: Any) -> str:
    return json.dumps(
        {"status": "success", "data": {"resultType": kind, "result": result}, **extra}
    )


def error(error_type: str, message: str) -> str:
    return json.dumps({"status": "error", "errorType": error_type, "error": message})


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            success("vector", [{"metric": {"instance": "a"}, "value": [1700000000.5, "0.25"]}]),
            Vector((InstantSample({"instance": "a"}, 1700000000.5, 0.25),)),
            id="vector",
        ),
        pytest.param(success("vector", []), Vector(()), id="empty-vector"),
        pytest.param(
            success(
                "matrix",
                [{"metric": {"pod": "p"}, "values": [[10, "1"], [25, "2.5e+00"]]}],
            ),
            Matrix((RangeSeries({"pod": "p"}, ((10.0, 1.0), (25.0, 2.5))),)),
            id="matrix",
        ),
        pytest.param(success("scalar", [12.5, "3"]), Scalar(12.5, 3.0), id="scalar"),
        pytest.param(success("string", [12.5, "hello"]), String(12.5, "hello"), id="string"),
        pytest.param(
            success("vector", [], warnings=["partial response"], infos=["not a counter"]),
            Vector((), warnings=("partial response", "not a counter")),
            id="warnings-and-infos-kept",
        ),
        pytest.param(
            success(
                "vector",
                [
                    {"metric": {"instance": "h"}, "histogram": [5, {"count": "3", "sum": "1"}]},
                    {"metric": {"instance": "a"}, "value": [5, "1"]},
                ],
            ),
            Vector((InstantSample({"instance": "a"}, 5.0, 1.0),)),
            id="native-histogram-left-out",
        ),
    ],
)
def test_a_success_answer_becomes_its_typed_result(body: str, expected: object) -> None:
    assert read_answer(200, body) == expected
    assert read_answer(200, body.encode()) == expected  # bytes, as httpx hands them over


@pytest.mark.parametrize(
    ("text", "check"),
    [
        pytest.param("NaN", math.isnan, id="nan"),
        pytest.param("+Inf", lambda v: v == math.inf, id="plus-inf"),
        pytest.param("-Inf", lambda v: v == -math.inf, id="minus-inf"),
        pytest.param("1e-3", lambda v: v == 0.001, id="exponent"),
    ],
)
def test_special_values_are_read_as_floats(text: str, check: Any) -> None:
    answer = read_vector(200, success("vector", [{"metric": {}, "value": [1, text]}]))
    assert check(answer.series[0].value)


@pytest.mark.parametrize(
    ("status", "body", "error_type", "message"),
    [
        pytest.param(
            400, error("bad_data", "parse error at char 3"), "bad_data",
            "HTTP 400 (bad_data): parse error at char 3", id="bad-query",
        ),
        pytest.param(
            503, error("timeout", "query timed out"), "timeout",
            "HTTP 503 (timeout): query timed out", id="timeout",
        ),
        pytest.param(
            422, error("execution", "many-to-many matching"), "execution",
            "HTTP 422 (execution): many-to-many matching", id="execution",
        ),
        pytest.param(
            502, "<html>Bad Gateway</html>", None,
            "HTTP 502: not a Prometheus API answer: '<html>Bad Gateway</html>'", id="proxy-html",
        ),
        pytest.param(
            200, '{"status": "succ', None, "not a Prometheus API answer", id="truncated",
        ),
        pytest.param(200, '["success"]', None, "not a Prometheus API answer", id="not-an-object"),
        pytest.param(
            200, success("vector", [{"metric": {}}]), None, "malformed series in a vector",
            id="series-without-value",
        ),
        pytest.param(
            200, success("vector", [{"metric": {"a": 1}, "value": [1, "1"]}]), None,
            "malformed series in a vector", id="label-not-a-string",
        ),
        pytest.param(
            200, success("vector", [{"metric": {}, "value": [1, 1]}]), None,
            "malformed series in a vector", id="value-not-a-string",
        ),
        pytest.param(
            200, success("matrix", [{"metric": {}, "values": [[1]]}]), None,
            "malformed series in a matrix", id="short-point",
        ),
        pytest.param(
            200, success("histogram", []), None, "malformed answer", id="unknown-result-type",
        ),
        pytest.param(
            200, json.dumps({"status": "success"}), None, "malformed answer", id="no-data",
        ),
    ],
)  # fmt: skip
def test_an_error_or_unreadable_answer_is_an_answer_error(
    status: int, body: str, error_type: str | None, message: str
) -> None:
    with pytest.raises(AnswerError) as raised:
        read_answer(status, body)
    assert raised.value.status_code == status
    assert raised.value.error_type == error_type
    assert message in str(raised.value)
    assert isinstance(raised.value, MetricFetchError)  # the view retries it next sync period


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        pytest.param(success("scalar", [1, "1"]), "scalar", id="scalar"),
        pytest.param(success("matrix", []), "matrix", id="matrix"),
        pytest.param(success("string", [1, "x"]), "string", id="string"),
    ],
)
def test_read_vector_refuses_any_other_result_type(body: str, kind: str) -> None:
    with pytest.raises(AnswerError, match=f"gives a {kind}, not one value per series"):
        read_vector(200, body)


def test_at_names_where_the_answer_came_from_and_keeps_the_details() -> None:
    with pytest.raises(AnswerError) as raised:
        read_answer(400, error("bad_data", "parse error"))
    located = raised.value.at("http://prom/api/v1/query for 'up'")
    assert str(located) == "http://prom/api/v1/query for 'up': HTTP 400 (bad_data): parse error"
    assert (located.status_code, located.error_type) == (400, "bad_data")
