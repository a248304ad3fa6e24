"""The read-only view a dry run writes through (`tas.cluster.read_only`).

Covered: its reads and refusals cover the `Cluster` interface exactly (a write added to the
interface cannot pass through unnoticed); a read is the wrapped cluster's; every write is a
ClusterError naming why, and changes nothing; Events are dropped; a name outside the
interface is an AttributeError.
"""

from __future__ import annotations

import inspect

import pytest

from tas.cluster.interface import Cluster, ClusterError
from tas.cluster.model import ObjectReference
from tas.cluster.read_only import DROPPED, READS, REFUSED, ReadOnlyCluster
from tas.types import Namespace, NodeName, PolicyKey, PolicyName
from tas_inmemory.cluster import InMemoryCluster
from tests.builders import make_node, make_pod


def _interface() -> set[str]:
    return {
        name
        for name, member in vars(Cluster).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }


def test_its_reads_and_refusals_are_the_cluster_interface_exactly() -> None:
    assert READS | set(REFUSED) | DROPPED == _interface()
    assert not READS & (set(REFUSED) | DROPPED)


def _wrapped() -> tuple[InMemoryCluster, ReadOnlyCluster]:
    cluster = InMemoryCluster()
    cluster.add_node(make_node("node-a"))
    cluster.add_pod(make_pod("web-1", node="node-a"))
    return cluster, ReadOnlyCluster(cluster, why="a dry run")


def test_a_read_is_the_wrapped_clusters() -> None:
    cluster, view = _wrapped()
    assert view.list_nodes() == cluster.list_nodes()
    assert [p.name for p in view.list_pods(node=NodeName("node-a"))] == ["web-1"]


@pytest.mark.parametrize(
    ("write", "arguments", "words"),
    [
        ("patch_node_labels", ((NodeName("node-a"),), {"set_labels": {"a": "b"}}), "label nodes"),
        (
            "patch_pod_labels",
            ((Namespace("default"), "web-1"), {"set_labels": {"a": "b"}}),
            "label pods",
        ),
        ("set_node_taints", ((NodeName("node-a"), ()), {}), "taint nodes"),
        (
            "update_policy_status",
            ((PolicyKey(Namespace("default"), PolicyName("p")), {}), {}),
            "write policy status",
        ),
        ("evict_pod", ((Namespace("default"), "web-1"), {"reason": "r"}), "evict"),
    ],
)
def test_every_write_is_refused_naming_why_and_changes_nothing(
    write: str, arguments: tuple[tuple[object, ...], dict[str, object]], words: str
) -> None:
    cluster, view = _wrapped()
    positional, keywords = arguments
    with pytest.raises(ClusterError, match=f"^a dry run does not {words}$"):
        getattr(view, write)(*positional, **keywords)
    assert cluster.get_node(NodeName("node-a")).labels == make_node("node-a").labels
    assert [p.name for p in cluster.list_pods()] == ["web-1"]


def test_events_are_dropped_and_other_names_are_no_part_of_it() -> None:
    cluster, view = _wrapped()
    involved = ObjectReference(kind="Node", name="node-a", uid="")
    assert view.emit_event(involved, reason="R", message="m") is None
    assert cluster.events == ()
    with pytest.raises(AttributeError):
        view.stop  # noqa: B018
