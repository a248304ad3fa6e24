"""The kube-scheduler extender wire format (`k8s.io/kube-scheduler/extender/v1`).

Keys are Go field names without JSON tags, so Go matches them case-insensitively on input; this
codec does the same for every key it reads (and, like Go, the last of duplicate keys wins) and
always writes the exact names. Only the pod's identity and labels and the candidate node names
are read; a `Nodes` list is kept as the original bytes of each item and answered by slicing, so
a 20 MB NodeList is never turned into Python objects (see `jsonscan`).

Whatever the path, a body is accepted only if all of it is valid JSON nested at most
`MAX_DEPTH` levels: bytes copied into an answer were validated first, so every answer is
valid JSON that names only nodes of the request.

Errors:
    WireError       the body is not a usable ExtenderArgs; the message says why (HTTP 400)
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, cast

import orjson

from extender.jsonscan import MAX_DEPTH, Cursor, ScanError, check_depth, check_json
from tas.types import Namespace, NodeName

#: Bodies at least this large are scanned instead of parsed in full.
SCAN_THRESHOLD = 256 * 1024
# Nesting levels in ExtenderArgs: the body, its members, members of Nodes, and each Node.
_MEMBER_LEVEL = 2
_NODE_LIST_MEMBER_LEVEL = 3
_NODE_LEVEL = 4


class WireError(ValueError):
    """The request body is not a usable ExtenderArgs."""


@dataclass(frozen=True, slots=True)
class PodInfo:
    """What the extender needs of a pod: who it is and its labels."""

    name: str
    namespace: Namespace
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class RawNodeList:
    """A NodeList as received: the bytes around `items`, and each item's bytes and name."""

    names: tuple[NodeName, ...]
    #: Views into the request body: nothing is copied until the answer is joined.
    items: tuple[memoryview, ...]
    #: Everything up to and including `[` of `items`, and from its `]` to the end.
    head: memoryview
    tail: memoryview

    def encode_parts(self, keep: Collection[NodeName]) -> list[bytes | memoryview]:
        parts: list[bytes | memoryview] = [self.head]
        for name, item in zip(self.names, self.items, strict=True):
            if name in keep:
                parts.append(item)
                parts.append(b",")
        if len(parts) > 1:
            parts.pop()  # the last comma
        parts.append(self.tail)
        return parts


@dataclass(frozen=True, slots=True)
class ParsedNodeList:
    """A NodeList parsed in full (small bodies, or bodies the scanner could not follow)."""

    names: tuple[NodeName, ...]
    document: Mapping[str, Any]
    items_key: str | None

    def encode_parts(self, keep: Collection[NodeName]) -> list[bytes | memoryview]:
        if self.items_key is None:
            return [_dumps(self.document)]
        items = self.document[self.items_key] or []
        kept = [item for name, item in zip(self.names, items, strict=True) if name in keep]
        return [_dumps({**self.document, self.items_key: kept})]


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        # An integer beyond 64 bits, kept exact by `decode_args` (orjson writes none): the
        # standard library writes it, as sent.
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


NodeList = RawNodeList | ParsedNodeList


@dataclass(frozen=True, slots=True)
class ExtenderArgs:
    """One filter or prioritize request: the pod and its candidates in one of two forms."""

    pod: PodInfo
    #: Set when the request carried full Node objects (`nodeCacheCapable: false`).
    nodes: NodeList | None
    #: Set when the request carried names only (`nodeCacheCapable: true`).
    node_names: tuple[NodeName, ...] | None

    @property
    def candidates(self) -> tuple[NodeName, ...]:
        if self.nodes is not None:
            return self.nodes.names
        assert self.node_names is not None
        return self.node_names


