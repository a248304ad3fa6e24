"""Paginated LISTs and compact caches of the Kubernetes adapter, against the API emulator.

Covered:
- the first LIST asks for `limit` objects a page, the first page without a resourceVersion (a
  consistent read), each next page with the `continue` token of the one before and nothing
  else; the cache holds every object once the last page is in, and only then is synced;
- a continue token that expired between two pages (the snapshot was compacted away: 410)
  starts the list again from its first page, and nothing is lost or reported twice;
- a LIST after a watch's 410 reports only what changed: objects the cache already holds at
  their resourceVersion are not reported again;
- realistic objects (tests/k8s_emulator/realistic.py) become the model values the components
  read, and pods of one workload share their equal parts (labels, owners, requests);
- with `PodFields.SUMMARY` (the extender, the controller) a pod is cached as a `PodSummary`:
  the fields placements and pod labels read, equal to the full `Pod`'s; asking for full pods
  from it is a ClusterError;
- a pod the typed decoder refuses (a field of the wrong type, which a real API server never
  serves) is skipped with an error naming it, and every other pod of its page is kept;
- pod label selectors limit the pod cache to the pods any of them selects (the controller's:
  linked to a policy, or labelled `violate`), on the LIST and on the watch; a pod two of them
  select is listed once, at its newest version, and a label patch reaches it at once;
- a write's answer that comes in after the watch event which removed its object (out of the
  selector) does not put the object back.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s

from tas.adapters.cluster.informer import Informer
from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.cluster.codec import TypedCodec
from tas.cluster.convert import PODS, pod_from_api
from tas.cluster.interface import ChangeType, ClusterChange, ClusterError, PodFields, ResourceKind
from tas.cluster.model import Pod, PodSummary
from tas.types import Namespace
from tas.vocabulary import POD_VIOLATION_LABEL, POLICY_LABEL
from tests.k8s_emulator import KubeEmulator, realistic
from tests.waiting import eventually

Change = tuple[ChangeType, str, str]
NS = Namespace("default")


@pytest.fixture
def api(kube_emulator: KubeEmulator) -> KubeEmulator:
    for index in range(5):
        kube_emulator.create(
            "pods",
            realistic.pod(
                f"web-{index}",
                app="web",
                node=f"node-{index % 2}",
                labels={POLICY_LABEL: "demo"} if index % 2 == 0 else None,
                seed=index,
            ),
        )
    return kube_emulator


@pytest.fixture
def start(start: Callable[..., KubernetesCluster]) -> Callable[..., KubernetesCluster]:
    """tests/tas/adapters/cluster/conftest.py's, watching pods only."""
    return functools.partial(start, watched=[ResourceKind.POD])


def _pod_lists(api: KubeEmulator) -> list[dict[str, str]]:
    return [
        dict(r.query)
        for r in api.requests
        if r.path == "/api/v1/pods" and r.method == "GET" and not r.is_watch
    ]


def test_the_first_list_comes_in_pages_each_asked_for_with_the_token_before(
    api: KubeEmulator, start: Callable[..., KubernetesCluster]
) -> None:
    cluster = start(page_size=2)
    assert cluster.wait_synced(5)
    assert [p.name for p in cluster.list_pods()] == [f"web-{i}" for i in range(5)]
    first, second, third = _pod_lists(api)
    assert first == {"limit": "2"}  # no resourceVersion: the most recent state, consistent
    assert set(second) == {"limit", "continue"}
    assert set(third) == {"limit", "continue"}
    assert second["continue"] != third["continue"]
    assert cluster.informers[0].lists == 1


