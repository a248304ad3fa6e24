"""Control requests validated at the boundary (`tas_dashboard.controls`), without a server.

Covered: each control's accepted body; each kind of bad body with its status and reason; and
the property that any bytes with any content type give a request or a 4xx `ControlError`,
never another exception.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tas_dashboard.controls import (
    AddLoad,
    ControlError,
    Scale,
    SetHealth,
    parse_add_load,
    parse_scale,
    parse_set_health,
)

JSON = "application/json"


def test_each_control_reads_its_one_field() -> None:
    assert parse_set_health(b'{"value": -1.5}', JSON) == SetHealth(-1.5)
    assert parse_set_health(b'{"value": 2}', "application/json; charset=utf-8") == SetHealth(2.0)
    assert parse_scale(b'{"replicas": 6}', JSON, most=40) == Scale(6)
    assert parse_scale(b'{"replicas": 6.0}', JSON, most=40) == Scale(6)
    assert parse_add_load(b'{"cores": 0.5}', JSON, most=16) == AddLoad(0.5)


@pytest.mark.parametrize(
    ("body", "content_type", "status", "reason"),
    [
        pytest.param(b'{"value": 1}', None, 415, "application/json", id="no content type"),
        pytest.param(b'{"value": 1}', "text/json", 415, "application/json", id="other type"),
        pytest.param(b"x" * 4097, JSON, 413, "over 4096", id="too large"),
        pytest.param(b"\xc3", JSON, 400, "not UTF-8", id="cut UTF-8"),
        pytest.param(b"", JSON, 400, "not JSON", id="empty"),
        pytest.param(b'{"value": Infinity}', JSON, 400, "Infinity is not a JSON number", id="inf"),
        pytest.param(b"[" * 3000 + b"]" * 3000, JSON, 413, "over 4096", id="deep but large"),
        pytest.param(b"[" * 2000 + b"]" * 2000, JSON, 400, "", id="deep"),
        pytest.param(b'"2"', JSON, 400, "not str", id="a string"),
        pytest.param(b'{"Value": 1}', JSON, 400, "unknown field 'Value'", id="wrong case"),
        pytest.param(b'{"value": null}', JSON, 422, "must be a number", id="null"),
        pytest.param(b'{"value": [1]}', JSON, 422, "must be a number", id="list"),
        pytest.param(b'{"value": 1e400}', JSON, 422, "finite", id="overflowing float"),
        pytest.param(b'{"value": ' + b"9" * 400 + b"}", JSON, 422, "finite", id="huge integer"),
    ],
)
def test_a_bad_health_body_is_refused_with_its_status_and_reason(
    body: bytes, content_type: str | None, status: int, reason: str
) -> None:
    with pytest.raises(ControlError) as caught:
        parse_set_health(body, content_type)
    assert caught.value.status == status
    assert reason in caught.value.message


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param(b'{"replicas": 41}', "0..40", id="above the limit"),
        pytest.param(b'{"replicas": -1}', "0..40", id="negative"),
        pytest.param(b'{"replicas": 1.5}', "whole number", id="fraction"),
        pytest.param(b'{"replicas": true}', "must be a number", id="boolean"),
    ],
)
def test_replicas_must_be_a_whole_number_in_range(body: bytes, reason: str) -> None:
    with pytest.raises(ControlError) as caught:
        parse_scale(body, JSON, most=40)
    assert caught.value.status == 422
    assert reason in caught.value.message


@pytest.mark.parametrize("cores", ["0", "-1", "16.5", "1e308"])
def test_cores_must_be_above_zero_and_at_most_the_limit(cores: str) -> None:
    with pytest.raises(ControlError) as caught:
        parse_add_load(b'{"cores": ' + cores.encode() + b"}", JSON, most=16)
    assert caught.value.status == 422


@given(
    body=st.binary(max_size=200) | st.text(max_size=100).map(str.encode),
    content_type=st.sampled_from([JSON, "text/plain", None, "application/json;charset=x"]),
)
def test_any_input_is_a_request_or_a_4xx(body: bytes, content_type: str | None) -> None:
    for parse in (
        lambda: parse_set_health(body, content_type),
        lambda: parse_scale(body, content_type, most=40),
        lambda: parse_add_load(body, content_type, most=16),
    ):
        refused: ControlError | None = None
        try:
            parse()
        except ControlError as error:
            refused = error
        if refused is not None:
            assert 400 <= refused.status < 500
            assert refused.message
