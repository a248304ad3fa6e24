"""Which node a Prometheus series is about (`tas.metrics.node_identity`), without processes.

Covers: an explicit node label (configured, `node`, `kubernetes_node`) named before `instance`;
`instance` by node name, and by a node's InternalIP, ExternalIP or Hostname (IPv6 in brackets,
in any spelling); other address types not used; an address two nodes share naming neither
(warned once, counted); an IP no node has dropped (counted, the instance at debug level); a
host name no node has, and any instance without the nodes' addresses, kept as the node name;
an address that moves to another node followed at the next answer; and through the Prometheus
source, a kube-prometheus-stack answer (`instance` = `IP:9100`, no node label) landing on its
nodes.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from tas.adapters.metrics.prometheus import PrometheusClient, PrometheusSource
from tas.metrics.node_identity import NodeIdentity
from tas.metrics.source import Sample
from tas.types import MetricName, NodeName

CPU_PRESSURE = MetricName("cpu_pressure")

Book = Mapping[NodeName, Collection[tuple[str, str]]]


def addresses(*pairs: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return pairs


#: Two nodes as a kubeadm cluster on dual-stack reports them.
NODES: Book = {
    NodeName("worker-1"): addresses(
        ("InternalIP", "10.0.0.11"),
        ("InternalIP", "fd00:10::11"),
        ("ExternalIP", "203.0.113.11"),
        ("Hostname", "worker-1.example.internal"),
        ("InternalDNS", "ip-10-0-0-11.internal"),
    ),
    NodeName("worker-2"): addresses(("InternalIP", "10.0.0.12"), ("Hostname", "worker-2")),
}


class AddressBook:
    """The nodes' addresses as a component's Node cache hands them out: one object until an
    address changes (`tas.adapters.cluster.kubernetes.KubernetesCluster.node_addresses`)."""

    def __init__(self, book: Book) -> None:
        self.book: Mapping[NodeName, Collection[tuple[str, str]]] = dict(book)

    def node_addresses(self) -> Mapping[NodeName, Collection[tuple[str, str]]]:
        return self.book

    def replace(self, book: Book) -> None:
        self.book = dict(book)


def identity(
    book: Book | None = NODES, *, registry: CollectorRegistry | None = None, **options: Any
) -> NodeIdentity:
    return NodeIdentity(
        addresses=AddressBook(book) if book is not None else None, registry=registry, **options
    )


def dropped(registry: CollectorRegistry, reason: str) -> float:
    value = registry.get_sample_value("tas_metric_series_dropped_total", {"reason": reason})
    return value or 0.0


@pytest.mark.parametrize(
    ("labels", "node"),
    [
        pytest.param({"instance": "10.0.0.11:9100"}, "worker-1", id="internal-ip"),
        pytest.param({"instance": "203.0.113.11:9100"}, "worker-1", id="external-ip"),
        pytest.param({"instance": "worker-1.example.internal:9100"}, "worker-1", id="hostname"),
        pytest.param({"instance": "[fd00:10::11]:9100"}, "worker-1", id="ipv6-brackets"),
        pytest.param({"instance": "[fd00:10:0:0::11]:9100"}, "worker-1", id="ipv6-spelling"),
        pytest.param({"instance": "10.0.0.12"}, "worker-2", id="ip-without-port"),
        pytest.param({"instance": "worker-2:9100"}, "worker-2", id="node-name"),
        pytest.param(
            {"instance": "10.0.0.11:9100", "node": "worker-2"}, "worker-2", id="node-label-first"
        ),
        pytest.param(
            {"instance": "10.0.0.11:8080", "kubernetes_node": "worker-2"},
            "worker-2",
            id="kubernetes-node-label-first",
        ),
        pytest.param(
            {"instance": "some-exporter:9100"}, "some-exporter", id="unknown-name-as-before"
        ),
    ],
)
def test_a_series_maps_to_its_node_by_label_then_by_instance_address(
    labels: dict[str, str], node: str
) -> None:
    assert identity().node_of(labels) == node


def test_the_configured_node_label_comes_before_node_and_instance() -> None:
    mapped = identity(node_label="host")
    labels = {"instance": "10.0.0.11:9100", "node": "worker-1", "host": "worker-2"}
    assert mapped.node_of(labels) == "worker-2"


def test_an_address_of_a_type_that_does_not_name_a_scrape_target_is_not_used() -> None:
    registry = CollectorRegistry()
    mapped = identity(
        {NodeName("worker-1"): addresses(("InternalDNS", "10.0.0.11"))}, registry=registry
    )
    assert mapped.node_of({"instance": "10.0.0.11:9100"}) is None
    assert dropped(registry, "unknown_address") == 1


def test_without_the_nodes_addresses_the_instance_host_is_the_node_name_as_before() -> None:
    mapped = identity(None)
    assert mapped.node_of({"instance": "10.0.0.11:9100"}) == "10.0.0.11"
    assert mapped.node_of({"instance": "[fd00:10::11]:9100"}) == "fd00:10::11"


def test_an_address_two_nodes_share_names_neither_warned_once_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    shared = {
        NodeName("a"): addresses(("InternalIP", "192.168.1.5")),
        NodeName("b"): addresses(("ExternalIP", "192.168.1.5")),
    }
    mapped = identity(shared, registry=registry)
    with caplog.at_level(logging.WARNING, logger="tas.metrics.node_identity"):
        assert mapped.node_of({"instance": "192.168.1.5:9100"}) is None
        assert mapped.node_of({"instance": "192.168.1.5:9100"}) is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "192.168.1.5" in warnings[0]
    assert "a, b" in warnings[0]
    assert dropped(registry, "ambiguous_address") == 2


def test_an_ipv6_address_two_nodes_share_in_different_spellings_is_ambiguous_too() -> None:
    shared = {
        NodeName("a"): addresses(("InternalIP", "fd00::5")),
        NodeName("b"): addresses(("InternalIP", "fd00:0:0:0:0:0:0:5")),
    }
    assert identity(shared).node_of({"instance": "[fd00::5]:9100"}) is None


def test_an_ip_no_node_has_is_dropped_counted_and_told_at_debug_with_the_instance(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    mapped = identity(registry=registry)
    with caplog.at_level(logging.DEBUG, logger="tas.metrics.node_identity"):
        assert mapped.node_of({"instance": "10.9.9.9:9100"}) is None
        assert mapped.node_of({"instance": "[fd00:99::1]:9100"}) is None
    assert dropped(registry, "unknown_address") == 2
    told = [r for r in caplog.records if r.levelno == logging.DEBUG]
    assert ["10.9.9.9:9100" in r.getMessage() for r in told] == [True, False]
    assert "[fd00:99::1]:9100" in told[1].getMessage()


def test_a_series_that_names_no_node_at_all_is_counted() -> None:
    registry = CollectorRegistry()
    assert identity(registry=registry).node_of({"job": "x"}) is None
    assert dropped(registry, "no_node_label") == 1


def test_an_address_that_moves_to_another_node_is_followed() -> None:
    book = AddressBook(NODES)
    mapped = NodeIdentity(addresses=book)
    assert mapped.node_of({"instance": "10.0.0.12:9100"}) == "worker-2"
    book.replace(
        {
            NodeName("worker-2"): addresses(),
            NodeName("worker-3"): addresses(("InternalIP", "10.0.0.12")),
        }
    )
    assert mapped.node_of({"instance": "10.0.0.12:9100"}) == "worker-3"


def stack_answer(query: str) -> dict[str, Any]:
    """What Prometheus answers for a derived metric over kube-prometheus-stack's node-exporter
    series: `instance` is the pod's IP:9100 (host network: the node's IP), no node label."""
    result = [
        {
            "metric": {
                "instance": instance,
                "job": "node-exporter",
                "namespace": "monitoring",
                "pod": pod,
                "service": "prometheus-node-exporter",
                "endpoint": "http-metrics",
                "container": "node-exporter",
            },
            "value": [100.0, value],
        }
        for instance, pod, value in (
            ("10.0.0.11:9100", "prometheus-node-exporter-x1", "0.25"),
            ("10.0.0.12:9100", "prometheus-node-exporter-x2", "0.5"),
            ("10.0.0.99:9100", "prometheus-node-exporter-gone", "0.75"),
        )
    ]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def test_the_prometheus_source_maps_kube_prometheus_stack_series_to_their_nodes() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=stack_answer(request.url.params["query"]))

    client = PrometheusClient(
        "http://prom.test", client=httpx.Client(transport=httpx.MockTransport(handle))
    )
    registry = CollectorRegistry()
    source = PrometheusSource(client, identity=identity(registry=registry))
    fetched = source.fetch(frozenset({CPU_PRESSURE}))
    assert fetched.columns == {
        CPU_PRESSURE: {"worker-1": Sample(0.25, 100.0), "worker-2": Sample(0.5, 100.0)}
    }
    assert dropped(registry, "unknown_address") == 1
