"""A fuzzer for the wire format: thousands of damaged kube-scheduler requests, real server.

Each example starts from a request as kube-scheduler sends it (the example pod and Nodes, or
NodeNames), in one of three sizes: small (parsed in full), about 300 KB and over 1 MB (both
scanned, with kept nodes answered as the original bytes). It changes the document (values of
the wrong type, unicode and nasty names, huge numbers, keys in other letter cases, another
layout, deep nesting), then the bytes (flips, truncation, inserted garbage and JSON-like tokens,
deleted and repeated ranges, duplicated members), and posts the result to filter and prioritize.

Covered: the undamaged requests are answered 200 with some nodes filtered out; for every
answer to a damaged one: no 5xx; the body is JSON; a body that is not JSON (RFC 8259, checked
with the standard library parser) or nests deeper than `MAX_DEPTH` gets a 400 with an `Error`;
every other answer is a 200 of the documented shape or a 400 with an `Error`; a filter answer
holds only Node objects and names of the request, in the form it used; a prioritize answer
scores only hosts of the request, 0..10. Examples are derandomized and hypothesis keeps no
database, so every run sends the same bodies; the module takes about half a minute.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender.jsonscan import MAX_DEPTH
from extender.wire import SCAN_THRESHOLD
from tests.extender.support import (
    RunningExtender,
    example,
    example_node,
    health_policies,
    health_view,
    running_extender,
)

NODE_COUNT = {"small": 3, "large": 70, "huge": 240}
RESULT_KEYS = ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"]
SEED = st.integers(0, 2**32 - 1)


def node_name(index: int) -> str:
    return f"node-{index}"


@pytest.fixture(scope="module")
def extender() -> Iterator[RunningExtender]:
    # One node in three violates the demo policy, so filter answers are real subsets.
    view = health_view({node_name(i): float(i % 3 == 1) for i in range(NODE_COUNT["huge"])})
    with running_extender(policies=health_policies(), view=view) as running:
        yield running


# -- requests as kube-scheduler sends them ------------------------------------------------------


@cache
def base_request(form: str, size: str) -> bytes:
    """Compact Go-style JSON: the layout the scanner's fast path is built for."""
    count = NODE_COUNT[size]
    if form == "nodes":
        document = example("nodes")
        items = [example_node(node_name(i), template=i % 3) for i in range(count)]
        document["Nodes"]["items"] = items
    else:
        document = example("nodenames")
        document["NodeNames"] = [node_name(i % NODE_COUNT["huge"]) for i in range(count * 400)]
    body = json.dumps(document, separators=(",", ":")).encode()
    assert size == "small" or len(body) >= SCAN_THRESHOLD
    assert size != "huge" or len(body) >= 1024 * 1024
    return body


# -- changes to the document (the result is still JSON, not always a usable request) -----------

NASTY_TEXT = [
    "",
    "ſ",  # folds to "s": Go matches keys with it
    "K",  # the Kelvin sign, folds to "k"
    "e\u0301é",
    "\u2028\u2029",
    "\u202e\u200b\ufeff",
    "\U0001f600",
    "\x00\x1f\x7f",
    '"}],{"metadata":{"name":"smuggled"',
    "\\",
    "NaN",
    "-Infinity",
    "x" * 5000,
]
OTHER_TYPES: list[Any] = [None, True, 0, -1.5e300, "x", [], {}, [1, "a", None], {"a": {"b": []}}]
HUGE_NUMBERS: list[Any] = [10**30, -(10**30), 2**63, 2**64, -(2**63) - 1, 1e308, 5e-324, -0.0]
KEY_NAMES = ["Pod", "Nodes", "NodeNames", "items", "metadata", "name", "labels", "namespace"]
DEEP = "fuzz-deep"
DEEP_PLACEHOLDER = re.compile(rb'"fuzz-deep:(\d+):(\d)"')
DEPTHS = [MAX_DEPTH - 6, MAX_DEPTH - 3, MAX_DEPTH, MAX_DEPTH + 1, 254, 255, 1025, 4000]
NESTINGS = [(b'{"d":', b"1", b"}"), (b"[", b'"x"', b"]"), (b'[{"a":', b"[]", b"}]")]


