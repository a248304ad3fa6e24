"""Per-pod usage from a real Prometheus, fed by a real node-exporter's textfile collector that
exposes kubelet-style `container_*` counters with `namespace`, `pod` and `container` labels.

Covered: CPU usage as a rate per pod, summed over its containers (the pod-level series without
a container left out); container CPU pressure where exported, nothing for pods without it; a
pod whose series disappear is gone; values older than max age count as missing; a Prometheus
that cannot be reached keeps the last values until they go stale, then fails; the descheduler's
LoadAware source turns cores into shares of the pod's node (memory signals from requests), and
leaves out pods without a value, each told at debug level with the query and why; a Prometheus
without any cAdvisor series is warned about once. Access is the metric view's (`open_pod_usage`
with the metrics config): a Prometheus served over TLS with a private CA is read with the
config's `ca_file` (and refused without it), and the bearer token file is read again on every
query.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from descheduler.state import CycleState
from descheduler.usage import pod_usage_from
from tas.adapters.metrics.pod_usage import SERIES, PrometheusPodUsage, open_pod_usage
from tas.adapters.metrics.prometheus import PrometheusClient
from tas.cluster.model import Node, Pod
from tas.metrics.config import MetricsConfig, load_metrics_config
from tas.metrics.errors import MetricFetchError
from tas.types import Namespace, NodeName
from tests.builders import ManualClock
from tests.certificates import CertificateAuthority
from tests.processes import Process
from tests.tas.adapters.metrics.processes import node_exporter, prometheus

pytestmark = pytest.mark.integration

#: namespace, pod, container -> cores used (a counter rising at that rate).
CORES = {
    ("default", "web-1", "app"): 1.5,
    ("default", "web-1", "sidecar"): 0.5,
    ("default", "web-2", "app"): 0.25,
    ("batch", "job-1", "main"): 1.0,
}
#: Container CPU pressure (share of time waiting), exported for web-1 only (KubeletPSI).
PRESSURE = {("default", "web-1", "app"): 0.2}
WINDOW_SECONDS = 3


@dataclass
class Feed:
    path: Path
    started: float
    pods: set[tuple[str, str]]
    stop: threading.Event

    def write(self) -> None:
        elapsed = time.time() - self.started
        lines = []
        for (namespace, pod, container), cores in CORES.items():
            if (namespace, pod) not in self.pods:
                continue
            labels = f'namespace="{namespace}",pod="{pod}",container="{container}"'
            lines.append(f"container_cpu_usage_seconds_total{{{labels}}} {cores * elapsed:.3f}")
            # The pod-level cgroup series (container=""), as cAdvisor exports it: not summed.
            lines.append(
                f'container_cpu_usage_seconds_total{{namespace="{namespace}",pod="{pod}",'
                f'container=""}} {100 * elapsed:.3f}'
            )
        for (namespace, pod, container), share in PRESSURE.items():
            if (namespace, pod) in self.pods:
                labels = f'namespace="{namespace}",pod="{pod}",container="{container}"'
                lines.append(
                    f"container_pressure_cpu_waiting_seconds_total{{{labels}}} "
                    f"{share * elapsed:.3f}"
                )
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text("\n".join(lines) + "\n")
        temporary.replace(self.path)

    def run(self) -> None:
        while not self.stop.is_set():
            self.write()
            self.stop.wait(0.25)


@dataclass
class Setup:
    prometheus: Process
    feed: Feed
    exporter: Process


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("pod-usage")
    textfiles = root / "textfile"
    textfiles.mkdir()
    feed = Feed(
        textfiles / "kubelet.prom",
        time.time() - 1000,
        {("default", "web-1"), ("default", "web-2"), ("batch", "job-1")},
        threading.Event(),
    )
    feed.write()
    thread = threading.Thread(target=feed.run, daemon=True)
    thread.start()
    exporter = node_exporter(textfiles, root / "exporter.log")
    exporter.start()
    server = prometheus({"node-a": exporter.url.removeprefix("http://")}, root)
    try:
        server.start()
        yield Setup(server, feed, exporter)
    finally:
        feed.stop.set()
        thread.join(5)
        server.stop()
        exporter.stop()


OPENED: list[PrometheusPodUsage] = []


@pytest.fixture(autouse=True)
def close_sources() -> Iterator[None]:
    yield
    while OPENED:
        OPENED.pop().close()


def source(setup: Setup, **overrides: object) -> PrometheusPodUsage:
    settings: dict[str, object] = {"max_age": 30.0}
    settings.update(overrides)
    usage = PrometheusPodUsage(
        PrometheusClient(setup.prometheus.url, client=httpx.Client(timeout=5.0)),
        rate_window=f"{WINDOW_SECONDS}s",
        **settings,  # type: ignore[arg-type]
    )
    OPENED.append(usage)
    return usage


Usage = dict[tuple[str, str], dict[str, float]]


def eventually_fetch(
    usage: PrometheusPodUsage, check: Callable[[Usage], bool], timeout: float = 30.0
) -> Usage:
    deadline = time.monotonic() + timeout
    found: Usage = {}
    while time.monotonic() < deadline:
        found = usage.fetch()
        if check(found):
            return found
        time.sleep(0.5)
    pytest.fail(f"not seen in {timeout}s: {found}")


def close_to(found: Usage, pod: tuple[str, str], resource: str, expected: float) -> bool:
    value = found.get(pod, {}).get(resource)
    return value is not None and abs(value - expected) <= 0.15 * expected


def test_cpu_usage_is_the_rate_per_pod_summed_over_its_containers(setup: Setup) -> None:
    # Once the rate window holds enough scrapes, every pod's rate is its true usage.
    usage = source(setup)
    eventually_fetch(
        usage,
        lambda f: (
            close_to(f, ("default", "web-1"), "cpu", 2.0)
            and close_to(f, ("default", "web-2"), "cpu", 0.25)
            and close_to(f, ("batch", "job-1"), "cpu", 1.0)
        ),
    )


def test_container_pressure_is_read_where_exported(setup: Setup) -> None:
    usage = source(setup)
    found = eventually_fetch(
        usage, lambda f: close_to(f, ("default", "web-1"), "cpu_pressure", 0.2)
    )
    assert "cpu_pressure" not in found[("default", "web-2")]


def test_values_older_than_max_age_count_as_missing(setup: Setup) -> None:
    usage = source(setup, clock=ManualClock(time.time() + 120.0))
    assert usage.fetch() == {}


def test_an_unreachable_prometheus_keeps_the_last_values_until_they_go_stale(setup: Setup) -> None:
    clock = ManualClock(time.time())
    usage = source(setup, clock=clock)
    eventually_fetch(usage, lambda f: ("default", "web-1") in f)
    usage.prometheus.query_url = "http://127.0.0.1:9/api/v1/query"  # nothing listens there
    assert ("default", "web-1") in usage.fetch()
    clock.advance(120.0)
    with pytest.raises(MetricFetchError):
        usage.fetch()


def test_loadaware_gets_each_pods_cpu_as_a_share_of_its_node(setup: Setup) -> None:
    usage = source(setup)
    eventually_fetch(usage, lambda f: close_to(f, ("default", "web-1"), "cpu", 2.0))
    node = Node(NodeName("node-a"), allocatable={"cpu": 8.0, "memory": 8.0 * 1024**3})
    pods = [
        Pod(
            Namespace("default"),
            "web-1",
            node_name=NodeName("node-a"),
            requests={"memory": 1024.0**3},
        ),
        Pod(Namespace("default"), "unmeasured", node_name=NodeName("node-a")),
    ]
    state = CycleState(
        nodes={node.name: node}, pods=pods, pdbs=[], policies={}, metrics={}, now=datetime.now(UTC)
    )
    shares = pod_usage_from(usage)(state)
    assert set(shares) == {("default", "web-1")}
    web = shares[(Namespace("default"), "web-1")]
    assert web["cpu_utilization"] == pytest.approx(25.0, rel=0.15)
    assert web["cpu_combined"] == web["cpu_pressure"] == web["cpu_utilization"]
    assert web["memory_utilization"] == pytest.approx(12.5)


def cycle_state(*pods: Pod) -> CycleState:
    node = Node(NodeName("node-a"), allocatable={"cpu": 8.0, "memory": 8.0 * 1024**3})
    return CycleState(
        nodes={node.name: node}, pods=pods, pdbs=[], policies={}, metrics={}, now=datetime.now(UTC)
    )


def test_a_pod_without_cpu_usage_is_told_at_debug_level_with_the_query_and_why(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    usage = source(setup)
    eventually_fetch(usage, lambda f: ("default", "web-1") in f)
    state = cycle_state(
        Pod(Namespace("default"), "web-1", node_name=NodeName("node-a")),
        Pod(Namespace("default"), "unmeasured", node_name=NodeName("node-a")),
    )
    with caplog.at_level(logging.DEBUG, logger="descheduler.usage"):
        pod_usage_from(usage)(state)
    told = [r.getMessage() for r in caplog.records if r.name == "descheduler.usage"]
    assert len(told) == 1
    assert "default/unmeasured" in told[0]
    assert usage.cpu_query in told[0]
    assert "no series for this pod" in told[0]


def empty_answers(request: httpx.Request) -> httpx.Response:
    return httpx.Response(
        200, json={"status": "success", "data": {"resultType": "vector", "result": []}}
    )


def test_a_prometheus_without_cadvisor_series_is_told_once_naming_the_query(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # deploy/metrics-pipeline scrapes no kubelet: per-pod usage was absent, and said so only
    # at debug level.
    usage = open_pod_usage(
        "http://prom.test",
        config=MetricsConfig(),
        max_age=30.0,
        transport=httpx.MockTransport(empty_answers),
    )
    OPENED.append(usage)
    with caplog.at_level(logging.DEBUG):
        usage.fetch()
        usage.fetch()
        pod_usage_from(usage)(
            cycle_state(Pod(Namespace("default"), "web-1", node_name=NodeName("node-a")))
        )
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert usage.cpu_query in warnings[0]
    assert "cAdvisor" in warnings[0]
    debug = [r.getMessage() for r in caplog.records if r.name == "descheduler.usage"]
    assert "answers no series at all" in debug[0]
    assert "default/web-1" in debug[0]


def test_a_pod_whose_series_disappear_is_gone(setup: Setup) -> None:
    usage = source(setup)
    eventually_fetch(usage, lambda f: ("batch", "job-1") in f)
    setup.feed.pods.discard(("batch", "job-1"))
    eventually_fetch(usage, lambda f: ("batch", "job-1") not in f and ("default", "web-1") in f)


def test_open_pod_usage_builds_a_source_that_answers(setup: Setup) -> None:
    usage = open_pod_usage(setup.prometheus.url, config=MetricsConfig(), max_age=30.0)
    OPENED.append(usage)
    eventually_fetch(usage, lambda f: ("default", "web-1") in f)


@dataclass
class TlsPrometheus:
    server: Process
    ca_file: Path


@pytest.fixture(scope="module")
def tls_prometheus(
    setup: Setup, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TlsPrometheus]:
    """A second real Prometheus, scraping the same exporter, served only over HTTPS with a
    certificate from a CA no system trusts."""
    root = tmp_path_factory.mktemp("tls-prometheus")
    ca = CertificateAuthority(root, "tas-test-ca")
    served = ca.issue("prometheus", server=True)
    server = prometheus(
        {"node-a": setup.exporter.url.removeprefix("http://")},
        root,
        tls=(ca.files.cert, served.cert, served.key),
    )
    server.start()
    try:
        yield TlsPrometheus(server, ca.files.cert)
    finally:
        server.stop()


def test_a_prometheus_with_a_private_ca_is_read_with_the_metrics_configs_ca_file(
    tls_prometheus: TlsPrometheus, tmp_path: Path
) -> None:
    # The fix: per-pod usage used to build its own client, which ignored ca_file, so a
    # Prometheus behind a private CA failed every query while the metric view worked.
    config_file = tmp_path / "metrics.yaml"
    config_file.write_text(
        f"prometheus:\n  ca_file: {tls_prometheus.ca_file}\n  rate_window: {WINDOW_SECONDS}s\n"
    )
    usage = open_pod_usage(
        tls_prometheus.server.url, config=load_metrics_config(config_file), max_age=30.0
    )
    OPENED.append(usage)
    eventually_fetch(usage, lambda f: close_to(f, ("default", "web-1"), "cpu", 2.0))


def test_without_the_ca_file_a_private_ca_prometheus_is_refused(
    tls_prometheus: TlsPrometheus,
) -> None:
    # The other half: the test above passes because of ca_file, not because TLS is off.
    usage = open_pod_usage(tls_prometheus.server.url, config=MetricsConfig(), max_age=30.0)
    OPENED.append(usage)
    with pytest.raises(MetricFetchError, match="no fresh per-pod CPU usage"):
        usage.fetch()


def test_the_bearer_token_file_is_read_again_for_every_query(tmp_path: Path) -> None:
    # Service-account tokens rotate on disk: a token read once at startup expires in an hour.
    token = tmp_path / "token"
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization"))
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "vector", "result": []}}
        )

    token.write_text("first\n")
    usage = open_pod_usage(
        "https://prom.test",
        config=MetricsConfig(bearer_token_file=token),
        max_age=30.0,
        transport=httpx.MockTransport(answer),
    )
    OPENED.append(usage)
    usage.fetch()
    token.write_text("rotated\n")
    usage.fetch()
    queries = 2 * len(SERIES)  # a rate and a sample-time query per series
    assert seen == ["Bearer first"] * queries + ["Bearer rotated"] * queries
