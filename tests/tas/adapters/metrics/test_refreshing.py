"""The refreshing metric view, over real `.prom` files and an injected clock.

Covers: fresh finite values keyed by the policy's metric name; staleness judged at read time
against the sample time (no refresh needed); a failed fetch keeping values until they go stale;
a node vanishing from a successful answer; wanted names registered and released; reads that
reuse one prebuilt mapping while nothing expires; failures logged once per state change and
exported as `tas_metric_fetch_errors_total` / `tas_metric_age_seconds`; for each wanted metric
the limit in force (`tas_metric_max_age_seconds`) and the nodes with a fresh value
(`tas_metric_fresh_nodes`, 0 for a metric no node has), as of the scrape; the background thread.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from tas.adapters.metrics import open_metric_view
from tas.adapters.metrics.textfile import TextfileSource
from tas.metrics import RefreshingMetricView
from tas.types import MetricName
from tests.builders import ManualClock
from tests.waiting import eventually

HEALTH = MetricName("health_metric")
LOAD = MetricName("load")


def put(directory: Path, node: str, text: str, mtime: float) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{node}.prom"
    path.write_text(text)
    os.utime(path, (mtime, mtime))


def make_view(
    directory: Path, clock: ManualClock, registry: CollectorRegistry | None = None
) -> RefreshingMetricView:
    view = RefreshingMetricView(
        TextfileSource(directory), sync_period=1.0, max_age=30.0, clock=clock, registry=registry
    )
    view.set_wanted([HEALTH])
    return view


def test_fresh_values_are_served_under_the_policys_metric_name(tmp_path: Path) -> None:
    clock = ManualClock(10_000.0)
    put(tmp_path, "a", "node_health_metric 0\nnode_load 3\n", mtime=clock.epoch)
    put(tmp_path, "b", "node_health_metric 2\n", mtime=clock.epoch)
    view = make_view(tmp_path, clock)
    assert not view.ready
    assert view.columns() == {}
    view.refresh_once()
    assert view.ready
    assert view.columns() == {HEALTH: {"a": 0.0, "b": 2.0}}


def test_a_view_is_not_ready_until_a_refresh_asked_for_every_wanted_metric(
    tmp_path: Path,
) -> None:
    """Policies that arrive after the first refresh (a component starting while the cluster's
    policies load) keep it unready until their metrics were fetched: a ready extender answers
    with the values its policies need."""
    clock = ManualClock(10_000.0)
    put(tmp_path, "a", "node_health_metric 2\nnode_load 3\n", mtime=clock.epoch)
    view = RefreshingMetricView(TextfileSource(tmp_path), sync_period=1.0, clock=clock)
    view.refresh_once()  # no policies yet: nothing wanted
    assert view.ready
    view.set_wanted([HEALTH, LOAD])
    assert not view.ready
    view.refresh_once()
    assert view.ready
    assert view.columns() == {HEALTH: {"a": 2.0}, LOAD: {"a": 3.0}}
    view.set_wanted([LOAD])  # a policy removed: nothing new to fetch
    assert view.ready


def test_non_finite_values_are_missing(tmp_path: Path) -> None:
    clock = ManualClock(10_000.0)
    put(tmp_path, "a", "node_health_metric NaN\n", mtime=clock.epoch)
    put(tmp_path, "b", "node_health_metric +Inf\n", mtime=clock.epoch)
    put(tmp_path, "c", "node_health_metric 1\n", mtime=clock.epoch)
    view = make_view(tmp_path, clock)
    view.refresh_once()
    assert view.columns() == {HEALTH: {"c": 1.0}}


def test_a_value_older_than_max_age_reads_as_missing_without_a_refresh(tmp_path: Path) -> None:
    clock = ManualClock(10_000.0)
    put(tmp_path, "a", "node_health_metric 0\n", mtime=clock.epoch - 20)
    put(tmp_path, "b", "node_health_metric 2\n", mtime=clock.epoch)
    view = make_view(tmp_path, clock)
    view.refresh_once()
    clock.advance(10)  # a is exactly 30 s old: still fresh
    assert view.columns() == {HEALTH: {"a": 0.0, "b": 2.0}}
    clock.advance(0.5)
    assert view.columns() == {HEALTH: {"b": 2.0}}
    clock.advance(20)
    assert view.columns() == {HEALTH: {}}


def test_reads_share_one_mapping_until_a_value_expires(tmp_path: Path) -> None:
    clock = ManualClock(10_000.0)
    put(tmp_path, "a", "node_health_metric 0\n", mtime=clock.epoch)
    view = make_view(tmp_path, clock)
    view.refresh_once()
    first = view.columns()
    clock.advance(29)
    assert view.columns() is first
    clock.advance(2)
    assert view.columns() is not first


def test_a_failed_fetch_keeps_the_last_values_until_they_go_stale(tmp_path: Path) -> None:
    clock = ManualClock(10_000.0)
    directory = tmp_path / "metrics"
    put(directory, "a", "node_health_metric 1\n", mtime=clock.epoch)
    view = make_view(directory, clock)
    view.refresh_once()
    shutil.rmtree(directory)
    clock.advance(20)
    view.refresh_once()
    assert view.columns() == {HEALTH: {"a": 1.0}}
    assert str(directory) in view.failing
    clock.advance(11)
    view.refresh_once()
    assert view.columns() == {HEALTH: {}}


def test_a_node_missing_from_a_successful_answer_leaves_the_view(tmp_path: Path) -> None:
    clock = ManualClock(10_000.0)
    put(tmp_path, "a", "node_health_metric 0\n", mtime=clock.epoch)
    put(tmp_path, "b", "node_health_metric 2\n", mtime=clock.epoch)
    view = make_view(tmp_path, clock)
    view.refresh_once()
    (tmp_path / "b.prom").unlink()
    view.refresh_once()
    assert view.columns() == {HEALTH: {"a": 0.0}}


def test_wanted_names_are_fetched_and_released_as_policies_change(tmp_path: Path) -> None:
    clock = ManualClock(10_000.0)
    put(tmp_path, "a", "node_health_metric 0\nnode_load 3\n", mtime=clock.epoch)
    view = make_view(tmp_path, clock)
    view.set_wanted([HEALTH, LOAD])
    view.refresh_once()
    assert view.columns() == {HEALTH: {"a": 0.0}, LOAD: {"a": 3.0}}
    view.set_wanted([LOAD])
    view.refresh_once()
    assert view.columns() == {LOAD: {"a": 3.0}}


def test_a_failure_is_logged_once_when_it_starts_and_once_when_it_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock(10_000.0)
    registry = CollectorRegistry()
    put(tmp_path, "a", "node_health_metric 1\n", mtime=clock.epoch)
    view = make_view(tmp_path, clock, registry)
    view.refresh_once()
    put(tmp_path, "a", "node_health_metric {\n", mtime=clock.epoch + 1)
    with caplog.at_level(logging.INFO, logger="tas.metrics"):
        for _ in range(3):
            view.refresh_once()
        put(tmp_path, "a", "node_health_metric 2\n", mtime=clock.epoch + 2)
        view.refresh_once()
        view.refresh_once()
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "textfile fetch of node a failed" in messages[0]
    assert "textfile fetch of node a works again" in messages[1]
    errors = registry.get_sample_value(
        "tas_metric_fetch_errors_total", {"source": "textfile", "target": "node a"}
    )
    assert errors == 3.0


def test_the_age_of_each_metrics_oldest_value_is_exported(tmp_path: Path) -> None:
    clock = ManualClock(10_000.0)
    registry = CollectorRegistry()
    put(tmp_path, "a", "node_health_metric 0\n", mtime=clock.epoch - 7)
    put(tmp_path, "b", "node_health_metric 0\n", mtime=clock.epoch - 2)
    view = make_view(tmp_path, clock, registry)
    view.refresh_once()
    clock.advance(100)  # stale values are still counted: the age tells how stale
    age = registry.get_sample_value("tas_metric_age_seconds", {"metric": "health_metric"})
    assert age == 107.0


def test_each_wanted_metric_s_limit_and_fresh_node_count_are_exported_as_of_the_scrape(
    tmp_path: Path,
) -> None:
    clock = ManualClock(10_000.0)
    registry = CollectorRegistry()
    put(tmp_path, "a", "node_health_metric 0\n", mtime=clock.epoch - 2)
    put(tmp_path, "b", "node_health_metric 0\n", mtime=clock.epoch - 40)  # already stale
    view = make_view(tmp_path, clock, registry)
    view.set_wanted([HEALTH, LOAD])  # no node has `load`

    def sample(name: str, metric: str) -> float | None:
        return registry.get_sample_value(name, {"metric": metric})

    view.refresh_once()
    assert sample("tas_metric_fresh_nodes", "health_metric") == 1
    assert sample("tas_metric_fresh_nodes", "load") == 0
    assert sample("tas_metric_max_age_seconds", "health_metric") == 30
    assert sample("tas_metric_max_age_seconds", "load") == 30
    assert sample("tas_metric_age_seconds", "load") is None  # no value held: no age
    clock.advance(29)  # a's value is now 31 s old: no refresh needed to count it missing
    assert sample("tas_metric_fresh_nodes", "health_metric") == 0
    view.set_wanted([LOAD])
    assert sample("tas_metric_fresh_nodes", "health_metric") is None  # no longer wanted


def test_the_background_thread_picks_up_a_new_value_within_a_sync_period(tmp_path: Path) -> None:
    put(tmp_path, "a", "node_health_metric 0\n", mtime=time.time())
    view = open_metric_view(f"textfile:{tmp_path}", sync_period=0.05)
    view.set_wanted([HEALTH])
    view.start()
    try:
        eventually(lambda: view.columns() == {HEALTH: {"a": 0.0}}, what="the first value")
        put(tmp_path, "a", "node_health_metric 2\n", mtime=time.time())
        eventually(lambda: view.columns() == {HEALTH: {"a": 2.0}}, what="the new value")
    finally:
        view.stop()


def test_by_default_a_slow_pipelines_values_stay_fresh_until_they_miss_two_updates(
    tmp_path: Path,
) -> None:
    """Prometheus scraping every 30 s and answering 30 s late: every value is 30-60 s old in
    normal operation. The default limit (30 s at a 1 s sync period) would call the fleet
    missing most of the time, so dontschedule would fail open while nothing is wrong."""
    clock = ManualClock(10_000.0)
    view = RefreshingMetricView(TextfileSource(tmp_path), sync_period=1.0, clock=clock)
    view.set_wanted([HEALTH])
    assert view.max_age == 30.0
    assert view.follows_cadence
    scraped = clock.epoch - 30.0  # arrives 30 s old
    for period in range(7):  # three and a half minutes of normal operation, read every 5 s
        put(tmp_path, "a", "node_health_metric 1\n", mtime=scraped)
        for _ in range(6):
            view.refresh_once()
            if period > 0:  # the cadence is known once a value has been replaced once
                assert view.columns() == {HEALTH: {"a": 1.0}}, clock.epoch - scraped
            clock.advance(5)
        scraped += 30.0
    # Learned: values arrive 30 s old every 30 s; stale after two missed scrapes.
    assert view.max_age_of(HEALTH) == pytest.approx(30.0 + 3 * 30.0, abs=5.0)
    # The exporter stops: the last value is dropped once it has missed two scrapes.
    last = scraped - 30.0
    clock.epoch = last + 30.0 + 2 * 30.0 + 25.0
    view.refresh_once()
    assert view.columns() == {HEALTH: {"a": 1.0}}
    clock.epoch = last + 30.0 + 3 * 30.0 + 10.0
    assert view.columns() == {HEALTH: {}}


def test_a_max_age_given_by_the_operator_is_kept_whatever_the_cadence(tmp_path: Path) -> None:
    clock = ManualClock(10_000.0)
    view = make_view(tmp_path, clock)  # max_age=30.0, as --metric-max-age 30 gives
    scraped = clock.epoch - 20.0
    for _ in range(3):
        put(tmp_path, "a", "node_health_metric 1\n", mtime=scraped)
        view.refresh_once()
        clock.advance(30)
        scraped += 30.0
    assert view.max_age_of(HEALTH) == 30.0
    clock.epoch = scraped - 30.0 + 30.5
    assert view.columns() == {HEALTH: {}}


def test_a_writer_that_pauses_is_no_cadence_to_wait_for(tmp_path: Path) -> None:
    """A textfile rewritten after 100 s (an event, not a scrape rhythm) does not stretch the
    limit: the other node's value, unchanged for as long, is stale at 30 s as before."""
    clock = ManualClock(10_000.0)
    view = RefreshingMetricView(TextfileSource(tmp_path), sync_period=1.0, clock=clock)
    view.set_wanted([HEALTH])
    for node in ("a", "b"):
        put(tmp_path, node, "node_health_metric 0\n", mtime=clock.epoch)
    view.refresh_once()
    clock.advance(100)
    put(tmp_path, "a", "node_health_metric 0\n", mtime=clock.epoch)
    view.refresh_once()
    assert view.max_age_of(HEALTH) == 30.0
    assert view.columns() == {HEALTH: {"a": 0.0}}
