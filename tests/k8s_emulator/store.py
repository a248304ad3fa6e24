"""The emulator's object store: objects, one resourceVersion counter, a bounded watch history.

It keeps the API server's rules that clients depend on: every write bumps the cluster-wide
resourceVersion; a namespace is labelled `kubernetes.io/metadata.name=<name>`; a write that
carries a stale resourceVersion is a 409; writes to a resource with a `status` subresource
ignore `status`, and writes to `/status` change only `status`; `metadata.generation` moves only
when the spec does; watchers can resume from any resourceVersion still in the history, and get
410 Gone for older ones.

Lists are paginated as the API server does it (`page`): with `limit`, a page holds at most that
many objects and a `continue` token for the rest; every page of one list is served from the
snapshot the first page was cut from (etcd's MVCC read at that resourceVersion), and a token
whose snapshot has been compacted away (it is older than the watch history, or one of the
`SNAPSHOTS` newest lists) is refused with 410 Expired.

Stored objects are never changed in place: every write stores a new dict (sharing the parts it
did not change), so lists, pages, snapshots and the history hand out references, not copies,
which is what lets the emulator serve 150,000 realistic pods (`load`).
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import threading
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tas_inmemory.disruption import Budget, Verdict, judge_eviction
from tests.k8s_emulator.patches import PatchError, json_patch, merge_patch, selector_matches
from tests.k8s_emulator.resources import ResourceType

Object = dict[str, Any]
Key = tuple[str, str, str]  # plural, namespace ("" when cluster-scoped), name
#: Validating admission of an update: called with (the object as it would be stored, the stored
#: one) before it is stored; raising ApiError refuses the write (`admission.py`).
Admit = Callable[[Object, Object], None]

#: How many paginated lists keep their snapshot for their `continue` tokens.
SNAPSHOTS = 32
#: What the API server answers to an expired continue token (staging/src/k8s.io/apiserver/
#: pkg/storage/errors.go, `NewResourceExpired` with etcd3's `continueExpired` message).
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a list: its objects, the snapshot's resourceVersion, the token for the
    rest ("" on the last page) and how many objects the pages after it hold."""

    items: list[Object]
    resource_version: int
    token: str
    remaining: int


class ApiError(Exception):
    """An error answer, rendered as a `Status` object with `code`."""

    def __init__(
        self, code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
    ):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details or {})

    def status(self) -> Object:
        body: Object = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


@dataclass(frozen=True, slots=True)
class StoredEvent:
    resource_version: int
    resource: ResourceType
    type: str  # ADDED | MODIFIED | DELETED
    object: Object
    previous: Object | None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _not_found(resource: ResourceType, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{resource.plural} "{name}" not found',
        {"name": name, "kind": resource.plural},
    )


def _conflict(resource: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource.plural} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        {"name": name, "kind": resource.plural},
    )


def _spec_of(obj: Mapping[str, Any]) -> Object:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


