"""Patches from what the cluster carries to what the policies want: only the differences.

Pure. A node or pod that already carries what is wanted gets no patch, so a steady state
writes nothing, and an update never removes a label only to add it back (TAS's flapping).

Which labels are ours (the controller must never remove someone else's label):

- Keys under `telemetry.aware.scheduling.<policy>/` are this project's namespace: any such key
  that no current policy produces is removed (labels of deleted policies, removed labeling
  strategies and rules), even after a restart.
- A bare key `<name>=violating` could be anyone's label. The controller records the bare keys it
  placed on a node in the node annotation `telemetry.aware.scheduling/owned-labels` (a sorted
  JSON list), written in the same patch as the labels. A recorded key that is no longer wanted
  is removed, so a policy deleted while the controller was down loses its labels exactly.
- A bare key `<name>` with the value `violating`, where `<name>` is a current policy with a
  deschedule strategy, is also treated as ours (labels left by TAS, or a lost annotation).
  A key with that name but another value, or `violating` under a name no current policy had
  and the annotation does not list, is left alone.

Pods: `violate=<policy>` is wanted on a pod that links the policy (`telemetry-policy=<policy>`,
policy in the pod's namespace) while its node violates the policy's deschedule strategy. The
controller removes `violate` only when its value is the policy the pod links, or a current
deschedule policy of the pod's namespace. Pods that finished or are being deleted are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from policy_controller.desired import WantedLabels
from tas.cluster.model import Node
from tas.types import Namespace, NodeName, PolicyKey
from tas.vocabulary import (
    LABELING_PREFIX,
    OWNED_ANNOTATION,
    POD_VIOLATION_LABEL,
    POLICY_LABEL,
    VIOLATING,
)

_FINISHED_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True, slots=True)
class NodePatch:
    node: NodeName
    set_labels: Mapping[str, str] = field(default_factory=dict)
    remove: tuple[str, ...] = ()
    #: Annotations to set (or remove, value None) in the same patch; empty when unchanged.
    annotations: Mapping[str, str | None] = field(default_factory=dict)

    def started_violating(self, current: Mapping[str, str]) -> list[str]:
        """Bare keys this patch turns to `violating` (the node starts violating them)."""
        return sorted(
            k
            for k, v in self.set_labels.items()
            if v == VIOLATING and "/" not in k and current.get(k) != VIOLATING
        )

    def stopped_violating(self, current: Mapping[str, str]) -> list[str]:
        """Bare keys this patch removes that said `violating`."""
        return sorted(k for k in self.remove if "/" not in k and current.get(k) == VIOLATING)


@dataclass(frozen=True, slots=True)
class PodPatch:
    namespace: Namespace
    name: str
    set_labels: Mapping[str, str] = field(default_factory=dict)
    remove: tuple[str, ...] = ()


def read_owned_annotation(annotations: Mapping[str, str]) -> frozenset[str]:
    """The bare keys recorded as ours; a damaged annotation counts as empty (it is rewritten)."""
    raw = annotations.get(OWNED_ANNOTATION)
    if raw is None:
        return frozenset()
    try:
        loaded = json.loads(raw)
    except ValueError:
        return frozenset()
    if not isinstance(loaded, list):
        return frozenset()
    return frozenset(item for item in loaded if isinstance(item, str))


def format_owned_annotation(keys: Iterable[str]) -> str | None:
    """The annotation value for these bare keys; None (no annotation) when there are none."""
    ordered = sorted(keys)
    # Bare keys are policy names (DNS labels: no quote, no backslash), so this is valid JSON;
    # json.dumps would cost more than the rest of a node's diff.
    return '["' + '","'.join(ordered) + '"]' if ordered else None


def _may_own_any(labels: Mapping[str, str], deschedule_keys: Collection[str]) -> bool:
    for key, value in labels.items():
        if (value == VIOLATING and key in deschedule_keys) or key.startswith(LABELING_PREFIX):
            return True
    return False


def diff_node(
    node: Node, wanted: Mapping[str, str], deschedule_keys: Collection[str]
) -> NodePatch | None:
    """The patch that makes the node's owned labels equal `wanted`; None when they are."""
    labels = node.labels
    current_note = node.annotations.get(OWNED_ANNOTATION)
    if not wanted and current_note is None and not _may_own_any(labels, deschedule_keys):
        return None  # the common case in a large cluster: nothing of ours here, nothing wanted
    note = format_owned_annotation([k for k in wanted if "/" not in k])
    # When the record already equals what is wanted, every recorded key is wanted: skip parsing.
    recorded = frozenset() if current_note == note else read_owned_annotation(node.annotations)
    # A bare key is ours only while it says `violating` (or is absent): with another value it is
    # another writer's, which we neither overwrite nor remove. The admission policy
    # (deploy/cluster/policy-controller-admission.yaml) would refuse the whole patch otherwise.
    set_labels = {
        k: v
        for k, v in wanted.items()
        if labels.get(k) != v and ("/" in k or labels.get(k, VIOLATING) == VIOLATING)
    }
    remove = tuple(
        sorted(
            key
            for key, value in labels.items()
            if key not in wanted
            and (
                (value == VIOLATING and (key in deschedule_keys or key in recorded))
                or (key.startswith(LABELING_PREFIX) and "/" in key)
            )
        )
    )
    if not set_labels and not remove and current_note == note:
        return None
    annotations = {OWNED_ANNOTATION: note} if current_note != note else {}
    return NodePatch(node.name, set_labels, remove, annotations)


