"""The API emulator answers the official client the way the API server does.

Covered (all through `kubernetes.client` over real HTTP):
- list carries a resourceVersion; label and field selectors filter; namespaces separate;
- paginated lists: `limit` pages with a `continue` token and `remainingItemCount`; every page
  comes from the first page's snapshot; a token whose snapshot was compacted away is 410
  Expired; `resourceVersion=0` (the watch cache) ignores `limit`; a token with a
  resourceVersion is 400; realistic objects are the sizes the scale benchmark names;
- create assigns identity; creating twice is 409 AlreadyExists; unknown objects are 404;
- merge patch with null removes a key; a patch carrying a stale resourceVersion is 409;
- JSON patch applies, and a failing `test` is 422 with nothing changed;
- PUT with a stale resourceVersion is 409;
- the status subresource: only status changes there, and the main resource ignores status;
  generation moves with the spec only;
- custom resources under /apis/telemetry.intel.com/v1alpha1 (namespaced and cluster-wide);
- watch: resumes from a resourceVersion, sends BOOKMARKs when asked, reports selector moves
  as DELETED, and answers an expired resourceVersion with an ERROR 410 event;
- evictions: 201, 404 for an unknown pod, 429 when the PDB allows no disruption, and the PDB
  is decremented on success;
- injected failures and the request log;
- the custom metrics API as prometheus-adapter serves node metrics, read by the real
  `custom-metrics` source; NamespaceLifecycle admission, when asked for.
"""

from __future__ import annotations

import json
import time
from typing import Any

import kubernetes.client as k8s
import pytest
from kubernetes.watch.watch import iter_resp_lines

from tas.adapters.metrics.custom_metrics import CustomMetricsSource
from tas.types import MetricName, NodeName
from tests.k8s_emulator import KubeEmulator, realistic

GROUP, VERSION, PLURAL = "telemetry.intel.com", "v1alpha1", "taspolicies"


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {}}


def pod(name: str, node_name: str = "n1", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": "Running"},
    }


def watch_lines(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in iter_resp_lines(response) if line]


@pytest.fixture
def core(kube_emulator: KubeEmulator) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(kube_emulator.api_client())


