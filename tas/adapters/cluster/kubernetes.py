"""The `Cluster` interface on a real Kubernetes API, through the official client.

Reads come from four list+watch caches (nodes, pods, TASPolicies, PodDisruptionBudgets), each
kept current by a daemon thread (`tas.adapters.cluster.informer`), so a reconcile never LISTs; each
node's
addresses are kept beside its cache (`node_addresses`, `tas.cluster.node_addresses`). Writes go
to the API, touch only the keys given, and are folded into the cache at once:

- labels: a JSON merge patch of only our keys (`null` removes one), so labels other writers
  own are never overwritten;
- taints: a JSON patch that first `test`s the cached resourceVersion, so a concurrent change
  to the node's taints is never silently lost (the API answers 422: `ConflictError`);
- policy status: the `status` subresource of the CRD;
- events: core/v1 Events;
- evictions: the policy/v1 Eviction subresource, so PodDisruptionBudgets hold (429: REFUSED).

API errors become the interface's error types: 404 NotFoundError, 409 ConflictError,
429/5xx and connection failures TransientClusterError, anything else ClusterError. Every direct
call has a deadline (`request_timeout`, default 30 s): an API server that stops answering fails
the call as TransientClusterError (an eviction as FAILED) instead of blocking a cycle.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import orjson
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tas.adapters.cluster.heap import settle_heap
from tas.adapters.cluster.informer import (
    PAGE_SIZE,
    Backoff,
    ChangeCallback,
    Informer,
    ListCall,
    Raw,
    Sleep,
    Versioned,
)
from tas.clock import SYSTEM_CLOCK, Clock
from tas.cluster.codec import Codec, JsonCodec, TypedCodec
from tas.cluster.convert import (
    NODES,
    PODS,
    metrics_usage_from_api,
    namespace_from_api,
    node_from_api,
    pdb_from_api,
    pod_from_api,
    pod_summary_from_api,
    pvc_from_api,
    taint_to_api,
)
from tas.cluster.interface import (
    ChangeListener,
    ChangeListeners,
    ChangeType,
    ClusterChange,
    ClusterError,
    ConflictError,
    EvictionOutcome,
    EvictionResult,
    NotFoundError,
    PodFields,
    PolicyDocument,
    ResourceKind,
    TransientClusterError,
    policy_key_of,
)
from tas.cluster.model import (
    NamespaceInfo,
    Node,
    ObjectReference,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodSummary,
    Taint,
)
from tas.cluster.node_addresses import NodeAddresses, NodeAddressTable
from tas.cluster.sharing import SharedValues
from tas.types import Namespace, NodeName, PodKey, PolicyKey
from tas.vocabulary import GROUP, PLURAL, VERSION

log = logging.getLogger(__name__)

R = TypeVar("R")
T = TypeVar("T", bound=Versioned)

#: Deadlines of every direct call: the API server answers a write in milliseconds; one that
#: does not answer in this long is down for our purposes (TransientClusterError, retried next
#: cycle; an eviction is FAILED).
CONNECT_TIMEOUT_SECONDS = 10.0
REQUEST_TIMEOUT_SECONDS = 30.0

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def _describe(error: ApiException) -> str:
    return f"{error.status} {error.reason}: {(error.body or '')[:300]}"


def _api_call(what: str, call: Callable[[], R]) -> R:
    """Run one API call, mapping its failures to the interface's error types."""
    try:
        return call()
    except ApiException as error:
        message = f"{what}: {_describe(error)}"
        if error.status == 404:
            raise NotFoundError(message) from error
        if error.status == 409:
            raise ConflictError(message) from error
        if error.status in (0, 429) or error.status >= 500:
            raise TransientClusterError(message) from error
        raise ClusterError(message) from error
    except (urllib3.exceptions.HTTPError, OSError) as error:
        raise TransientClusterError(f"{what}: {error}") from error


def _policy_document(raw: Raw) -> PolicyDocument:
    # The API server never lists an object without metadata.name, so `policy_key_of` (which
    # refuses one) cannot fail here.
    return PolicyDocument(policy_key_of(raw), raw)