def _containers(document: Any) -> list[Any]:
    """Every object and array in the document, the document first."""
    found: list[Any] = []
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.append(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            found.append(value)
            stack.extend(value)
    return found


def _interesting(document: Any, rng: random.Random) -> Any:
    """A container, most often one that matters to the extender."""
    names = [c for c in _containers(document) if isinstance(c, dict) and set(c) & set(KEY_NAMES)]
    pool = names if names and rng.random() < 0.8 else _containers(document)
    return rng.choice(pool)


def _set_somewhere(document: Any, rng: random.Random, value: Any) -> None:
    target = _interesting(document, rng)
    if isinstance(target, dict):
        keys = list(target)
        key = rng.choice(keys) if keys and rng.random() < 0.7 else rng.choice(KEY_NAMES)
        target[key] = value
    elif target:
        target[rng.randrange(len(target))] = value
    else:
        target.append(value)


def wrong_type(document: Any, rng: random.Random) -> None:
    _set_somewhere(document, rng, copy.deepcopy(rng.choice(OTHER_TYPES)))


def nasty_text(document: Any, rng: random.Random) -> None:
    text = rng.choice(NASTY_TEXT) + rng.choice(["", node_name(rng.randrange(3))])
    _set_somewhere(document, rng, text)


def huge_number(document: Any, rng: random.Random) -> None:
    _set_somewhere(document, rng, rng.choice(HUGE_NUMBERS))


def key_case(document: Any, rng: random.Random) -> None:
    target = _interesting(document, rng)
    if isinstance(target, dict) and target:
        key = rng.choice(list(target))
        other = rng.choice([key.upper(), key.lower(), key.swapcase(), key.replace("s", "ſ")])
        target[other] = target.pop(key)


def deep_nesting(document: Any, rng: random.Random) -> None:
    """A placeholder, replaced by the nested value once the document is bytes."""
    depth, nesting = rng.choice(DEPTHS), rng.randrange(len(NESTINGS))
    _set_somewhere(document, rng, f"{DEEP}:{depth}:{nesting}")


def _nested(match: re.Match[bytes]) -> bytes:
    opening, inside, closing = NESTINGS[int(match.group(2))]
    # The pair `[{"a":` ... `}]` is two levels.
    times = int(match.group(1)) // (2 if opening.startswith(b"[{") else 1)
    return opening * times + inside + closing * times


DOCUMENT_CHANGES: dict[str, Callable[[Any, random.Random], None]] = {
    "wrong-type": wrong_type,
    "nasty-text": nasty_text,
    "huge-number": huge_number,
    "key-case": key_case,
    "deep-nesting": deep_nesting,
}
LAYOUTS: list[dict[str, Any]] = [
    {"separators": (",", ":")},
    {"separators": (",", ":"), "ensure_ascii": False},
    {"indent": 1},
    {"separators": (", ", ": ")},
]


def changed_request(form: str, size: str, changes: list[tuple[str, int]], layout: int) -> bytes:
    if not changes and layout == 0:
        return base_request(form, size)
    document = json.loads(base_request(form, size))
    for name, seed in changes:
        DOCUMENT_CHANGES[name](document, random.Random(seed))
    return DEEP_PLACEHOLDER.sub(_nested, json.dumps(document, **LAYOUTS[layout]).encode())


# -- changes to the bytes ---------------------------------------------------------------------

TOKENS = [
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"::",
    b",",
    b",,",
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b"\\",
    b"\\u",
    b'"\\ud800"',
    b"\x00",
    b"\xff",
    b"\xc3\x28",
    b"\xef\xbb\xbf",
    b'"a"::"b"',
    b'"a":"b",',
    b"1e999",
    b"123456789012345678901234567890",
    b"-0.0e-99999",
    b"01",
    b"1.",
    b"tru",
    b"nul",
    b"/*c*/",
    b"\x0c",
    b"\xc2\xa0",
    b'},{"metadata":{"name":"smuggled"}},{',
]


def flip(body: bytes, rng: random.Random) -> bytes:
    if not body:
        return body
    at = rng.randrange(len(body))
    new = rng.randrange(256) if rng.random() < 0.5 else body[at] ^ (1 << rng.randrange(8))
    return body[:at] + bytes([new]) + body[at + 1 :]


def truncate(body: bytes, rng: random.Random) -> bytes:
    return body[: rng.randrange(len(body) + 1)]


def insert_garbage(body: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(body) + 1)
    return body[:at] + rng.randbytes(rng.randint(1, 8)) + body[at:]


def insert_token(body: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(body) + 1)
    return body[:at] + rng.choice(TOKENS) + body[at:]


def delete_range(body: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(body) + 1)
    return body[:at] + body[at + rng.randint(1, 64) :]


def repeat_range(body: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(body) + 1)
    piece = body[at : at + rng.randint(1, 64)]
    return body[:at] + piece + body[at:]


def duplicate_member(body: bytes, rng: random.Random) -> bytes:
    """`"k":v` again right after itself, with the same or another scalar value."""
    starts = [match.start() for match in re.finditer(rb',"', body)]
    if not starts:
        return body
    at = rng.choice(starts) + 1
    colon = body.find(b'":', at + 1)
    end = min((i for i in (body.find(b",", colon), body.find(b"}", colon)) if i >= 0), default=-1)
    if colon < 0 or end < 0:
        return body
    key = body[at : colon + 2]
    value = body[colon + 2 : end] if rng.random() < 0.5 else json.dumps(rng.choice(OTHER_TYPES))
    value = value if isinstance(value, bytes) else value.encode()
    return body[:end] + b"," + key + value + body[end:]


BYTE_CHANGES: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "flip": flip,
    "truncate": truncate,
    "insert-garbage": insert_garbage,
    "insert-token": insert_token,
    "delete-range": delete_range,
    "repeat-range": repeat_range,
    "duplicate-member": duplicate_member,
}


