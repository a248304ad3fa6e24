"""The replay's pure core, without Prometheus: times as users write them, windows cut into
pieces Prometheus answers, the staleness rule on sampled series, and the replay's verdicts on
a hand-made history (the breaker, evictions of labelled pods, --compare's difference).
"""

from __future__ import annotations

import pytest

from tas.policies.model import TASPolicy
from tas.types import MetricName, NodeName
from tas_replay.evaluate import compare, replay_policies
from tas_replay.history import (
    History,
    PodHistory,
    ReplayInputError,
    Window,
    fresh_steps,
    make_window,
    parse_time,
)
from tests.builders import make_policy, rule

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("now", NOW, id="now"),
        pytest.param("-7d", NOW - 7 * 86400, id="days"),
        pytest.param("-1d12h", NOW - 36 * 3600, id="days-and-hours"),
        pytest.param("-2w", NOW - 14 * 86400, id="weeks"),
        pytest.param("-90m", NOW - 5400, id="go-duration"),
        pytest.param("2027-01-15T08:00:00Z", 1_800_000_000.0, id="rfc3339-z"),
        pytest.param("2027-01-15T09:00:00+01:00", 1_800_000_000.0, id="rfc3339-offset"),
        pytest.param("1700000000", 1_700_000_000.0, id="unix-seconds"),
    ],
)
def test_times_are_read_as_users_write_them(text: str, expected: float) -> None:
    assert parse_time(text, now=NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "2027-01-15T08:00:00", "-7x"])
def test_a_time_that_is_not_one_is_refused_with_what_to_write(text: str) -> None:
    with pytest.raises(ReplayInputError):
        parse_time(text, now=NOW)


def test_pieces_cover_every_step_once_within_prometheus_limit() -> None:
    window = Window(0.0, 7 * 86400.0, 30.0)
    pieces = window.pieces()
    times = [p.time(i) for p in pieces for i in range(p.count)]
    assert times == [window.time(i) for i in range(window.count)]
    assert max(p.count for p in pieces) <= 11_000


def test_an_empty_or_oversized_window_is_refused() -> None:
    with pytest.raises(ReplayInputError, match="empty"):
        make_window(100.0, 100.0, 30.0)
    with pytest.raises(ReplayInputError, match="raise --step"):
        make_window(0.0, 86400.0 * 30, 1.0)


def test_a_sample_older_than_the_max_age_is_missing_at_the_step() -> None:
    window = Window(0.0, 90.0, 30.0)
    values = [(0.0, 1.0), (30.0, 1.0), (60.0, 1.0), (90.0, float("nan"))]
    sampled = {0.0: 0.0, 30.0: 25.0, 60.0: 25.0, 90.0: 90.0}
    assert fresh_steps(window, values, sampled, max_age=30.0) == [1.0, 1.0, None, None]


def test_a_pod_recreated_on_another_node_is_on_each_for_its_own_steps() -> None:
    pod = PodHistory("default", "db-0")
    for index in (0, 1, 2):
        pod.add(index, NodeName("a"))
    for index in (5, 6):
        pod.add(index, NodeName("b"))
    assert pod.spans == [(0, 2, "a"), (5, 6, "b")]
    assert [pod.node_at(i) for i in range(8)] == ["a", "a", "a", None, None, "b", "b", None]
    assert pod.next_node(3) == "b"


def policy(target: float) -> TASPolicy:
    return make_policy("health", deschedule=[rule("health_metric", "GreaterThan", target)])


def history(values: dict[str, list[float | None]]) -> History:
    count = len(next(iter(values.values())))
    window = Window(0.0, 30.0 * (count - 1), 30.0)
    pods = [
        PodHistory("default", "labelled", [(0, count - 1, NodeName("a"))], policy="health"),
        PodHistory("default", "unlabelled", [(0, count - 1, NodeName("a"))]),
        PodHistory("other", "elsewhere", [(0, count - 1, NodeName("a"))], policy="health"),
    ]
    metric = {NodeName(n): [None if x is None else float(x) for x in v] for n, v in values.items()}
    return History(window, {MetricName("health_metric"): metric}, pods)


def test_only_pods_labelled_with_the_policy_in_its_namespace_would_be_evicted() -> None:
    replay = replay_policies([policy(0.5)], history({"a": [0, 1, 1, 0], "b": [0, 0, 0, 0]}))
    result = replay.policies["default/health"]
    assert [(e["pod"], e["time"]) for e in result.would_evict] == [("default/labelled", 30.0)]
    assert result.nodes[NodeName("a")].intervals == [[30.0, 90.0]]


def test_the_breaker_lets_no_node_newly_violate_while_most_do() -> None:
    values: dict[str, list[float | None]] = {
        "a": [1, 1, 1, 0],
        "b": [0, 1, 1, 0],
        "c": [0, 1, 1, 0],
        "d": [0, 0, 0, 0],
    }
    result = replay_policies([policy(0.5)], history(values)).policies["default/health"]
    assert result.breaker_open_seconds == 60.0
    assert set(result.nodes) == {NodeName("a")}  # a was violating already: it stays
    assert [e["time"] for e in result.would_evict] == [0.0]


def test_missing_values_never_violate() -> None:
    result = replay_policies([policy(0.5)], history({"a": [None, None, 1, None]}))
    assert result.policies["default/health"].nodes[NodeName("a")].intervals == [[60.0, 90.0]]


def test_compare_reports_both_versions_per_policy() -> None:
    recorded = history({"a": [0, 0.65, 0.65, 0]})
    (diff,) = compare(
        replay_policies([policy(0.6)], recorded), replay_policies([policy(0.7)], recorded)
    )
    assert diff.nodes == (1, 0)
    assert diff.violating_seconds == (60.0, 0.0)
    assert diff.evictions == (1, 0)