class KubernetesCluster:
    """See the module docstring. `start()` the caches, then `wait_synced()` before reading."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        policy_namespace: str | None = None,
        component: str = "telemetry-aware-scheduling",
        clock: Clock = SYSTEM_CLOCK,
        sleep: Sleep | None = None,
        backoff: Callable[[], Backoff] = Backoff,
        watch_timeout: float = 60.0,
        request_timeout: float = REQUEST_TIMEOUT_SECONDS,
        pod_field_selector: str = "",
        pod_label_selectors: Sequence[str] = (),
        pod_fields: PodFields = PodFields.ALL,
        watched: Collection[ResourceKind] | None = None,
        page_size: int = PAGE_SIZE,
        freeze_heap: bool = False,
    ) -> None:
        """`watched` limits the caches kept (default: all): the extender, say, needs only
        policies, and its RBAC allows nothing else. `pod_label_selectors` limit the pods cached
        to those any of them selects (the controller keeps only the pods linked to a policy or
        labelled by it), `pod_field_selector` applies to all, and `pod_fields` says which
        fields of each pod are kept. `request_timeout` bounds every direct call (writes,
        evictions, lookups) so a hung API server fails a call instead of a cycle.
        `freeze_heap` keeps the garbage collector off the cached records
        (`tas.adapters.cluster.heap`):
        for a component's process, whose heap they are."""
        self._api_client = api_client
        #: What every direct call passes: raw answers, and a deadline to connect and to answer.
        self._call: dict[str, Any] = {
            "_preload_content": False,
            "_request_timeout": (CONNECT_TIMEOUT_SECONDS, request_timeout),
        }
        self._core = client.CoreV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        self._policy_api = client.PolicyV1Api(api_client)
        self._component = component
        self._clock = clock
        self._listeners = ChangeListeners()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        if policy_namespace:
            list_policies = functools.partial(
                self._custom.list_namespaced_custom_object, GROUP, VERSION, policy_namespace, PLURAL
            )
        else:
            list_policies = functools.partial(
                self._custom.list_cluster_custom_object, GROUP, VERSION, PLURAL
            )

        def informer(
            kind: ResourceKind,
            name: str,
            list_call: ListCall,
            codec: Codec[T],
            **more: Any,
        ) -> Informer[T]:
            return Informer(
                name=name,
                list_call=list_call,
                codec=codec,
                on_change=self._notifier(kind),
                backoff=backoff(),
                watch_timeout=watch_timeout,
                sleep=sleep,
                page_size=page_size,
                after_page=settle_heap if freeze_heap else None,
                **more,
            )

        # One table of shared values for every cache: pods and nodes name the same nodes.
        shared = SharedValues()
        # Each node's addresses, read as the node cache converts it (`node_addresses`).
        self._addresses = NodeAddressTable()
        self._listeners.subscribe(self._forget_deleted_node)
        self._nodes = informer(
            ResourceKind.NODE,
            "nodes",
            self._core.list_node,
            TypedCodec(
                NODES,
                self._addresses.recording(functools.partial(node_from_api, shared=shared)),
            ),
        )
        convert_pod: Callable[..., Pod | PodSummary] = (
            pod_from_api if pod_fields is PodFields.ALL else pod_summary_from_api
        )
        self._pod_fields = pod_fields
        # One pod cache per label selector (Kubernetes has no OR of selectors), or one of all.
        # Their records are `Pod`s, or `PodSummary`s with `PodFields.SUMMARY`.
        self._pod_caches: tuple[Informer[Any], ...] = tuple(
            informer(
                ResourceKind.POD,
                f"pods[{label_selector}]" if label_selector else "pods",
                self._core.list_pod_for_all_namespaces,
                TypedCodec(PODS, functools.partial(convert_pod, shared=shared)),
                selectors={
                    k: v
                    for k, v in {
                        "field_selector": pod_field_selector,
                        "label_selector": label_selector,
                    }.items()
                    if v
                }
                or None,
            )
            for label_selector in (tuple(pod_label_selectors) or ("",))
        )
        self._policies = informer(
            ResourceKind.POLICY, "taspolicies", list_policies, JsonCodec(_policy_document)
        )
        self._pdbs = informer(
            ResourceKind.PDB,
            "poddisruptionbudgets",
            self._policy_api.list_pod_disruption_budget_for_all_namespaces,
            JsonCodec(pdb_from_api),
        )

        kinds: dict[ResourceKind, tuple[Informer[Any], ...]] = {
            ResourceKind.NODE: (self._nodes,),
            ResourceKind.POD: self._pod_caches,
            ResourceKind.POLICY: (self._policies,),
            ResourceKind.PDB: (self._pdbs,),
        }
        self._watched: tuple[Informer[Any], ...] = tuple(
            informer
            for kind, informers in kinds.items()
            if watched is None or kind in watched
            for informer in informers
        )

    @property
    def informers(self) -> tuple[Informer[Any], ...]:
        """The caches this cluster keeps (and starts, and waits for)."""
        return self._watched

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start one list+watch daemon thread per cache."""
        if self._threads:
            return
        for informer in self.informers:
            thread = threading.Thread(
                target=informer.run, args=(self._stop,), name=f"watch-{informer.name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def still_listing(self) -> list[str]:
        """The caches that have not listed once yet (what a wait names)."""
        return [i.name for i in self.informers if not i.synced.is_set()]

    def wait_synced(self, timeout: float) -> bool:
        """True once every cache has listed once; False if `timeout` seconds pass first."""
        deadline = time.monotonic() + timeout
        for informer in self.informers:
            remaining = max(0.0, deadline - time.monotonic())
            if not informer.synced.wait(remaining):
                return False
        return True

    def stop(self, timeout: float = 1.0) -> None:
        """Abort every list and watch in progress; wait at most `timeout` seconds in all.

        The aborted threads end in milliseconds. One still opening a connection to an API
        server that does not answer is left behind: it is a daemon holding nothing to flush.
        """
        self._stop.set()
        for informer in self.informers:
            informer.close()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        return self._listeners.subscribe(listener)

    def _notifier(self, kind: ResourceKind) -> ChangeCallback:
        def notify(type_: ChangeType, namespace: str, name: str) -> None:
            change = ClusterChange(kind, type_, name, namespace)
            for listener in self._listeners.current():
                try:
                    listener(change)
                except Exception:  # a listener's bug must not kill the watch thread
                    log.exception("Change listener failed on %s", change)

        return notify

    # ------------------------------------------------------------ reads (from the caches)

    def list_nodes(self) -> Sequence[Node]:
        return self._nodes.items()

    def node_addresses(self) -> NodeAddresses:
        """Each cached node's `status.addresses` (`tas.cluster.node_addresses`): the same
        object until an address changes. Empty when nodes are not watched."""
        return self._addresses.snapshot()

    def _forget_deleted_node(self, change: ClusterChange) -> None:
        if change.kind is ResourceKind.NODE and change.type is ChangeType.DELETED:
            self._addresses.forget(change.name)

    def list_pods(self, *, node: NodeName | None = None) -> Sequence[Pod]:
        self._need_every_pod_field()
        pods: list[Pod] = self._cached_pods()
        return pods if node is None else [p for p in pods if p.node_name == node]

    def list_pod_summaries(self) -> Sequence[Pod | PodSummary]:
        """Every cached pod, as the cache keeps it (`PodSummary`s with `PodFields.SUMMARY`)."""
        pods: list[Pod | PodSummary] = self._cached_pods()
        return pods

    def _cached_pods(self) -> Any:
        if len(self._pod_caches) == 1:
            return self._pod_caches[0].items()
        # A pod more than one selector matches is in each of their caches: once here.
        newest: dict[PodKey, Any] = {}
        for cache in self._pod_caches:
            for pod in cache.items():
                key = (pod.namespace, pod.name)
                held = newest.get(key)
                if held is None or _version_number(pod) > _version_number(held):
                    newest[key] = pod
        return [newest[key] for key in sorted(newest)]

    def find_node(self, name: str) -> Node | None:
        """One node from the cache (None when it is not there)."""
        return self._nodes.get(name)

    def find_pod(self, namespace: str, name: str) -> Pod | None:
        """One pod from the cache (None when it is not there)."""
        self._need_every_pod_field()
        found: Pod | None = self._find_pod(namespace, name)
        return found

    def find_pod_summary(self, namespace: str, name: str) -> Pod | PodSummary | None:
        """One pod as the cache keeps it (a `PodSummary` with `PodFields.SUMMARY`), None when
        it is not there: what placements read."""
        found: Pod | PodSummary | None = self._find_pod(namespace, name)
        return found

    def _need_every_pod_field(self) -> None:
        if self._pod_fields is not PodFields.ALL:
            raise ClusterError(
                f"this cluster's pod cache keeps {self._pod_fields.value} fields only"
            )

    def _find_pod(self, namespace: str, name: str) -> Any:
        found = [
            pod
            for cache in self._pod_caches
            if (pod := cache.get(f"{namespace}/{name}")) is not None
        ]
        return max(found, key=_version_number) if found else None

    def list_policy_documents(self) -> Sequence[PolicyDocument]:
        return self._policies.items()

    def list_pdbs(self) -> Sequence[PodDisruptionBudget]:
        return self._pdbs.items()

    # ------------------------------------------------------------ reads (direct, on demand)

    def get_priority_class_value(self, name: str) -> int | None:
        scheduling = client.SchedulingV1Api(self._api_client)
        try:
            raw = _api_call(
                f"read priorityclass {name}",
                lambda: scheduling.read_priority_class(name, **self._call),
            )
        except NotFoundError:
            return None
        value = _json(raw).get("value")
        return int(value) if isinstance(value, int) else None

    def list_namespaces(self) -> Sequence[NamespaceInfo]:
        raw = _api_call("list namespaces", lambda: self._core.list_namespace(**self._call))
        return [namespace_from_api(item) for item in _json(raw).get("items") or ()]

    def list_persistent_volume_claims(self) -> Sequence[PersistentVolumeClaim]:
        raw = _api_call(
            "list persistentvolumeclaims",
            lambda: self._core.list_persistent_volume_claim_for_all_namespaces(**self._call),
        )
        return [pvc_from_api(item) for item in _json(raw).get("items") or ()]

    def list_node_metrics(self) -> Mapping[NodeName, Mapping[str, float]]:
        items = self._metrics("nodes")
        return {
            NodeName(str((item.get("metadata") or {}).get("name", ""))): metrics_usage_from_api(
                item
            )
            for item in items
        }

    def list_pod_metrics(self) -> Mapping[PodKey, Mapping[str, float]]:
        found: dict[PodKey, Mapping[str, float]] = {}
        for item in self._metrics("pods"):
            metadata = item.get("metadata") or {}
            key = (Namespace(str(metadata.get("namespace", ""))), str(metadata.get("name", "")))
            found[key] = metrics_usage_from_api(item)
        return found

    def list_events(self, *, field_selector: str = "") -> list[Raw]:
        """core/v1 Events in every namespace, as the API returns them (one call, not cached:
        `tas explain` reads the evictions the descheduler recorded; RBAC `events` list)."""
        raw = _api_call(
            "list events",
            lambda: self._core.list_event_for_all_namespaces(
                field_selector=field_selector, **self._call
            ),
        )
        return [item for item in _json(raw).get("items") or () if isinstance(item, dict)]

    def _metrics(self, plural: str) -> list[Raw]:
        raw = _api_call(
            f"list metrics.k8s.io {plural}",
            lambda: self._custom.list_cluster_custom_object(
                "metrics.k8s.io", "v1beta1", plural, **self._call
            ),
        )
        return [item for item in _json(raw).get("items") or () if isinstance(item, dict)]

    # ------------------------------------------------------------ writes

    def patch_node_labels(
        self,
        node: NodeName,
        *,
        set_labels: Mapping[str, str],
        remove: Iterable[str] = (),
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        labels = _label_patch(set_labels, remove)
        metadata: dict[str, Any] = {"labels": labels} if labels else {}
        if annotations:
            metadata["annotations"] = dict(annotations)
        if not metadata:
            return
        raw = _api_call(
            f"patch labels of node {node}",
            lambda: self._core.patch_node(
                node,
                {"metadata": metadata},
                _content_type=MERGE_PATCH,
                **self._call,
            ),
        )
        self._nodes.apply_answer(ChangeType.MODIFIED, _data(raw))

    def patch_pod_labels(
        self,
        namespace: Namespace,
        name: str,
        *,
        set_labels: Mapping[str, str],
        remove: Iterable[str] = (),
    ) -> None:
        labels = _label_patch(set_labels, remove)
        if not labels:
            return
        raw = _api_call(
            f"patch labels of pod {namespace}/{name}",
            lambda: self._core.patch_namespaced_pod(
                name,
                namespace,
                {"metadata": {"labels": labels}},
                _content_type=MERGE_PATCH,
                **self._call,
            ),
        )
        key = f"{namespace}/{name}"
        # Only into the caches that hold the pod: one whose selector it now matches learns of
        # it from its own watch, one whose selector it no longer matches drops it so.
        for cache in self._pod_caches:
            if cache.get(key) is not None:
                cache.apply_answer(ChangeType.MODIFIED, _data(raw))

    def set_node_taints(self, node: NodeName, taints: Sequence[Taint]) -> None:
        cached = self._nodes.get(node)
        if cached is None:
            raise NotFoundError(f"node {node} is not in the cache")
        patch: Any = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": cached.resource_version},
            {"op": "add", "path": "/spec/taints", "value": [taint_to_api(t) for t in taints]},
        ]
        try:
            raw = _api_call(
                f"set taints of node {node}",
                lambda: self._core.patch_node(node, patch, _content_type=JSON_PATCH, **self._call),
            )
        except ClusterError as error:
            # A failed `test` is a 422: the node moved since we read it.
            cause = error.__cause__
            if isinstance(cause, ApiException) and cause.status == 422:
                raise ConflictError(
                    f"node {node} changed since resourceVersion {cached.resource_version}"
                ) from cause
            raise
        self._nodes.apply_answer(ChangeType.MODIFIED, _data(raw))

    def update_policy_status(self, key: PolicyKey, status: Mapping[str, Any]) -> None:
        # `add` on /status replaces it whole, so keys dropped from the status really go away.
        patch = [{"op": "add", "path": "/status", "value": dict(status)}]
        raw = _api_call(
            f"update status of taspolicy {key}",
            lambda: self._custom.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                key.namespace,
                PLURAL,
                key.name,
                patch,
                _content_type=JSON_PATCH,
                **self._call,
            ),
        )
        self._policies.apply_answer(ChangeType.MODIFIED, _data(raw))

    def emit_event(
        self, involved: ObjectReference, *, reason: str, message: str, warning: bool = False
    ) -> None:
        now = self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        namespace = involved.namespace or "default"
        body: Any = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{involved.name}.", "namespace": namespace},
            "involvedObject": {
                "kind": involved.kind,
                "name": involved.name,
                "namespace": involved.namespace or None,
                "uid": involved.uid or None,
                "apiVersion": involved.api_version,
            },
            "reason": reason,
            "message": message[:1024],
            "type": "Warning" if warning else "Normal",
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        _api_call(
            f"emit event {reason} for {involved.kind} {involved.name}",
            lambda: self._core.create_namespaced_event(namespace, body, **self._call),
        )

    def evict_pod(
        self,
        namespace: Namespace,
        name: str,
        *,
        reason: str,
        grace_period_seconds: int | None = None,
    ) -> EvictionResult:
        body: Any = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        log.info("Evicting pod %s/%s: %s", namespace, name, reason)
        try:
            self._core.create_namespaced_pod_eviction(name, namespace, body, **self._call)
        except ApiException as error:
            if error.status == 429:
                return EvictionResult(EvictionOutcome.REFUSED, _status_message(error))
            if error.status == 404:
                return EvictionResult(EvictionOutcome.NOT_FOUND, _status_message(error))
            return EvictionResult(EvictionOutcome.FAILED, _describe(error))
        except (urllib3.exceptions.HTTPError, OSError) as error:
            return EvictionResult(EvictionOutcome.FAILED, str(error))
        return EvictionResult(EvictionOutcome.EVICTED)


def _version_number(pod: Pod | PodSummary) -> int:
    try:
        return int(pod.resource_version)
    except ValueError:
        return 0


def _label_patch(set_labels: Mapping[str, str], remove: Iterable[str]) -> dict[str, str | None]:
    patch: dict[str, str | None] = dict.fromkeys(remove)
    patch.update(set_labels)
    return patch


def _data(response: Any) -> bytes:
    """The body of a call made with `_preload_content=False`."""
    return bytes(response.data)


def _json(response: Any) -> Raw:
    loaded: Raw = orjson.loads(response.data)
    return loaded


def _status_message(error: ApiException) -> str:
    try:
        return str(orjson.loads(error.body or "{}").get("message") or error.reason)
    except (ValueError, AttributeError):
        return str(error.reason)
