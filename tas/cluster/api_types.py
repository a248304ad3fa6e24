"""The fields of Kubernetes API objects this project reads, as msgspec structs.

A watch event of a pod is about 6 KB of JSON, and most of it is what no component reads
(managedFields, probes, security contexts, the projected token's sources). Decoding into these
structs parses only the declared fields into Python objects and skips the rest inside the
decoder, which is what makes a pod event cheap enough at 150,000 pods (`make bench`, "scale":
decoding a pod line into them takes a third of what `orjson.loads` takes into dicts, a fifth
of the standard library's `json.loads`, and `tas.cluster.convert` then reads attributes, not
chains of `dict.get`).

Every field has a default, so a missing one is no error; unknown fields are ignored. Types
follow the API's OpenAPI schema, which the API server enforces, so a real API never sends a
field of another type; a test's dict may (a quantity as a number), which is why quantities
accept numbers too. Structures only some pods have (affinity, topology spread) stay plain JSON
(`dict`), read by the same helpers as before.

`decode_one`, `decode_list` and `decode_event` are the entry points; `Decoded` is what they
give.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

Quantity = str | int | float
Json = dict[str, Any]


class Struct(msgspec.Struct, rename="camel"):
    """The base of every struct here: Python's names, the API's camelCase on the wire."""


class Present(Struct):
    """An object whose presence alone is read (a volume's source kind); its fields skipped."""


class OwnerReference(Struct):
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(Struct):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None


class Resources(Struct):
    requests: dict[str, Quantity] | None = None
    limits: dict[str, Quantity] | None = None


class Container(Struct):
    name: str = ""
    image: str = ""
    resources: Resources | None = None


class Toleration(Struct):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None


class ClaimSource(Struct):
    claim_name: str = ""


class Volume(Struct):
    name: str = ""
    empty_dir: Present | None = None
    host_path: Present | None = None
    persistent_volume_claim: ClaimSource | None = None
    config_map: Present | None = None
    secret: Present | None = None
    projected: Present | None = None
    downward_api: Present | None = msgspec.field(default=None, name="downwardAPI")
    ephemeral: Present | None = None


class PodSpec(Struct):
    node_name: str | None = None
    containers: list[Container] | None = None
    init_containers: list[Container] | None = None
    overhead: dict[str, Quantity] | None = None
    tolerations: list[Toleration] | None = None
    volumes: list[Volume] | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: Json | None = None
    topology_spread_constraints: list[Json] | None = None
    resource_claims: list[Present] | None = None


class PodCondition(Struct):
    type: str = ""
    status: str = ""
    reason: str | None = None
    last_transition_time: str | None = None


class Waiting(Struct):
    reason: str | None = None


class Terminated(Struct):
    reason: str | None = None
    exit_code: int | None = None


class ContainerState(Struct):
    waiting: Waiting | None = None
    terminated: Terminated | None = None


class ContainerStatus(Struct):
    name: str = ""
    restart_count: int = 0
    state: ContainerState | None = None


class PodStatus(Struct):
    phase: str | None = None
    reason: str | None = None
    qos_class: str | None = None
    start_time: str | None = None
    conditions: list[PodCondition] | None = None
    container_statuses: list[ContainerStatus] | None = None
    init_container_statuses: list[ContainerStatus] | None = None
    ephemeral_container_statuses: list[ContainerStatus] | None = None


class Pod(Struct):
    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None
    status: PodStatus | None = None


class Taint(Struct):
    key: str = ""
    value: str | None = None
    effect: str = ""


class NodeSpec(Struct):
    taints: list[Taint] | None = None
    unschedulable: bool | None = None


class NodeCondition(Struct):
    type: str = ""
    status: str = ""


class NodeAddress(Struct):
    type: str = ""
    address: str = ""


class NodeStatus(Struct):
    allocatable: dict[str, Quantity] | None = None
    conditions: list[NodeCondition] | None = None
    addresses: list[NodeAddress] | None = None


class Node(Struct):
    metadata: ObjectMeta | None = None
    spec: NodeSpec | None = None
    status: NodeStatus | None = None


#: Any struct above that is a whole object (it has `metadata`).
ObjectT = TypeVar("ObjectT", Pod, Node)


class ListMeta(Struct):
    resource_version: str = ""
    continue_: str | None = msgspec.field(default=None, name="continue")  # a Python keyword


class RawList(Struct):
    """A list page with its items left undecoded: each is decoded alone, so one object the
    decoder refuses costs that object, not the page."""

    metadata: ListMeta | None = None
    items: list[msgspec.Raw] | None = None


class RawEvent(Struct):
    type: str = ""
    #: Empty when the event has none (msgspec.Raw cannot be optional).
    object: msgspec.Raw = msgspec.Raw()


class Decoding(Generic[ObjectT]):
    """The decoders of one kind of object (made once: msgspec compiles them)."""

    def __init__(self, kind: type[ObjectT]) -> None:
        self.kind: type[ObjectT] = kind
        self._one: msgspec.json.Decoder[ObjectT] = msgspec.json.Decoder(kind)

    def one(self, data: bytes | msgspec.Raw) -> ObjectT:
        """One object; `msgspec.ValidationError` or `msgspec.DecodeError` when it is not one."""
        return self._one.decode(data)

    def convert(self, document: Json) -> ObjectT:
        """One object from its parsed JSON (a dict: a write's answer, a test's object)."""
        converted: ObjectT = msgspec.convert(document, self.kind, strict=False)
        return converted


_LIST = msgspec.json.Decoder(RawList)
_EVENT = msgspec.json.Decoder(RawEvent)


def decode_list(data: bytes) -> RawList:
    return _LIST.decode(data)


def decode_event(data: bytes) -> RawEvent:
    return _EVENT.decode(data)


__all__ = [
    "Decoding",
    "ListMeta",
    "Node",
    "ObjectMeta",
    "Pod",
    "RawEvent",
    "RawList",
    "decode_event",
    "decode_list",
]
