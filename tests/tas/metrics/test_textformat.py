"""The Prometheus text-format parser.

Covers: plain samples, HELP/TYPE and other comments, blank lines, labels with escapes and
trailing commas, millisecond timestamps, NaN/+Inf/-Inf, the name filter, real node-exporter
output, and the errors (with line numbers) for every malformed construct.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tas.metrics.errors import TextFormatError
from tas.metrics.textformat import TextSample, is_series_name, parse_text, series_name_of

NODE_EXPORTER = """\
# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} 555.33
node_cpu_seconds_total{cpu="0",mode="user"} 75.09
# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.
# TYPE node_memory_MemTotal_bytes gauge
node_memory_MemTotal_bytes 2.5276510208e+10
node_pressure_cpu_waiting_seconds_total 18.335125
"""


def test_node_exporter_output_parses_into_samples_in_order() -> None:
    samples = parse_text(NODE_EXPORTER)
    assert [s.name for s in samples] == [
        "node_cpu_seconds_total",
        "node_cpu_seconds_total",
        "node_memory_MemTotal_bytes",
        "node_pressure_cpu_waiting_seconds_total",
    ]
    assert samples[0] == TextSample(
        "node_cpu_seconds_total", {"cpu": "0", "mode": "idle"}, 555.33, None
    )
    assert samples[2].value == 2.5276510208e10


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("up 1", TextSample("up", {}, 1.0, None), id="bare"),
        pytest.param("up 1 1700000000123", TextSample("up", {}, 1.0, 1700000000.123), id="ts"),
        pytest.param("up 1 -5000", TextSample("up", {}, 1.0, -5.0), id="negative-ts"),
        pytest.param("  up\t1  ", TextSample("up", {}, 1.0, None), id="blanks"),
        pytest.param("up{} 1", TextSample("up", {}, 1.0, None), id="empty-labels"),
        pytest.param('up{a="x",} 1', TextSample("up", {"a": "x"}, 1.0, None), id="trailing-comma"),
        pytest.param(
            'up { a = "x" , b="y" } 1',
            TextSample("up", {"a": "x", "b": "y"}, 1.0, None),
            id="spaces",
        ),
        pytest.param(
            r'up{path="C:\\dir",q="say \"hi\"",m="a\nb"} 2',
            TextSample("up", {"path": "C:\\dir", "q": 'say "hi"', "m": "a\nb"}, 2.0, None),
            id="escapes",
        ),
        pytest.param('up{a="}{,= "} 1', TextSample("up", {"a": "}{,= "}, 1.0, None), id="specials"),
        pytest.param('up{a="x"}3', TextSample("up", {"a": "x"}, 3.0, None), id="no-blank-after-}"),
        pytest.param("a:b_c 1e-3", TextSample("a:b_c", {}, 0.001, None), id="colon-name"),
        pytest.param("up +Inf", TextSample("up", {}, math.inf, None), id="plus-inf"),
        pytest.param("up -Inf", TextSample("up", {}, -math.inf, None), id="minus-inf"),
    ],
)
def test_a_sample_line_parses_to_name_labels_value_and_timestamp(
    line: str, expected: TextSample
) -> None:
    assert parse_text(line) == [expected]


def test_nan_parses_as_nan() -> None:
    [sample] = parse_text("up NaN")
    assert math.isnan(sample.value)


def test_comments_blank_lines_and_crlf_are_ignored() -> None:
    text = "# just a comment\r\n\r\n#\n   # indented comment\nup 1\r\n"
    assert parse_text(text) == [TextSample("up", {}, 1.0, None)]


def test_the_name_filter_keeps_only_named_series() -> None:
    samples = parse_text(NODE_EXPORTER, names={"node_memory_MemTotal_bytes"})
    assert [s.name for s in samples] == ["node_memory_MemTotal_bytes"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("up", "expected a value", id="no-value"),
        pytest.param("up 1 2 3", "expected a value", id="extra-token"),
        pytest.param("up one", "bad value", id="word-value"),
        pytest.param("up 1_000", "bad value", id="underscore"),
        pytest.param("up 1 1.5", "bad timestamp", id="float-ts"),
        pytest.param("9up 1", "expected a metric name", id="bad-name"),
        pytest.param("up-x 1", "after the name", id="junk-after-name"),
        pytest.param('up{a="x" 1', "expected ','", id="unclosed-labels"),
        pytest.param('up{a="x} 1', "unterminated", id="unterminated-value"),
        pytest.param("up{a=x} 1", "quoted value", id="unquoted-value"),
        pytest.param('up{a="\\t"} 1', "bad escape", id="bad-escape"),
        pytest.param('up{a="x",a="y"} 1', "appears twice", id="duplicate-label"),
        pytest.param('up{1a="x"} 1', "label name", id="bad-label-name"),
        pytest.param('up{a "x"} 1', "expected '='", id="missing-equals"),
        pytest.param("# TYPE up bogus", "# TYPE needs", id="bad-type"),
        pytest.param("# HELP", "needs a metric name", id="help-without-name"),
    ],
)
def test_malformed_text_is_rejected_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(TextFormatError, match=message) as caught:
        parse_text("ok 1\n" + text)
    assert str(caught.value).startswith("line 2:")


label_values = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)


@given(value=label_values, number=st.floats(allow_nan=False))
def test_any_escaped_label_value_and_float_round_trip(value: str, number: float) -> None:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    [sample] = parse_text(f'm{{l="{escaped}"}} {number!r}')
    assert sample.labels == {"l": value}
    assert sample.value == number


@pytest.mark.parametrize(
    ("line", "series"),
    [
        pytest.param("node_x 1", "node_x", id="sample"),
        pytest.param('  node_x{a="b"} 1', "node_x", id="labelled"),
        pytest.param("# TYPE node_x gauge", None, id="comment"),
        pytest.param("", None, id="blank"),
    ],
)
def test_series_name_of_a_line(line: str, series: str | None) -> None:
    assert series_name_of(line) == series


def test_series_names_follow_the_prometheus_grammar() -> None:
    assert is_series_name("node_health_metric")
    assert not is_series_name("health-metric")
    assert not is_series_name("1abc")
