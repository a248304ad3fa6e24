"""Policies from the cluster: keeps a `PolicyStore` equal to the cluster's TASPolicy objects.

Every document is validated with `tas.policies.model.check_policy`; an invalid one becomes a
problem (reported, not applied) while valid ones keep working, and warnings are reported too.
The store is replaced only when what a policy *says* changed: a status write by the controller
changes the object's resourceVersion but not its meaning, and must not trigger another
reconcile (that would loop).

Triggered by the cluster's change notifications (`attach`), or by polling (`run`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tas.cluster.interface import Cluster, ClusterChange, ObservableCluster, ResourceKind
from tas.policies.model import PolicyProblem, TASPolicy, check_policy
from tas.policies.store import PolicyStore, run_every

_Signature = tuple[tuple[str, str], ...]


def _meaning(body: Mapping[str, Any]) -> str:
    """The parts of a document that decide what the policy does (not status, not versions)."""
    metadata = body.get("metadata")
    if not isinstance(metadata, Mapping):
        metadata = {}
    relevant = {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "spec": body.get("spec"),
    }
    return json.dumps(relevant, sort_keys=True, default=str)


class ClusterPolicyLoader:
    def __init__(self, cluster: Cluster, store: PolicyStore) -> None:
        self._cluster = cluster
        self._store = store
        self._lock = threading.Lock()
        self._signature: _Signature | None = None

    def sync(self) -> bool:
        """Reload from the cluster's cache if any policy changed; True when the store changed."""
        with self._lock:
            documents = self._cluster.list_policy_documents()
            signature = tuple(sorted((str(d.key), _meaning(d.body)) for d in documents))
            if signature == self._signature:
                return False
            self._store.replace(*_parse_all([(str(d.key), d.body) for d in documents]))
            self._signature = signature
            return True

    def attach(self, cluster: ObservableCluster) -> Callable[[], None]:
        """Sync now and on every TASPolicy change; returns a function that detaches."""

        def on_change(change: ClusterChange) -> None:
            if change.kind is ResourceKind.POLICY:
                self.sync()

        unsubscribe = cluster.subscribe(on_change)
        self.sync()
        return unsubscribe

    def run(self, stop: threading.Event, interval: float = 5.0) -> None:
        """Poll until `stop` is set (for clusters without notifications, or as a safety net)."""
        run_every(self.sync, stop, interval, failed="Loading policies from the cluster failed")


def _parse_all(
    documents: Sequence[tuple[str, Mapping[str, Any]]],
) -> tuple[list[TASPolicy], list[PolicyProblem], list[PolicyProblem]]:
    """(policies, problems, warnings) of the cluster's documents."""
    policies: list[TASPolicy] = []
    problems: list[PolicyProblem] = []
    warnings: list[PolicyProblem] = []
    for source, body in documents:
        checked = check_policy(body, source=f"taspolicy {source}")
        if checked.policy is not None:
            policies.append(checked.policy)
        problems.extend(checked.problems)
        warnings.extend(checked.warnings)
    return policies, problems, warnings