def damaged_request(
    form: str,
    size: str,
    changes: list[tuple[str, int]],
    layout: int,
    damage: list[tuple[str, int]],
) -> bytes:
    body = changed_request(form, size, changes, layout)
    for name, seed in damage:
        body = BYTE_CHANGES[name](body, random.Random(seed))
    return body


# -- what the answers must be -----------------------------------------------------------------


class NotJSONError(Exception):
    """The request is not JSON by the standard library's strict reading, or nests too deep."""


def _no_constants(name: str) -> Any:
    raise NotJSONError(name)


class Members(list[tuple[str, Any]]):
    """An object's members in order, duplicates kept."""


def strict_json(raw: bytes, *, duplicates: bool = False) -> Any:
    """RFC 8259 JSON, with every number a float so re-encoded numbers compare equal, and
    objects as dicts (the last duplicate wins, as in Go and orjson) or as `Members`."""
    try:
        document = json.loads(
            raw.decode("utf-8"),
            parse_constant=_no_constants,
            parse_int=float,
            object_pairs_hook=Members if duplicates else None,
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise NotJSONError(str(error)[:200]) from None
    depth, stack = 0, [(document, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict | list):
            depth = max(depth, level)
            children = value.values() if isinstance(value, dict) else value
            if isinstance(value, Members):
                children = [member for _, member in value]
            stack.extend((child, level + 1) for child in children)
    if depth > MAX_DEPTH:
        raise NotJSONError(f"{depth} levels")
    return document


def go_fields(mapping: Any, name: str) -> list[Any]:
    """Every value Go could read as field `name` of an object: it ignores letter case."""
    if isinstance(mapping, Members):
        members = list(mapping)
    elif isinstance(mapping, dict):
        members = list(mapping.items())
    else:
        return []
    return [value for key, value in members if key.casefold() == name.casefold()]


def listed_nodes(document: Any) -> list[Any]:
    return [
        item
        for nodes in go_fields(document, "Nodes")
        for listed in go_fields(nodes, "items")
        if isinstance(listed, list)
        for item in listed
    ]


def canonical(item: Any) -> str:
    return json.dumps(item, sort_keys=True)


def request_names(members: Any) -> set[str]:
    """Every name the request gives a candidate (any of a node's duplicate names)."""
    names = {
        name
        for item in listed_nodes(members)
        for metadata in go_fields(item, "metadata")
        for name in go_fields(metadata, "name")
        if isinstance(name, str)
    }
    for listed in go_fields(members, "NodeNames"):
        if isinstance(listed, list):
            names.update(n for n in listed if isinstance(n, str))
    return names


def check_answer(verb: str, request: bytes, status: int, content: bytes) -> None:
    assert status < 500, content[:300]
    answer = strict_json(content)  # every answer is JSON, errors included
    try:
        document = strict_json(request)
    except NotJSONError:
        assert status == 400, f"a broken body was answered {status}"
        document = None
    if status != 200:
        assert status == 400
        assert isinstance(answer["Error"], str)
        assert answer["Error"]
        return
    assert document is not None
    names = request_names(strict_json(request, duplicates=True))
    if verb == "prioritize":
        assert isinstance(answer, list)
        for entry in json.loads(content):  # as sent: scores must be JSON integers
            assert list(entry) == ["Host", "Score"]
            assert entry["Host"] in names
            assert type(entry["Score"]) is int
            assert 0 <= entry["Score"] <= 10
        return
    assert list(answer) == RESULT_KEYS
    assert answer["Error"] == ""
    assert answer["FailedNodes"] == {}
    assert set(answer["FailedAndUnresolvableNodes"]) <= names
    if answer["Nodes"] is not None:
        assert answer["NodeNames"] is None
        assert go_fields(document, "Nodes")
        items = {canonical(item) for item in listed_nodes(document)}
        for kept in go_fields(answer["Nodes"], "items"):
            if isinstance(kept, list):  # others are members the request had, copied
                assert {canonical(item) for item in kept} <= items
    else:
        assert isinstance(answer["NodeNames"], list)
        assert set(answer["NodeNames"]) <= names


def post_everywhere(extender: RunningExtender, body: bytes) -> None:
    for verb in ("filter", "prioritize"):
        response = extender.post(verb, body)
        check_answer(verb, body, response.status_code, response.content)


# -- the fuzzers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("form", "size"),
    [("nodes", "small"), ("nodes", "large"), ("nodes", "huge"), ("nodenames", "large")],
)
def test_the_requests_the_fuzzers_start_from_are_answered_in_full(
    extender: RunningExtender, form: str, size: str
) -> None:
    body = base_request(form, size)
    filtered = extender.post("filter", body)
    assert filtered.status_code == 200
    assert len(filtered.json()["FailedAndUnresolvableNodes"]) >= 1
    assert extender.post("prioritize", body).status_code == 200
    check_answer("filter", body, filtered.status_code, filtered.content)


forms = st.sampled_from(["nodes", "nodenames"])
document_changes = st.lists(st.tuples(st.sampled_from(sorted(DOCUMENT_CHANGES)), SEED), max_size=3)
byte_changes = st.lists(st.tuples(st.sampled_from(sorted(BYTE_CHANGES)), SEED), max_size=3)
layouts = st.integers(0, len(LAYOUTS) - 1)


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@fuzz_settings(600)
@given(form=forms, changes=document_changes, layout=layouts, damage=byte_changes, seed=SEED)
def test_small_requests_get_a_json_answer_naming_only_their_nodes(
    extender: RunningExtender,
    form: str,
    changes: list[tuple[str, int]],
    layout: int,
    damage: list[tuple[str, int]],
    seed: int,
) -> None:
    post_everywhere(extender, damaged_request(form, "small", changes, layout, damage))
    # More damage to the same request: more bodies in the same time.
    rng = random.Random(seed)
    for _ in range(3):
        more = [(rng.choice(sorted(BYTE_CHANGES)), rng.randrange(2**32)) for _ in range(2)]
        post_everywhere(extender, damaged_request(form, "small", changes, layout, damage + more))


@fuzz_settings(200)
@given(form=forms, changes=document_changes, layout=layouts, damage=byte_changes)
def test_large_requests_get_a_json_answer_naming_only_their_nodes(
    extender: RunningExtender,
    form: str,
    changes: list[tuple[str, int]],
    layout: int,
    damage: list[tuple[str, int]],
) -> None:
    post_everywhere(extender, damaged_request(form, "large", changes, layout, damage))


@fuzz_settings(60)
@given(changes=document_changes, damage=byte_changes)
def test_requests_over_a_megabyte_get_a_json_answer_naming_only_their_nodes(
    extender: RunningExtender, changes: list[tuple[str, int]], damage: list[tuple[str, int]]
) -> None:
    post_everywhere(extender, damaged_request("nodes", "huge", changes, 0, damage))