class ObjectStore:
    def __init__(self, *, history_window: int = 1000) -> None:
        self.condition = threading.Condition()
        self._objects: dict[Key, Object] = {}
        self._counter = itertools.count(100)
        self._resource_version = next(self._counter)
        self._history: deque[StoredEvent] = deque()
        self._compacted = self._resource_version  # events at or below this are gone
        self._history_window = history_window
        #: Paginated lists: id -> (resourceVersion, the matching objects in key order).
        self._snapshots: OrderedDict[int, tuple[int, list[Object]]] = OrderedDict()
        self._snapshot_ids = itertools.count(1)

    # ------------------------------------------------------------ history

    @property
    def resource_version(self) -> int:
        with self.condition:
            return self._resource_version

    def set_history_window(self, size: int) -> None:
        with self.condition:
            self._history_window = size
            self._trim()

    def compact(self) -> None:
        """Forget every event so far: a watch from any older resourceVersion gets 410."""
        with self.condition:
            self._history.clear()
            self._compacted = self._resource_version

    def events_since(self, resource_version: int) -> tuple[list[StoredEvent], int]:
        """Events after `resource_version`, and the current one; ApiError(410) if forgotten."""
        with self.condition:
            if resource_version < self._compacted:
                raise ApiError(
                    410,
                    "Expired",
                    f"too old resource version: {resource_version} ({self._compacted})",
                )
            # From the newest back: a watcher that keeps up costs what it missed, not the
            # whole history (which holds tens of thousands of events under churn).
            events: list[StoredEvent] = []
            for event in reversed(self._history):
                if event.resource_version <= resource_version:
                    break
                events.append(event)
            events.reverse()
            return events, self._resource_version

    def _trim(self) -> None:
        while len(self._history) > self._history_window:
            self._compacted = self._history.popleft().resource_version

    def _record(
        self, resource: ResourceType, type_: str, obj: Object, previous: Object | None
    ) -> None:
        self._history.append(StoredEvent(self._resource_version, resource, type_, obj, previous))
        self._trim()
        self.condition.notify_all()

    def _bump(self) -> str:
        self._resource_version = next(self._counter)
        return str(self._resource_version)

    # ------------------------------------------------------------ reads

    def list(
        self,
        resource: ResourceType,
        namespace: str | None,
        predicate: Callable[[Mapping[str, Any]], bool] = lambda _: True,
    ) -> tuple[list[Object], int]:
        """The matching objects in key order (the stored dicts: never change them)."""
        with self.condition:
            items = [
                obj
                for (plural, ns, _), obj in sorted(self._objects.items())
                if plural == resource.key
                and (namespace is None or ns == namespace)
                and predicate(obj)
            ]
            return items, self._resource_version

    def page(
        self,
        resource: ResourceType,
        namespace: str | None,
        predicate: Callable[[Mapping[str, Any]], bool],
        *,
        limit: int,
        token: str = "",
    ) -> Page:
        """One page of at most `limit` objects: the first (no `token`) from a new snapshot,
        the others from the snapshot their token names; ApiError(410) once it is gone."""
        with self.condition:
            if token:
                snapshot_id, offset = _read_token(token)
                found = self._snapshots.get(snapshot_id)
                if found is None or found[0] < self._compacted:
                    self._snapshots.pop(snapshot_id, None)
                    raise ApiError(410, "Expired", CONTINUE_EXPIRED)
                resource_version, items = found
            else:
                items, resource_version = self.list(resource, namespace, predicate)
                offset = 0
                if len(items) > limit:
                    snapshot_id = next(self._snapshot_ids)
                    self._snapshots[snapshot_id] = (resource_version, items)
                    while len(self._snapshots) > SNAPSHOTS:
                        self._snapshots.popitem(last=False)
            end = offset + limit
            rest = max(0, len(items) - end)
            next_token = _write_token(snapshot_id, end) if rest else ""
            if not rest and token:
                self._snapshots.pop(snapshot_id, None)
            return Page(items[offset:end], resource_version, next_token, rest)

    def get(self, resource: ResourceType, namespace: str | None, name: str) -> Object:
        with self.condition:
            return copy.deepcopy(self._get(resource, namespace, name))

    def _get(self, resource: ResourceType, namespace: str | None, name: str) -> Object:
        obj = self._objects.get(self._key(resource, namespace, name))
        if obj is None:
            raise _not_found(resource, name)
        return obj

    @staticmethod
    def _key(resource: ResourceType, namespace: str | None, name: str) -> Key:
        return (resource.key, (namespace or "") if resource.namespaced else "", name)

    # ------------------------------------------------------------ writes

    def create(
        self,
        resource: ResourceType,
        namespace: str | None,
        body: Mapping[str, Any],
        *,
        keep_status: bool = True,
    ) -> Object:
        """Store a new object; with `keep_status=False` (API clients) `status` is dropped."""
        obj = copy.deepcopy(dict(body))
        if not keep_status and resource.has_status:
            obj.pop("status", None)
        metadata = dict(obj.get("metadata") or {})
        name = metadata.get("name")
        if not name and metadata.get("generateName"):
            name = f"{metadata['generateName']}{uuid.uuid4().hex[:5]}"
        if not name:
            raise ApiError(422, "Invalid", "metadata.name: Required value: name is required")
        if resource.namespaced:
            namespace = namespace or metadata.get("namespace") or "default"
            metadata["namespace"] = namespace
        with self.condition:
            key = self._key(resource, namespace, name)
            if key in self._objects:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{resource.plural} "{name}" already exists',
                    {"name": name, "kind": resource.plural},
                )
            if resource.plural == "namespaces":
                # The API server labels every namespace with its name (since Kubernetes 1.22).
                labels = dict(metadata.get("labels") or {})
                labels["kubernetes.io/metadata.name"] = name
                metadata["labels"] = labels
            metadata.update(
                name=name,
                uid=str(uuid.uuid4()),
                creationTimestamp=metadata.get("creationTimestamp") or _now(),
                generation=1,
                resourceVersion=self._bump(),
            )
            obj.update(apiVersion=resource.api_version, kind=resource.kind, metadata=metadata)
            self._objects[key] = obj
            self._record(resource, "ADDED", obj, None)
            return copy.deepcopy(obj)

    def replace(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        body: Mapping[str, Any],
        *,
        subresource: str | None = None,
        admit: Admit | None = None,
    ) -> Object:
        with self.condition:
            current = self._get(resource, namespace, name)
            wanted = (body.get("metadata") or {}).get("resourceVersion")
            if wanted and str(wanted) != current["metadata"]["resourceVersion"]:
                raise _conflict(resource, name)
            return self._commit(resource, current, copy.deepcopy(dict(body)), subresource, admit)

    def patch(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
        admit: Admit | None = None,
    ) -> Object:
        with self.condition:
            current = self._get(resource, namespace, name)
            try:
                if content_type.startswith("application/json-patch+json"):
                    patched = json_patch(current, patch)
                elif content_type.startswith(
                    ("application/merge-patch+json", "application/strategic-merge-patch+json")
                ):
                    patched = merge_patch(current, patch)
                else:
                    raise ApiError(
                        415, "UnsupportedMediaType", f"unsupported patch type {content_type}"
                    )
            except PatchError as error:
                reason = "Invalid" if error.status == 422 else "BadRequest"
                raise ApiError(error.status, reason, str(error)) from error
            if not isinstance(patched, dict):
                raise ApiError(422, "Invalid", "a patch must leave an object")
            wanted = (patched.get("metadata") or {}).get("resourceVersion")
            if wanted is not None and str(wanted) != current["metadata"]["resourceVersion"]:
                raise _conflict(resource, name)
            return self._commit(resource, current, patched, subresource, admit)

    def _commit(
        self,
        resource: ResourceType,
        current: Object,
        wanted: Object,
        subresource: str | None,
        admit: Admit | None = None,
    ) -> Object:
        if subresource not in (None, "status") or (subresource and not resource.has_status):
            raise ApiError(404, "NotFound", f"no subresource {subresource!r} on {resource.plural}")
        if subresource == "status":
            new = copy.deepcopy(current)
            new["status"] = wanted.get("status")
            if new["status"] is None:
                del new["status"]
        else:
            new = wanted
            if resource.has_status:
                new.pop("status", None)
                if "status" in current:
                    new["status"] = copy.deepcopy(current["status"])
        metadata = dict(new.get("metadata") or {})
        # Identity fields are the server's, whatever the client sent.
        for field in ("name", "namespace", "uid", "creationTimestamp", "generation"):
            if field in current["metadata"]:
                metadata[field] = current["metadata"][field]
        new.update(apiVersion=resource.api_version, kind=resource.kind)
        if _spec_of(new) != _spec_of(current) and subresource is None:
            metadata["generation"] = int(current["metadata"].get("generation", 1)) + 1
        new["metadata"] = metadata
        metadata["resourceVersion"] = current["metadata"]["resourceVersion"]
        if admit is not None:  # as the API server, also for an update that changes nothing
            admit(new, current)
        if new == current:
            return copy.deepcopy(current)  # a no-op write does not bump resourceVersion
        metadata["resourceVersion"] = self._bump()
        key = self._key(resource, metadata.get("namespace"), metadata["name"])
        self._objects[key] = new
        self._record(resource, "MODIFIED", new, copy.deepcopy(current))
        return copy.deepcopy(new)

    def delete(self, resource: ResourceType, namespace: str | None, name: str) -> Object:
        with self.condition:
            current = self._get(resource, namespace, name)
            del self._objects[self._key(resource, namespace, name)]
            # A new dict: the stored one may still be in a snapshot or the history.
            gone = {**current, "metadata": {**current["metadata"], "resourceVersion": self._bump()}}
            self._record(resource, "DELETED", gone, None)
            return copy.deepcopy(gone)

    def load(self, resource: ResourceType, objects: Iterable[Object]) -> int:
        """Store many objects at once, as they are (not copied: never change them after), with
        a resourceVersion each and no watch events; the emulator's bulk path for the scale
        benchmark. An object already stored under the same name is replaced."""
        count = 0
        with self.condition:
            for obj in objects:
                metadata = obj["metadata"]
                namespace = metadata.get("namespace") if resource.namespaced else None
                metadata["resourceVersion"] = self._bump()
                self._objects[self._key(resource, namespace, metadata["name"])] = obj
                count += 1
            self.compact()  # watchers from before the load must list again
            self.condition.notify_all()
        return count

    def evict(self, pods: ResourceType, pdbs: ResourceType, namespace: str, name: str) -> None:
        """The Eviction subresource: delete the pod unless a PodDisruptionBudget forbids it."""
        with self.condition:
            pod = self._get(pods, namespace, name)
            labels = (pod.get("metadata") or {}).get("labels") or {}
            budgets = [
                obj
                for (plural, ns, _), obj in sorted(self._objects.items())
                if plural == pdbs.key
                and ns == namespace
                and selector_matches((obj.get("spec") or {}).get("selector"), labels)
            ]
            # The verdict is the in-memory cluster's (`tas_inmemory.disruption`): one definition.
            by_name = {str(b["metadata"]["name"]): b for b in budgets}
            verdict = judge_eviction(
                phase=str((pod.get("status") or {}).get("phase", "Running")),
                terminating=bool(pod["metadata"].get("deletionTimestamp")),
                budgets=[
                    Budget(name, int((b.get("status") or {}).get("disruptionsAllowed", 0)))
                    for name, b in by_name.items()
                ],
            )
            if verdict.verdict is Verdict.FAIL:
                raise ApiError(500, "InternalError", verdict.message)
            if verdict.verdict is Verdict.REFUSE:
                (refusing,) = by_name
                raise ApiError(
                    429,
                    "TooManyRequests",
                    verdict.message,
                    {
                        "causes": [
                            {
                                "reason": "DisruptionBudget",
                                "message": f"The disruption budget {refusing} allows no "
                                "disruption now",
                            }
                        ]
                    },
                )
            if verdict.charged is not None:
                budget = by_name[verdict.charged.name]
                status = dict(budget.get("status") or {})
                status["disruptionsAllowed"] = verdict.charged.disruptions_allowed - 1
                self._commit(pdbs, budget, {"status": status}, "status")
            self.delete(pods, namespace, name)


def _write_token(snapshot_id: int, offset: int) -> str:
    """An opaque token, as the API server's is (base64 of JSON): where the next page starts."""
    raw = json.dumps({"snapshot": snapshot_id, "offset": offset}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _read_token(token: str) -> tuple[int, int]:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(decoded["snapshot"]), int(decoded["offset"])
    except (ValueError, KeyError, TypeError) as error:
        raise ApiError(400, "BadRequest", f"invalid continue token: {error}") from error