def test_list_reports_a_resource_version_and_filters_by_selectors(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    kube_emulator.create("nodes", node("n1", zone="a"))
    kube_emulator.create("nodes", node("n2", zone="b"))
    kube_emulator.create("pods", pod("p1", "n1", app="web"))
    kube_emulator.create("pods", pod("p2", "n2", app="db"))
    listed = core.list_node()
    assert int(listed.metadata.resource_version) == kube_emulator.resource_version
    assert [n.metadata.name for n in core.list_node(label_selector="zone in (b,c)").items] == ["n2"]
    assert [n.metadata.name for n in core.list_node(label_selector="zone!=b").items] == ["n1"]
    on_n2 = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n2")
    assert [p.metadata.name for p in on_n2.items] == ["p2"]
    assert core.list_namespaced_pod("other").items == []


def test_a_limited_list_comes_in_pages_cut_from_the_first_pages_snapshot(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    for name in ("p1", "p2", "p3", "p4", "p5"):
        kube_emulator.create("pods", pod(name))
    first = core.list_pod_for_all_namespaces(limit=2)
    assert [p.metadata.name for p in first.items] == ["p1", "p2"]
    assert first.metadata.remaining_item_count == 3
    kube_emulator.create("pods", pod("p0"))  # after the snapshot: in no page of this list
    kube_emulator.delete("pods", "p5", namespace="default")  # in the snapshot: still listed
    second = core.list_pod_for_all_namespaces(limit=2, _continue=first.metadata._continue)
    third = core.list_pod_for_all_namespaces(limit=2, _continue=second.metadata._continue)
    assert [p.metadata.name for p in second.items + third.items] == ["p3", "p4", "p5"]
    assert third.metadata._continue is None
    assert third.metadata.resource_version == first.metadata.resource_version
    assert [p.metadata.name for p in core.list_pod_for_all_namespaces().items] == [
        "p0",
        "p1",
        "p2",
        "p3",
        "p4",
    ]


def test_a_continue_token_whose_snapshot_was_compacted_is_410_expired(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    for name in ("p1", "p2", "p3"):
        kube_emulator.create("pods", pod(name))
    first = core.list_pod_for_all_namespaces(limit=1)
    kube_emulator.create("pods", pod("p4"))
    kube_emulator.compact()
    with pytest.raises(k8s.ApiException) as expired:
        core.list_pod_for_all_namespaces(limit=1, _continue=first.metadata._continue)
    assert expired.value.status == 410
    status = json.loads(expired.value.body)
    assert status["reason"] == "Expired"
    assert "too old to display a consistent list result" in status["message"]


def test_the_watch_cache_ignores_limit_and_a_token_takes_no_resource_version(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    for name in ("p1", "p2", "p3"):
        kube_emulator.create("pods", pod(name))
    cached = core.list_pod_for_all_namespaces(limit=1, resource_version="0")
    assert len(cached.items) == 3
    assert cached.metadata._continue is None
    first = core.list_pod_for_all_namespaces(limit=1)
    with pytest.raises(k8s.ApiException) as refused:
        core.list_pod_for_all_namespaces(
            limit=1, _continue=first.metadata._continue, resource_version="5"
        )
    assert refused.value.status == 400


def test_realistic_objects_have_the_sizes_of_a_real_clusters() -> None:
    """About 4-7 KB a pod and 10-15 KB a node, as `kubectl get -o json` shows on kind."""
    a_pod = realistic.pod("web-1", labels={"telemetry-policy": "demo"}, seed=3)
    a_node = realistic.node("node-1", seed=3)
    assert 4_000 <= len(json.dumps(a_pod)) <= 7_000
    assert 10_000 <= len(json.dumps(a_node)) <= 15_000
    assert realistic.pod("web-2", seed=4) != realistic.pod("web-3", seed=4)


def test_create_assigns_identity_and_refuses_duplicates(core: k8s.CoreV1Api) -> None:
    created = core.create_node(node("n1"))
    assert created.metadata.uid
    assert created.metadata.resource_version
    with pytest.raises(k8s.ApiException) as duplicate:
        core.create_node(node("n1"))
    assert duplicate.value.status == 409
    assert json.loads(duplicate.value.body)["reason"] == "AlreadyExists"
    with pytest.raises(k8s.ApiException) as missing:
        core.read_node("ghost")
    assert missing.value.status == 404


def test_merge_patch_removes_null_keys_and_checks_a_carried_resource_version(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    kube_emulator.create("nodes", node("n1", a="1", keep="yes"))
    patched = core.patch_node(
        "n1",
        {"metadata": {"labels": {"a": None, "b": "2"}}},
        _content_type="application/merge-patch+json",
    )
    assert patched.metadata.labels == {"keep": "yes", "b": "2"}
    with pytest.raises(k8s.ApiException) as stale:
        core.patch_node(
            "n1",
            {"metadata": {"resourceVersion": "1", "labels": {"c": "3"}}},
            _content_type="application/merge-patch+json",
        )
    assert stale.value.status == 409


def test_json_patch_applies_and_a_failing_test_changes_nothing(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    created = kube_emulator.create("nodes", node("n1"))
    version = created["metadata"]["resourceVersion"]
    taints = [{"key": "hot", "value": "true", "effect": "PreferNoSchedule"}]
    core.patch_node(
        "n1",
        [
            {"op": "test", "path": "/metadata/resourceVersion", "value": version},
            {"op": "add", "path": "/spec/taints", "value": taints},
        ],
        _content_type="application/json-patch+json",
    )
    with pytest.raises(k8s.ApiException) as failed:
        core.patch_node(
            "n1",
            [
                {"op": "test", "path": "/metadata/resourceVersion", "value": version},
                {"op": "add", "path": "/spec/taints", "value": []},
            ],
            _content_type="application/json-patch+json",
        )
    assert failed.value.status == 422
    stored = kube_emulator.get("nodes", "n1")
    assert stored is not None
    assert stored["spec"]["taints"] == taints


def test_put_with_a_stale_resource_version_is_a_conflict(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    kube_emulator.create("nodes", node("n1"))
    current = core.read_node("n1")
    kube_emulator.merge("nodes", "n1", {"metadata": {"labels": {"other": "writer"}}})
    with pytest.raises(k8s.ApiException) as conflict:
        core.replace_node("n1", current)
    assert conflict.value.status == 409


def test_the_status_subresource_changes_only_status_and_generation_follows_spec(
    kube_emulator: KubeEmulator,
) -> None:
    custom = k8s.CustomObjectsApi(kube_emulator.api_client())
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "TASPolicy",
        "metadata": {"name": "demo"},
        "spec": {"strategies": {}},
        "status": {"ignored": True},
    }
    created = custom.create_namespaced_custom_object(GROUP, VERSION, "ns1", PLURAL, body)
    assert "status" not in created
    assert created["metadata"]["generation"] == 1
    updated = custom.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        "ns1",
        PLURAL,
        "demo",
        {"status": {"compliance": "Compliant"}, "spec": {"ignored": True}},
    )
    assert updated["status"] == {"compliance": "Compliant"}
    assert updated["spec"] == {"strategies": {}}
    assert updated["metadata"]["generation"] == 1
    respec = custom.patch_namespaced_custom_object(
        GROUP, VERSION, "ns1", PLURAL, "demo", {"spec": {"strategies": {"x": {}}}}
    )
    assert respec["metadata"]["generation"] == 2
    assert respec["status"] == {"compliance": "Compliant"}
    everywhere = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert [item["metadata"]["namespace"] for item in everywhere["items"]] == ["ns1"]


def test_a_watch_resumes_from_a_resource_version_with_bookmarks(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    kube_emulator.create("nodes", node("n1"))
    start = core.list_node().metadata.resource_version
    kube_emulator.merge("nodes", "n1", {"metadata": {"labels": {"a": "b"}}})
    kube_emulator.create("nodes", node("n2"))
    kube_emulator.delete("nodes", "n1")
    events = watch_lines(
        core.list_node(
            watch=True,
            resource_version=start,
            timeout_seconds=1,
            allow_watch_bookmarks=True,
            _preload_content=False,
        )
    )
    changes = [(e["type"], e["object"]["metadata"]["name"]) for e in events[:3]]
    assert changes == [("MODIFIED", "n1"), ("ADDED", "n2"), ("DELETED", "n1")]
    bookmark = events[-1]
    assert bookmark["type"] == "BOOKMARK"
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) == (
        kube_emulator.resource_version
    )


def test_a_watch_reports_an_object_leaving_its_selector_as_deleted(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    kube_emulator.create("nodes", node("n1", pool="hot"))
    start = core.list_node().metadata.resource_version
    kube_emulator.merge("nodes", "n1", {"metadata": {"labels": {"pool": "cold"}}})
    events = watch_lines(
        core.list_node(
            watch=True,
            resource_version=start,
            label_selector="pool=hot",
            timeout_seconds=1,
            _preload_content=False,
        )
    )
    assert [e["type"] for e in events] == ["DELETED"]


def test_a_watch_from_an_expired_resource_version_gets_an_error_410(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    kube_emulator.set_history_window(1)
    kube_emulator.create("nodes", node("n1"))
    start = core.list_node().metadata.resource_version
    kube_emulator.create("nodes", node("n2"))
    kube_emulator.create("nodes", node("n3"))
    events = watch_lines(
        core.list_node(
            watch=True, resource_version=start, timeout_seconds=1, _preload_content=False
        )
    )
    assert [(e["type"], e["object"]["code"]) for e in events] == [("ERROR", 410)]


def test_evictions_honour_the_pdb_and_decrement_it(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    kube_emulator.create("pods", pod("p1", app="web"))
    kube_emulator.create("pods", pod("p2", app="web"))
    kube_emulator.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
        },
    )
    kube_emulator.merge(
        "poddisruptionbudgets",
        "web",
        {"status": {"disruptionsAllowed": 1}},
        namespace="default",
        status=True,
    )
    eviction = {"metadata": {"name": "p1", "namespace": "default"}}
    core.create_namespaced_pod_eviction("p1", "default", eviction)
    assert kube_emulator.get("pods", "p1", namespace="default") is None
    with pytest.raises(k8s.ApiException) as refused:
        core.create_namespaced_pod_eviction("p2", "default", eviction)
    assert refused.value.status == 429
    with pytest.raises(k8s.ApiException) as missing:
        core.create_namespaced_pod_eviction("p1", "default", eviction)
    assert missing.value.status == 404
    budget = kube_emulator.get("poddisruptionbudgets", "web", namespace="default")
    assert budget is not None
    assert budget["status"]["disruptionsAllowed"] == 0


def test_injected_failures_are_answered_and_requests_are_logged(
    kube_emulator: KubeEmulator, core: k8s.CoreV1Api
) -> None:
    kube_emulator.fail_next(r"/nodes$", status=503)
    with pytest.raises(k8s.ApiException) as failed:
        core.list_node()
    assert failed.value.status == 503
    assert core.list_node().items == []
    assert [(r.method, r.path, r.status) for r in kube_emulator.requests] == [
        ("GET", "/api/v1/nodes", 503),
        ("GET", "/api/v1/nodes", 200),
    ]
    assert kube_emulator.writes() == []


def test_the_custom_metrics_api_serves_node_metrics_to_the_custom_metrics_source(
    kube_emulator: KubeEmulator,
) -> None:
    kube_emulator.set_custom_metric("health_metric", {"n1": 0, "n2": "2500m"})
    source = CustomMetricsSource(kube_emulator.api_client())
    health, absent = MetricName("health_metric"), MetricName("absent_metric")
    try:
        fetched = source.fetch(frozenset({health, absent}))
    finally:
        source.close()
    column = fetched.columns[health]
    assert {node: sample.value for node, sample in column.items()} == {
        NodeName("n1"): 0.0,
        NodeName("n2"): 2.5,
    }
    assert all(abs(sample.timestamp - time.time()) < 5 for sample in column.values())
    assert "HTTP 404" in fetched.errors[absent]
    paths = [r.path for r in kube_emulator.requests]
    assert paths == [
        "/apis/custom.metrics.k8s.io",
        "/apis/custom.metrics.k8s.io/v1beta1/nodes/*/absent_metric",
        "/apis/custom.metrics.k8s.io/v1beta1/nodes/*/health_metric",
    ]


def test_with_namespace_lifecycle_a_create_needs_its_namespace() -> None:
    with KubeEmulator(namespace_lifecycle=True) as api:
        core = k8s.CoreV1Api(api.api_client())
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        with pytest.raises(k8s.ApiException) as refused:
            core.create_namespaced_pod("team", pod)
        assert refused.value.status == 404
        assert json.loads(refused.value.body or "{}")["message"] == 'namespaces "team" not found'
        core.create_namespace({"metadata": {"name": "team"}})
        core.create_namespaced_pod("team", pod)
        core.create_namespaced_pod("default", pod)  # the API server's own namespaces exist
        assert [p["metadata"]["namespace"] for p in api.objects("pods")] == ["default", "team"]
