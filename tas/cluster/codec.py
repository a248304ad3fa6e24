"""How an informer reads the bytes of one resource: list pages, watch lines, write answers.

Two ways, one interface (`Codec`):
- `JsonCodec`: parsed JSON (orjson into dicts), for the resources a cache holds few of and
  reads as documents (TASPolicies, PodDisruptionBudgets);
- `TypedCodec`: decoded into the structs of `tas.cluster.api_types` (msgspec), which parse only
  the fields the model reads, for the resources there are many of (pods, nodes).

Either way an object is decoded once, its identity read off it, and it is converted only when
the cache will keep it (it is newer than what the cache holds).

Errors:
    UndecodableError    the bytes are no object of the kind (a page item that could not be
                        decoded is skipped and logged instead, so one object costs itself, not
                        the page)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import msgspec
import orjson

from tas.cluster import api_types as api

log = logging.getLogger(__name__)

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
ObjectT = TypeVar("ObjectT", api.Pod, api.Node)


class UndecodableError(ValueError):
    """The bytes are not an object of the codec's kind."""


@dataclass(frozen=True, slots=True)
class Page:
    """One LIST page: its objects (decoded, not converted), the token for the next page (None
    on the last) and the list's resourceVersion."""

    objects: Sequence[Any]
    token: str | None
    resource_version: str


@dataclass(frozen=True, slots=True)
class Event:
    """One watch line: ADDED, MODIFIED, DELETED, BOOKMARK (`object` decoded) or ERROR
    (`object` the Status, a dict)."""

    type: str
    object: Any


@dataclass(frozen=True, slots=True)
class Identity:
    namespace: str  # "" when cluster-scoped
    name: str
    resource_version: str


class Codec(Protocol[T_co]):
    def page(self, data: bytes) -> Page: ...

    def event(self, line: bytes) -> Event: ...

    def one(self, data: bytes) -> Any:
        """One object, as a write's answer carries it."""
        ...

    def identity(self, obj: Any) -> Identity: ...

    def convert(self, obj: Any) -> T_co: ...


def _metadata_identity(metadata: Any) -> Identity:
    if not isinstance(metadata, dict):
        return Identity("", "", "")
    return Identity(
        str(metadata.get("namespace") or ""),
        str(metadata.get("name") or ""),
        str(metadata.get("resourceVersion") or ""),
    )


class JsonCodec(Generic[T]):
    """Objects as parsed JSON (dicts), converted by `convert`."""

    def __init__(self, convert: Callable[[Mapping[str, Any]], T]) -> None:
        self._convert = convert

    def page(self, data: bytes) -> Page:
        body = orjson.loads(data)
        metadata = body.get("metadata") or {}
        objects = [item for item in body.get("items") or () if isinstance(item, dict)]
        return Page(
            objects, metadata.get("continue") or None, str(metadata.get("resourceVersion") or "")
        )

    def event(self, line: bytes) -> Event:
        event = orjson.loads(line)
        return Event(str(event.get("type") or ""), event.get("object") or {})

    def one(self, data: bytes) -> Any:
        return orjson.loads(data)

    def identity(self, obj: Any) -> Identity:
        return _metadata_identity(obj.get("metadata") if isinstance(obj, dict) else None)

    def convert(self, obj: Any) -> T:
        return self._convert(obj)


class TypedCodec(Generic[ObjectT, T]):
    """Objects decoded into `api_types` structs of one kind, converted by `convert`."""

    def __init__(self, decoding: api.Decoding[ObjectT], convert: Callable[[ObjectT], T]) -> None:
        self._decoding: api.Decoding[ObjectT] = decoding
        self._convert: Callable[[ObjectT], T] = convert

    def page(self, data: bytes) -> Page:
        try:
            body = api.decode_list(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise UndecodableError(f"not a list: {error}") from error
        objects = []
        for item in body.items or ():
            try:
                objects.append(self._decoding.one(item))
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                log.error(
                    "Skipping %s: it does not decode as a %s (%s)",
                    _name_of(bytes(item)),
                    self._decoding.kind.__name__,
                    error,
                )
        metadata = body.metadata or api.ListMeta()
        return Page(objects, metadata.continue_ or None, metadata.resource_version)

    def event(self, line: bytes) -> Event:
        try:
            event = api.decode_event(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise UndecodableError(f"not a watch event: {error}") from error
        if not len(event.object):
            return Event(event.type, None)
        if event.type == "ERROR":
            return Event(event.type, orjson.loads(bytes(event.object)))
        try:
            return Event(event.type, self._decoding.one(event.object))
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise UndecodableError(
                f"{_name_of(bytes(event.object))} does not decode: {error}"
            ) from error

    def one(self, data: bytes) -> Any:
        try:
            return self._decoding.one(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise UndecodableError(str(error)) from error

    def identity(self, obj: Any) -> Identity:
        metadata = obj.metadata if obj is not None else None
        if metadata is None:
            return Identity("", "", "")
        return Identity(metadata.namespace, metadata.name, metadata.resource_version)

    def convert(self, obj: Any) -> T:
        record: T = self._convert(obj)
        return record


def _name_of(data: bytes) -> str:
    """`namespace/name` of an object that did not decode, for the log line."""
    try:
        identity = _metadata_identity(orjson.loads(data).get("metadata"))
    except (orjson.JSONDecodeError, AttributeError):
        return "an object"
    return f"{identity.namespace}/{identity.name}" if identity.namespace else identity.name
