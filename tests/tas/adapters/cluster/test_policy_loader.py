"""The cluster policy loader keeps a PolicyStore equal to the cluster's TASPolicy objects.

Covered:
- valid documents become policies; an invalid one becomes problems naming it, and the valid
  ones keep working;
- attached to an observable cluster, adding, changing and deleting a policy updates the store;
- a status write (the controller's own) does not replace the store;
- detaching stops updates; polling (`run`) loads too;
- against the Kubernetes adapter: a TASPolicy created through the API reaches the store.
"""

from __future__ import annotations

import threading
from typing import Any

from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.store import PolicyStore
from tas.types import Namespace, PolicyKey, PolicyName
from tas_inmemory.cluster import InMemoryCluster
from tests.builders import policy_document, rule
from tests.k8s_emulator import KubeEmulator
from tests.waiting import eventually

KEY = PolicyKey(Namespace("default"), PolicyName("demo"))


def document(name: str = "demo", target: int = 2, operator: str = "Equals") -> dict[str, Any]:
    return policy_document(name, deschedule=[rule("health", operator, target)])


def test_valid_documents_load_and_an_invalid_one_is_a_problem() -> None:
    cluster, store = InMemoryCluster(), PolicyStore()
    cluster.apply_policy(document())
    cluster.apply_policy(document("broken", operator="Sometimes"))
    assert ClusterPolicyLoader(cluster, store).sync()
    snapshot = store.snapshot()
    assert list(snapshot.policies) == [KEY]
    assert snapshot.problems
    assert all("broken" in str(problem) for problem in snapshot.problems)


def test_an_attached_loader_follows_adds_changes_and_deletes() -> None:
    cluster, store = InMemoryCluster(), PolicyStore()
    detach = ClusterPolicyLoader(cluster, store).attach(cluster)
    assert store.loaded
    assert store.snapshot().policies == {}
    cluster.apply_policy(document())
    assert store.snapshot().policies[KEY].strategies["deschedule"].rules[0].target == 2
    cluster.apply_policy(document(target=3))
    assert store.snapshot().policies[KEY].strategies["deschedule"].rules[0].target == 3
    cluster.delete_policy(KEY)
    assert store.snapshot().policies == {}
    detach()
    cluster.apply_policy(document())
    assert store.snapshot().policies == {}


def test_a_status_write_does_not_replace_the_store() -> None:
    cluster, store = InMemoryCluster(), PolicyStore()
    ClusterPolicyLoader(cluster, store).attach(cluster)
    cluster.apply_policy(document())
    generation = store.snapshot().generation
    cluster.update_policy_status(KEY, {"compliance": "Compliant"})
    cluster.update_policy_status(KEY, {"compliance": "Violating"})
    assert store.snapshot().generation == generation


def test_polling_loads_policies() -> None:
    cluster, store = InMemoryCluster(), PolicyStore()
    cluster.apply_policy(document())
    stop = threading.Event()
    thread = threading.Thread(
        target=ClusterPolicyLoader(cluster, store).run, args=(stop, 0.01), daemon=True
    )
    thread.start()
    eventually(lambda: KEY in store.snapshot().policies)
    stop.set()
    thread.join(5)


def test_a_policy_created_through_the_api_reaches_the_store(
    kube_emulator: KubeEmulator,
) -> None:
    cluster = KubernetesCluster(kube_emulator.api_client(), watch_timeout=2)
    store = PolicyStore()
    cluster.start()
    try:
        assert cluster.wait_synced(5)
        ClusterPolicyLoader(cluster, store).attach(cluster)
        kube_emulator.create("taspolicies", document())
        eventually(lambda: KEY in store.snapshot().policies)
    finally:
        cluster.stop()