#: 19 digits in a row: perhaps an integer beyond 64 bits. Digits in a string or a fraction
#: match too and only cost an exact second parse (a plain run: cheap to search for).
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def decode_args(body: bytes, *, scan_threshold: int = SCAN_THRESHOLD) -> ExtenderArgs:
    """Decode an ExtenderArgs body; raise `WireError` with a reason for anything unusable."""
    if len(body) >= scan_threshold:
        try:
            return _scan_args(body)
        except ScanError:
            pass  # an unusual or broken body: the strict parser decides, and explains
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        if "depth limit" in str(error):
            raise WireError(f"the body nests deeper than {MAX_DEPTH} levels") from error
        raise WireError(f"the body is not valid JSON: {error}") from error
    try:
        check_depth(body)
    except ScanError as error:
        raise WireError(f"the body {error}") from error
    args = _args_from_document(document)
    if args.nodes is not None and _LONG_DIGITS.search(body):
        # orjson reads an integer beyond 64 bits as a float, and Node objects are echoed back
        # to kube-scheduler: read this body again with every number exact, as the scanner's
        # byte copies keep it. orjson has accepted it, so it is valid JSON whose numbers are
        # within a double's range (a few hundred digits, far below Python's own limit). Names
        # alone are never echoed: a NodeNames body, the common one, is not searched.
        args = _args_from_document(json.loads(body))
    return args


def _folded(key: str) -> str:
    """A key as Go's decoder compares it (Unicode case folding, so `ſ` matches `s`)."""
    return key.casefold()


def _lookup(mapping: Mapping[str, Any], name: str) -> Any:
    """Go's rule: every key equal to the field name ignoring case sets it, so the last wins."""
    wanted = _folded(name)
    found = None
    for key, value in mapping.items():
        if key == name or _folded(key) == wanted:
            found = value
    return found


def _args_from_document(document: object) -> ExtenderArgs:
    if not isinstance(document, dict):
        raise WireError("the body must be a JSON object (ExtenderArgs)")
    pod = _pod_info(_lookup(document, "Pod"))
    nodes_doc = _lookup(document, "Nodes")
    names_doc = _lookup(document, "NodeNames")
    nodes = None if nodes_doc is None else _parsed_node_list(nodes_doc)
    names = None if names_doc is None else _node_names(names_doc)
    return _args(pod, nodes, names)


def _args(pod: PodInfo, nodes: NodeList | None, names: tuple[NodeName, ...] | None) -> ExtenderArgs:
    if nodes is None and names is None:
        raise WireError("one of Nodes or NodeNames is required")
    if nodes is not None and names is not None:
        raise WireError("send either Nodes (nodeCacheCapable: false) or NodeNames, not both")
    return ExtenderArgs(pod=pod, nodes=nodes, node_names=names)