def test_an_expired_continue_token_starts_the_list_again_from_its_first_page(
    api: KubeEmulator,
) -> None:
    """The snapshot of the first page is compacted away before the second page is asked for:
    the API answers 410 Expired, and the list starts over; every pod is reported once."""
    heard: list[Change] = []
    pages = 0
    list_pods = k8s.CoreV1Api(api.api_client()).list_pod_for_all_namespaces

    def list_then_compact(**arguments: Any) -> Any:
        nonlocal pages
        response = list_pods(**arguments)
        pages += 1
        if pages == 1:
            api.create("pods", realistic.pod("web-late", seed=99))
            api.compact()  # etcd compaction: the first page's snapshot is gone
        return response

    informer: Informer[Pod] = Informer(
        name="pods",
        list_call=list_then_compact,
        codec=TypedCodec(PODS, pod_from_api),
        on_change=lambda type_, namespace, name: heard.append((type_, namespace, name)),
        watch_timeout=2.0,
        page_size=2,
    )
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert informer.synced.wait(5)
    finally:
        stop.set()
        informer.close()
        thread.join(2)
    expired = [r for r in api.requests if r.path == "/api/v1/pods" and r.status == 410]
    assert len(expired) == 1
    assert "continue" in expired[0].query
    names = [p.name for p in informer.items()]
    assert names == sorted([f"web-{i}" for i in range(5)] + ["web-late"])
    added = [name for type_, _, name in heard if type_ is ChangeType.ADDED]
    assert sorted(added) == names  # the two pods of the first page are not reported twice


def test_a_list_after_a_410_reports_only_what_changed(
    api: KubeEmulator, start: Callable[..., KubernetesCluster]
) -> None:
    cluster = start(page_size=2)
    assert cluster.wait_synced(5)
    heard: list[ClusterChange] = []
    cluster.subscribe(heard.append)
    api.fail_next(r"^/api/v1/pods$", status=503, times=1)  # keep the watch away for a moment
    api.break_watches()
    api.compact()
    api.merge("pods", "web-3", {"metadata": {"labels": {"tier": "gold"}}}, namespace="default")
    api.set_history_window(0)
    eventually(lambda: cluster.informers[0].lists >= 2)
    eventually(lambda: bool(heard))
    assert heard == [ClusterChange(ResourceKind.POD, ChangeType.MODIFIED, "web-3", "default")]


def test_realistic_pods_become_model_values_sharing_their_workloads_parts(
    start: Callable[..., KubernetesCluster],
) -> None:
    cluster = start()
    assert cluster.wait_synced(5)
    web0, web1, *_ = cluster.list_pods()
    assert (web0.namespace, web0.node_name, web0.phase) == ("default", "node-0", "Running")
    assert web0.requests == {"cpu": 0.25, "memory": 256 * 2**20}
    assert web0.controller is not None
    assert web0.controller.kind == "ReplicaSet"
    assert [c.type for c in web0.conditions][-1] == "PodScheduled"
    assert web0.annotations == {}  # none this project reads
    assert [v.kind for v in web0.volumes] == ["projected"]
    # Equal parts are one object: what keeps a 150,000-pod cache small.
    assert web0.owners is web1.owners
    assert web0.requests is web1.requests
    assert web0.tolerations is web1.tolerations
    assert web0.container_statuses is web1.container_statuses


def test_the_pod_label_selector_limits_the_cache_on_the_list_and_the_watch(
    api: KubeEmulator, start: Callable[..., KubernetesCluster]
) -> None:
    cluster = start(pod_label_selectors=[POLICY_LABEL])
    assert cluster.wait_synced(5)
    assert [p.name for p in cluster.list_pods()] == ["web-0", "web-2", "web-4"]
    (listed,) = _pod_lists(api)
    assert listed["labelSelector"] == POLICY_LABEL
    api.merge(
        "pods", "web-1", {"metadata": {"labels": {POLICY_LABEL: "demo"}}}, namespace="default"
    )
    api.merge("pods", "web-0", {"metadata": {"labels": {POLICY_LABEL: None}}}, namespace="default")
    eventually(lambda: [p.name for p in cluster.list_pods()] == ["web-1", "web-2", "web-4"])