def diff_nodes(
    nodes: Iterable[Node],
    wanted: Mapping[NodeName, Mapping[str, str]],
    deschedule_keys: Collection[str],
) -> list[NodePatch]:
    empty: Mapping[str, str] = {}
    patches = []
    for node in nodes:
        patch = diff_node(node, wanted.get(node.name, empty), deschedule_keys)
        if patch is not None:
            patches.append(patch)
    return patches


class NodeDiffer:
    """`diff_nodes` that skips nodes already found right, for a cheap steady state.

    A node is skipped when its resourceVersion, its wanted labels and the deschedule keys are
    what they were when it last needed no patch: `diff_node` is a function of exactly these, so
    the answer (no patch) cannot have changed. Wanted labels are compared a label key at a time
    (`WantedLabels.changed_since`), so a settled node costs a version check, not a comparison
    of its labels.
    """

    def __init__(self) -> None:
        self._settled: dict[NodeName, str] = {}
        self._keys: frozenset[str] = frozenset()
        self._wanted = WantedLabels({})

    def diff(
        self,
        nodes: Iterable[Node],
        wanted: Mapping[NodeName, Mapping[str, str]],
        deschedule_keys: frozenset[str],
    ) -> list[NodePatch]:
        if not isinstance(wanted, WantedLabels):
            wanted = WantedLabels.of_nodes(wanted)
        previous = self._settled if deschedule_keys == self._keys else {}
        changed = wanted.changed_since(self._wanted) if previous else set()
        settled: dict[NodeName, str] = {}
        unsettled = []
        for node in nodes:
            name = node.name
            version = node.resource_version
            if previous.get(name) == version and name not in changed:
                settled[name] = version
            else:
                unsettled.append(node)
        patches = diff_nodes(unsettled, wanted, deschedule_keys)
        patched = {patch.node for patch in patches}
        for node in unsettled:
            if node.name not in patched and node.resource_version:
                settled[node.name] = node.resource_version
        self._settled = settled
        self._keys = deschedule_keys
        self._wanted = wanted
        return patches


class LabelledPod(Protocol):
    """What the pod labels are decided from: a `Pod`, or the controller's `PodSummary`."""

    @property
    def namespace(self) -> Namespace: ...

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def node_name(self) -> NodeName | None: ...

    @property
    def phase(self) -> str: ...

    @property
    def terminating(self) -> bool: ...


def diff_pods(
    pods: Iterable[LabelledPod], violating: Mapping[PolicyKey, Collection[NodeName]]
) -> list[PodPatch]:
    """Pod label patches; `violating` maps every current deschedule policy to its nodes."""
    # Policy name -> violating nodes, per namespace: a pod finds its policy with two lookups
    # of strings whose hashes are cached, not by building a PolicyKey per pod.
    by_namespace: dict[str, dict[str, Collection[NodeName]]] = {}
    for key, violated in violating.items():
        by_namespace.setdefault(key.namespace, {})[key.name] = violated
    none: dict[str, Collection[NodeName]] = {}
    patches = []
    for pod in pods:
        labels = pod.labels
        if POLICY_LABEL not in labels and POD_VIOLATION_LABEL not in labels:
            continue  # most pods: neither links a policy nor carries our label
        if pod.phase in _FINISHED_PHASES or pod.terminating:
            continue
        current = labels.get(POD_VIOLATION_LABEL)
        linked = labels.get(POLICY_LABEL)
        policies = by_namespace.get(pod.namespace, none)
        want = None
        if linked and pod.node_name is not None:
            nodes = policies.get(linked)
            if nodes is not None and pod.node_name in nodes:
                want = linked
        if want == current:
            continue
        if want is not None:
            patches.append(PodPatch(pod.namespace, pod.name, {POD_VIOLATION_LABEL: want}))
        elif current is not None and (current == linked or current in policies):
            patches.append(PodPatch(pod.namespace, pod.name, remove=(POD_VIOLATION_LABEL,)))
    return patches