def _pod_info(document: object) -> PodInfo:
    if document is None:
        raise WireError("Pod is required")
    if not isinstance(document, dict):
        raise WireError("Pod must be an object")
    metadata = _lookup(document, "metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise WireError("Pod.metadata must be an object")
    strings: dict[str, str] = {}
    for key in ("name", "namespace", "uid"):
        value = _lookup(metadata, key)
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise WireError(f"Pod.metadata.{key} must be a string")
        strings[key] = value
    labels = _lookup(metadata, "labels")
    if labels is None:
        labels = {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise WireError("Pod.metadata.labels must map strings to strings")
    return PodInfo(
        name=strings["name"],
        # The API server defaults an empty namespace to "default".
        namespace=Namespace(strings["namespace"] or "default"),
        uid=strings["uid"],
        labels=labels,
    )


def _node_names(document: object) -> tuple[NodeName, ...]:
    # map() keeps the per-name check in C: this runs on every request with ~500 names.
    if not isinstance(document, list) or not all(map(isinstance, document, repeat(str))):
        raise WireError("NodeNames must be a list of strings")
    return cast(tuple[NodeName, ...], tuple(document))


def _parsed_node_list(document: object) -> ParsedNodeList:
    if not isinstance(document, dict):
        raise WireError("Nodes must be an object (v1.NodeList)")
    items_key = None
    for key in document:
        if _folded(key) == "items":
            items_key = key
    items = [] if items_key is None else document[items_key]
    if items is None:
        items = []
    if not isinstance(items, list):
        raise WireError("Nodes.items must be a list")
    names: list[NodeName] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise WireError(f"Nodes.items[{index}] must be an object (v1.Node)")
        metadata = _lookup(item, "metadata")
        name = _lookup(metadata, "name") if isinstance(metadata, dict) else None
        if not isinstance(name, str):
            raise WireError(f"Nodes.items[{index}].metadata.name must be a string")
        names.append(NodeName(name))
    return ParsedNodeList(names=tuple(names), document=document, items_key=items_key)


def _scan_args(body: bytes) -> ExtenderArgs:
    cursor = Cursor(body)
    pod: PodInfo | None = None
    pod_seen = False
    nodes: NodeList | None = None
    names: tuple[NodeName, ...] | None = None
    for key in cursor.members():
        folded = _folded(key)
        if folded == "pod":
            start, end = cursor.skip_value()
            pod_seen = True
            pod = _pod_info(_loads(body[start:end]))
        elif folded == "nodes":
            nodes = None if cursor.peek() == 0x6E else _scan_node_list(cursor)  # n(ull)
        elif folded == "nodenames":
            start, end = cursor.skip_value()
            document = _loads(body[start:end])
            names = None if document is None else _node_names(document)
        else:
            _skip_checked(cursor, level=_MEMBER_LEVEL)  # unused, but it must be JSON too
    if not cursor.at_end():
        raise ScanError("trailing data after the object")
    if not pod_seen or pod is None:
        raise WireError("Pod is required")
    return _args(pod, nodes, names)


def _loads(raw: bytes) -> Any:
    """A member of ExtenderArgs, parsed in full (the pod or the node names: small)."""
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise ScanError(str(error)) from error
    check_depth(raw, level=_MEMBER_LEVEL)
    return document


def _skip_checked(cursor: Cursor, *, level: int) -> None:
    start, end = cursor.skip_value()
    check_json(memoryview(cursor.data)[start:end], level=level)


def _scan_node_list(cursor: Cursor) -> RawNodeList:
    body = cursor.data
    cursor.skip_ws()
    list_start = cursor.pos
    names: list[NodeName] = []
    spans: list[tuple[int, int]] = []
    items_open = items_close = -1
    for key in cursor.members():
        if _folded(key) != "items":
            # Copied into the answer with the list's head or tail: checked like a Node.
            _skip_checked(cursor, level=_NODE_LIST_MEMBER_LEVEL)
            continue
        if cursor.peek() != 0x5B:  # not a list: let the strict parser explain
            raise ScanError("Nodes.items is not a list")
        items_open = cursor.pos + 1
        names, spans = _scan_items(cursor)
        items_close = cursor.pos - 1
    list_end = cursor.pos
    if items_open < 0:
        raise ScanError("Nodes has no items")
    view = memoryview(body)
    return RawNodeList(
        names=tuple(names),
        items=tuple(view[start:end] for start, end in spans),
        head=view[list_start:items_open],
        tail=view[items_close:list_end],
    )


# Go's encoder writes every Node as `{"metadata":{"name":"...",...},"spec":...}` with no
# whitespace, so the next Node starts at the next `},{"metadata":{"name":"`. That text cannot
# occur inside a JSON string (its quotes would be escaped), but it can deeper inside a Node, so a
# candidate end is accepted only if the bytes up to it are one valid JSON value: the validation
# every Node needs anyway. Otherwise, and for the last Node or any Node of another shape, the
# exact skipping expression finds the end, and the Node found is validated in the same way.
_FAST_HEAD = re.compile(rb'\{"metadata":\{"name":("[^"\\]*+(?:\\.[^"\\]*+)*+")')
_NEXT_NODE = b'},{"metadata":{"name":"'
_AFTER_ITEM = re.compile(rb"[ \t\n\r]*+([,\]])[ \t\n\r]*+")


def _scan_items(cursor: Cursor) -> tuple[list[NodeName], list[tuple[int, int]]]:
    """Each Node's name and span in the array at the cursor; the cursor ends after `]`."""
    data = cursor.data
    names: list[NodeName] = []
    spans: list[tuple[int, int]] = []
    cursor.expect(b"[")
    if cursor.peek() == 0x5D:
        cursor.pos += 1
        return names, spans
    start = cursor.pos
    view = memoryview(data)
    while True:
        end = -1
        head = _FAST_HEAD.match(data, start)
        if head is not None:
            boundary = data.find(_NEXT_NODE, head.end())
            if boundary >= 0 and _is_node(view[start : boundary + 1]):
                end = boundary + 1
                names.append(NodeName(_decode_string(head.group(1))))
        if end < 0:
            cursor.pos = start
            names.append(_scan_node_name(cursor))
            end = cursor.pos
            check_json(view[start:end], level=_NODE_LEVEL)
        spans.append((start, end))
        separator = _AFTER_ITEM.match(data, end)
        if separator is None:
            raise ScanError(f"expected ',' or ']' at byte {end}")
        if separator.group(1) == b"]":
            cursor.pos = separator.end(1)
            return names, spans
        start = separator.end()


def _is_node(raw: memoryview) -> bool:
    # At a deeper `},{"metadata"...` this Node's own `{` would still be open: not one value.
    try:
        check_json(raw, level=_NODE_LEVEL)
    except ScanError:
        return False
    return True


def _decode_string(quoted: bytes) -> str:
    try:
        if b"\\" not in quoted:
            return quoted[1:-1].decode("utf-8")
        text = orjson.loads(quoted)
    except (UnicodeDecodeError, orjson.JSONDecodeError) as error:
        raise ScanError("invalid string") from error
    assert isinstance(text, str)
    return text


def _scan_node_name(cursor: Cursor) -> NodeName:
    """Read one Node's metadata.name and leave the cursor after the Node."""
    if cursor.peek() != 0x7B:
        raise ScanError("a node is not an object")
    for key in cursor.members():
        if _folded(key) != "metadata" or cursor.peek() != 0x7B:
            continue
        for field_key in cursor.members():
            if _folded(field_key) == "name" and cursor.peek() == 0x22:
                name = cursor.string()
                cursor.skip_rest()  # the rest of metadata
                cursor.skip_rest()  # the rest of the node
                return NodeName(name)
    raise ScanError("a node without metadata.name")


def encode_filter_result(
    *, args: ExtenderArgs, failed: Mapping[NodeName, str], unresolvable: bool
) -> bytes:
    """ExtenderFilterResult in the form the request used (`Nodes` or `NodeNames`): every
    candidate not in `failed` passes, in request order."""
    candidates = args.candidates
    parts: list[bytes | memoryview] = [b'{"Nodes":']
    if args.nodes is not None:
        keep = frozenset(n for n in candidates if n not in failed) if failed else set(candidates)
        parts.extend(args.nodes.encode_parts(keep))
        parts.append(b',"NodeNames":null')
    else:
        names = [n for n in candidates if n not in failed] if failed else candidates
        parts.append(b'null,"NodeNames":')
        parts.append(orjson.dumps(names))
    failed_json = orjson.dumps(failed)
    parts.append(b',"FailedNodes":')
    parts.append(b"{}" if unresolvable else failed_json)
    parts.append(b',"FailedAndUnresolvableNodes":')
    parts.append(failed_json if unresolvable else b"{}")
    parts.append(b',"Error":""}')
    # One join: a 20 MB answer is copied exactly once.
    return b"".join(parts)


def encode_error(message: str) -> bytes:
    """A filter result that only carries an error (kube-scheduler reads `Error`)."""
    return orjson.dumps(
        {
            "Nodes": None,
            "NodeNames": None,
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": {},
            "Error": message,
        }
    )


def encode_priorities(scores: Mapping[NodeName, int]) -> bytes:
    """HostPriorityList: one `{"Host", "Score"}` per candidate, in candidate order."""
    return orjson.dumps([{"Host": host, "Score": score} for host, score in scores.items()])