def test_two_label_selectors_keep_the_pods_either_selects_each_once(
    api: KubeEmulator, start: Callable[..., KubernetesCluster]
) -> None:
    """The controller's pods: linked to a policy, or still labelled `violate` by it after the
    link was removed (so it can take the label away)."""
    api.merge(
        "pods",
        "web-1",
        {"metadata": {"labels": {POD_VIOLATION_LABEL: "demo"}}},
        namespace="default",
    )
    cluster = start(pod_label_selectors=[POLICY_LABEL, POD_VIOLATION_LABEL])
    assert cluster.wait_synced(5)
    assert [p.name for p in cluster.list_pods()] == ["web-0", "web-1", "web-2", "web-4"]
    cluster.patch_pod_labels(NS, "web-0", set_labels={POD_VIOLATION_LABEL: "demo"})
    web0 = cluster.find_pod("default", "web-0")
    assert web0 is not None
    assert web0.labels[POD_VIOLATION_LABEL] == "demo"  # at once, before any watch event
    eventually(lambda: len(cluster.informers[1]) == 2)  # the `violate` cache's watch saw it
    assert [p.name for p in cluster.list_pods()] == ["web-0", "web-1", "web-2", "web-4"]
    cluster.patch_pod_labels(NS, "web-1", set_labels={}, remove=[POD_VIOLATION_LABEL])
    eventually(lambda: [p.name for p in cluster.list_pods()] == ["web-0", "web-2", "web-4"])


def test_a_writes_answer_arriving_after_the_watch_removed_its_pod_does_not_bring_it_back(
    api: KubeEmulator, start: Callable[..., KubernetesCluster]
) -> None:
    """Our label patch takes a pod out of a selector's cache; the watch's DELETED may come in
    before the patch's answer. The answer (the same resourceVersion) must not put it back."""
    cluster = start(pod_label_selectors=[POLICY_LABEL])
    assert cluster.wait_synced(5)
    api.merge("pods", "web-0", {"metadata": {"labels": {POLICY_LABEL: None}}}, namespace="default")
    eventually(lambda: cluster.find_pod("default", "web-0") is None, what="the watch's DELETED")
    answer = api.get("pods", "web-0", namespace="default")
    assert answer is not None
    (cache,) = cluster.informers
    assert not cache.apply_answer(ChangeType.MODIFIED, json.dumps(answer).encode())
    assert [p.name for p in cluster.list_pods()] == ["web-2", "web-4"]
    # A later version the selector matches again is taken.
    api.merge(
        "pods", "web-0", {"metadata": {"labels": {POLICY_LABEL: "demo"}}}, namespace="default"
    )
    eventually(lambda: [p.name for p in cluster.list_pods()] == ["web-0", "web-2", "web-4"])


def test_the_extenders_cache_keeps_what_placements_read_equal_to_the_full_pods(
    start: Callable[..., KubernetesCluster],
) -> None:
    full = start()
    placed = start(pod_fields=PodFields.SUMMARY)
    assert full.wait_synced(5)
    assert placed.wait_synced(5)
    pod = full.find_pod("default", "web-1")
    record = placed.find_pod_summary("default", "web-1")
    assert pod is not None
    assert isinstance(record, PodSummary)
    assert (record.namespace, record.name, record.node_name, record.phase) == (
        pod.namespace,
        pod.name,
        pod.node_name,
        pod.phase,
    )
    assert (record.owners, record.requests, record.terminating, record.labels) == (
        pod.owners,
        pod.requests,
        pod.terminating,
        pod.labels,
    )
    assert placed.list_pod_summaries() == [
        placed.find_pod_summary("default", f"web-{i}") for i in range(5)
    ]
    assert record.bound_at == pod.bound_at
    assert record.bound_at is not None  # from its PodScheduled condition
    assert record.controller == pod.controller
    with pytest.raises(ClusterError, match="summary fields only"):
        placed.list_pods()


def test_a_pod_that_does_not_decode_is_skipped_by_name_and_its_page_kept(
    api: KubeEmulator, start: Callable[..., KubernetesCluster], caplog: pytest.LogCaptureFixture
) -> None:
    odd = realistic.pod("web-odd", seed=9)
    odd["spec"]["priority"] = "high"  # an int32 in the API's schema
    api.create("pods", odd)
    cluster = start(page_size=3)
    assert cluster.wait_synced(5)
    assert [p.name for p in cluster.list_pods()] == [f"web-{i}" for i in range(5)]
    (refused,) = [r for r in caplog.records if "does not decode" in r.getMessage()]
    assert refused.levelname == "ERROR"
    assert "default/web-odd" in refused.getMessage()
