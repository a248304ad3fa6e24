"""The emulator's object store: objects, one resourceVersion counter, a bounded watch history.

It keeps the API server's rules that clients depend on: every write bumps the cluster-wide
resourceVersion; a namespace is labelled `kubernetes.io/metadata.name=<name>`; a write that
carries a stale resourceVersion is a 409; writes to a resource with a `status` subresource
ignore `status`, and writes to `/status` change only `status`; `metadata.generation` moves only
when the spec does; watchers can resume from any resourceVersion still in the history, and get
410 Gone for older ones.
"""

from __future__ import annotations

import copy
import itertools
import threading
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from embedded.disruption import Budget, Verdict, judge_eviction
from tests.k8s_emulator.patches import PatchError, json_patch, merge_patch, selector_matches
from tests.k8s_emulator.resources import ResourceType

Object = dict[str, Any]
Key = tuple[str, str, str]  # plural, namespace ("" when cluster-scoped), name


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
            events = [e for e in self._history if e.resource_version > resource_version]
            return events, self._resource_version

    def _trim(self) -> None:
        while len(self._history) > self._history_window:
            self._compacted = self._history.popleft().resource_version

    def _record(
        self, resource: ResourceType, type_: str, obj: Object, previous: Object | None
    ) -> None:
        self._history.append(
            StoredEvent(self._resource_version, resource, type_, copy.deepcopy(obj), previous)
        )
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
        with self.condition:
            items = [
                copy.deepcopy(obj)
                for (plural, ns, _), obj in sorted(self._objects.items())
                if plural == resource.key
                and (namespace is None or ns == namespace)
                and predicate(obj)
            ]
            return items, self._resource_version

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
    ) -> Object:
        with self.condition:
            current = self._get(resource, namespace, name)
            wanted = (body.get("metadata") or {}).get("resourceVersion")
            if wanted and str(wanted) != current["metadata"]["resourceVersion"]:
                raise _conflict(resource, name)
            return self._commit(resource, current, copy.deepcopy(dict(body)), subresource)

    def patch(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
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
            return self._commit(resource, current, patched, subresource)

    def _commit(
        self, resource: ResourceType, current: Object, wanted: Object, subresource: str | None
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
            current["metadata"]["resourceVersion"] = self._bump()
            self._record(resource, "DELETED", current, None)
            return copy.deepcopy(current)

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
            # The verdict is the embedded cluster's (`embedded.disruption`): one definition.
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
