"""Every shipped example runs a cycle: each DeschedulerPolicy under deploy/descheduler/ and
each KubeDescheduler under deploy/descheduler/kubedescheduler/ (expanded), on an in-memory
cluster with busy and idle nodes, fresh telemetry, the metrics server's usage and a Prometheus
(an `httpx.MockTransport` answering the query API), in Predictive mode: the cycle runs (not
skipped), every plugin it enables does its work without logging an error, and nothing is
evicted.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client import CollectorRegistry

from descheduler.assemble import assemble_descheduler
from descheduler.config import DeschedulerConfig, load_config_file, parse_config
from descheduler.cycle import Mode
from descheduler.kubedescheduler import expand
from descheduler.self_metrics import DeschedulerMetrics
from descheduler.usage import PrometheusQueries
from tas.metrics.static import StaticMetricView
from tas.types import Namespace, NodeName
from tests.descheduler.builders import FakeClock, cluster_with, make_node, make_pod, replace
from tests.instrumented_cluster import InstrumentedCluster

EXAMPLES = Path(__file__).parents[2] / "deploy" / "descheduler"
NODES = ("worker-1", "worker-2", "worker-3")
SCHEDULABLE = {"kubevirt.io/schedulable": "true"}


def busy_cluster() -> InstrumentedCluster:
    pods = tuple(
        make_pod(
            f"app-{i}",
            node="worker-1",
            owner=f"app-{i % 3}",
            cpu=1.0,
            labels={"rotate": "daily", "tier": "web"},
            apply=replace(container_restarts=20, container_images=("app:1",)),
        )
        for i in range(6)
    )
    cluster = cluster_with(*(make_node(n, labels=SCHEDULABLE) for n in NODES), pods=pods)
    cluster.set_extras(
        node_metrics={
            NodeName("worker-1"): {"cpu": 7.0, "memory": 1e9},
            NodeName("worker-2"): {"cpu": 0.5, "memory": 1e9},
            NodeName("worker-3"): {"cpu": 0.5, "memory": 1e9},
        },
        pod_metrics={
            (Namespace("default"), f"app-{i}"): {"cpu": 1.0, "memory": 1e8} for i in range(6)
        },
    )
    return cluster


def prometheus(request: httpx.Request) -> httpx.Response:
    values = {"worker-1": 0.9, "worker-2": 0.2, "worker-3": 0.1}
    body = {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                {"metric": {"instance": node}, "value": [0, str(value)]}
                for node, value in values.items()
            ],
        },
    }
    return httpx.Response(200, content=json.dumps(body))


def run_one_cycle(config: DeschedulerConfig, caplog: pytest.LogCaptureFixture) -> None:
    cluster = busy_cluster()
    telemetry = {
        signal: {"worker-1": 0.9, "worker-2": 0.1, "worker-3": 0.2}
        for signal in ("cpu_utilization", "cpu_pressure", "memory_pressure", "health_metric")
    }
    descheduler = assemble_descheduler(
        config=config,
        cluster=cluster,
        metric_view=StaticMetricView(telemetry),
        policies=dict,
        mode=Mode.PREDICTIVE,
        clock=FakeClock(),
        metrics=DeschedulerMetrics(registry=CollectorRegistry()),
        prometheus=functools.partial(PrometheusQueries, transport=httpx.MockTransport(prometheus)),
    )
    with caplog.at_level(logging.INFO):
        report = descheduler.run_cycle()
    assert report.skipped is None
    assert cluster.evictions == ()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_policy_example_runs_a_cycle(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    run_one_cycle(load_config_file(path), caplog)


@pytest.mark.parametrize(
    "path", sorted((EXAMPLES / "kubedescheduler").glob("*.yaml")), ids=lambda p: p.name
)
def test_every_kubedescheduler_example_runs_a_cycle(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    policy, _, _ = expand(yaml.safe_load(path.read_text()), prometheus_url="http://prometheus")
    run_one_cycle(parse_config(policy), caplog)


def test_the_busy_node_would_be_relieved_by_the_request_based_example() -> None:
    cluster = busy_cluster()
    descheduler = assemble_descheduler(
        config=load_config_file(EXAMPLES / "low-node-utilization.yaml"),
        cluster=cluster,
        metric_view=StaticMetricView({}),
        policies=dict,
        mode=Mode.PREDICTIVE,
        clock=FakeClock(),
    )
    report = descheduler.run_cycle()
    # worker-1 requests 6 of 8 cores (75% > 50%): pods would move until it is at 50%.
    assert [d.node for d in report.by_result("dry-run")] == ["worker-1", "worker-1"]
