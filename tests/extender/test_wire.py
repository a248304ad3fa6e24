"""The wire codec: ExtenderArgs in, results out, and the NodeList scanner.

Covered: the scanner and the strict parser agree (names, pod, re-emitted nodes) on the example
bodies, on compact and indented JSON, on keys in any letter case, on names with escapes, on
strings holding brackets and on nesting deeper than the scanner follows; both reject every JSON
syntax error wherever it sits (inside a Node, the pod, a member nobody reads), nesting one level
past `MAX_DEPTH` and nothing shallower, while strings that merely spell NaN or Infinity pass;
any bytes either decode or raise `WireError` (never another exception); integers beyond 64 bits
in a kept node come back exactly as sent on both paths; results use the exact Go field names.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender.jsonscan import MAX_DEPTH, MAX_SKIP_DEPTH
from extender.wire import (
    ExtenderArgs,
    WireError,
    decode_args,
    encode_filter_result,
    encode_priorities,
)
from tas.types import NodeName
from tests.extender.support import args_body, example, example_node

SCAN = 0  # scan every body
STRICT = 1 << 62  # parse every body in full


def both(body: bytes) -> tuple[ExtenderArgs, ExtenderArgs]:
    return decode_args(body, scan_threshold=SCAN), decode_args(body, scan_threshold=STRICT)


def kept_items(args: ExtenderArgs, keep: set[str]) -> list[Any]:
    failed = {NodeName(n): "x" for n in args.candidates if n not in keep}
    result = json.loads(encode_filter_result(args=args, failed=failed, unresolvable=True))
    nodes = result["Nodes"]
    key = next(k for k in nodes if k.lower() == "items")
    items: list[Any] = nodes[key]
    return items


@pytest.mark.parametrize("indent", [None, 1, 4], ids=["compact", "indent-1", "indent-4"])
def test_scanner_and_parser_agree_on_the_nodes_example(indent: int | None) -> None:
    document = example("nodes")
    body = json.dumps(document, indent=indent).encode()
    scanned, parsed = both(body)
    assert scanned.candidates == parsed.candidates == ("node-0", "node-1", "node-2")
    assert scanned.pod == parsed.pod
    assert scanned.pod.labels["telemetry-policy"] == "demo-policy"
    items = document["Nodes"]["items"]
    assert kept_items(scanned, {"node-0", "node-2"}) == [items[0], items[2]]
    assert kept_items(parsed, {"node-0", "node-2"}) == [items[0], items[2]]


def test_compact_nodes_are_re_emitted_as_the_exact_original_bytes() -> None:
    items = [example_node(f"n{i}", template=i % 3) for i in range(6)]
    body = json.dumps(args_body(nodes=items), separators=(",", ":")).encode()
    args = decode_args(body, scan_threshold=SCAN)
    failed = {NodeName(f"n{i}"): "x" for i in (0, 2, 3, 5)}
    encoded = encode_filter_result(args=args, failed=failed, unresolvable=True)
    compact = [json.dumps(i, separators=(",", ":")).encode() for i in items]
    assert encoded.startswith(b'{"Nodes":{"metadata":{},"items":[' + compact[1] + b"," + compact[4])


def test_brackets_and_escapes_inside_strings_do_not_confuse_the_scanner() -> None:
    odd = ["{", "}}", "[", "]", '"}],{"metadata":{"name":"x"', "\\", "é\u2028", "\x00"]
    items = []
    for index, text in enumerate(odd):
        node = example_node(f"node-{text}-{index}")
        node["metadata"]["annotations"]["odd"] = text
        node["spec"]["odd"] = [text, {text: text}]
        items.append(node)
    body = json.dumps(args_body(nodes=items), separators=(",", ":"), ensure_ascii=False)
    scanned, parsed = both(body.encode())
    assert scanned.candidates == parsed.candidates == tuple(i["metadata"]["name"] for i in items)
    keep = {items[0]["metadata"]["name"], items[4]["metadata"]["name"]}
    assert kept_items(scanned, keep) == [items[0], items[4]]


def test_nesting_deeper_than_the_scanner_follows_falls_back_to_the_parser() -> None:
    deep: Any = "bottom"
    for _ in range(MAX_SKIP_DEPTH + 5):
        deep = {"d": [deep]}
    items = [example_node("a"), example_node("b")]
    items[0]["status"]["deep"] = deep
    body = json.dumps(args_body(nodes=items)).encode()
    scanned, parsed = both(body)
    assert scanned.candidates == parsed.candidates == ("a", "b")
    assert kept_items(scanned, {"a"}) == [items[0]]


def compact(document: Any) -> bytes:
    """As kube-scheduler's Go encoder writes it: the shape the scanner's fast path expects."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def three_nodes() -> dict[str, Any]:
    return args_body(nodes=[example_node(f"n{i}", template=i) for i in range(3)])


# Each replaces the first `"kubernetes.io/arch":"amd64"`, which is inside the first Node.
BROKEN_NODE = [
    pytest.param(b'"kubernetes.io/arch"::"amd64"', id="double-colon"),
    pytest.param(b'"kubernetes.io/arch":"amd64",', id="trailing-comma"),
    pytest.param(b'"kubernetes.io/arch":amd64', id="bare-word"),
    pytest.param(b'"kubernetes.io/arch":NaN', id="nan"),
    pytest.param(b'"kubernetes.io/arch":-Infinity', id="infinity"),
    pytest.param(b'"kubernetes.io/arch":01', id="leading-zero"),
    pytest.param(b'"kubernetes.io/arch":1.', id="bad-fraction"),
    pytest.param(b'"kubernetes.io/arch":"amd\\x64"', id="bad-escape"),
    pytest.param(b'"kubernetes.io/arch":"amd\\ud800"', id="lone-surrogate"),
    pytest.param(b'"kubernetes.io/arch":"amd\t64"', id="raw-control-character"),
    pytest.param(b'"kubernetes.io/arch":"amd\xff64"', id="invalid-utf8"),
    pytest.param(b'"kubernetes.io/arch" "amd64"', id="missing-colon"),
    pytest.param(b'"kubernetes.io/arch":"amd64"}', id="extra-brace"),
    pytest.param(b'"kubernetes.io/arch":["amd64"}', id="mismatched-bracket"),
    pytest.param(b'kubernetes.io/arch:"amd64"', id="unquoted-key"),
]


@pytest.mark.parametrize("broken", BROKEN_NODE)
@pytest.mark.parametrize("threshold", [SCAN, STRICT], ids=["scanned", "parsed"])
def test_a_syntax_error_inside_one_node_is_rejected(broken: bytes, threshold: int) -> None:
    body = compact(three_nodes())
    damaged = body.replace(b'"kubernetes.io/arch":"amd64"', broken, 1)
    assert damaged != body
    with pytest.raises(WireError, match="not valid JSON"):
        decode_args(damaged, scan_threshold=threshold)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b.replace(b'"Pod":{', b'"Pod":{"x"::1,', 1), id="in-the-pod"),
        pytest.param(lambda b: b.replace(b'"Nodes":{', b'"Nodes":{"x":[1,],', 1), id="nodelist"),
        pytest.param(lambda b: b[:-1] + b',"unread":{"a":tru}}', id="unread-member"),
        pytest.param(lambda b: b[:-1] + b',"unread":1.2.3}', id="unread-number"),
        pytest.param(lambda b: b[:-1] + b',"un\x01read":1}', id="control-in-a-key"),
        pytest.param(lambda b: b + b" x", id="trailing-garbage"),
    ],
)
@pytest.mark.parametrize("threshold", [SCAN, STRICT], ids=["scanned", "parsed"])
def test_a_syntax_error_outside_the_nodes_is_rejected(damage: Any, threshold: int) -> None:
    damaged = damage(compact(three_nodes()))
    with pytest.raises(WireError, match="not valid JSON"):
        decode_args(damaged, scan_threshold=threshold)


def test_strings_that_spell_nan_or_infinity_are_ordinary_text() -> None:
    items = [example_node("NaN"), example_node("Infinity")]
    items[0]["metadata"]["annotations"]["NaN"] = "-Infinity, NaN, [NaN]"
    body = compact(args_body(nodes=items))
    scanned, parsed = both(body)
    assert scanned.candidates == parsed.candidates == ("NaN", "Infinity")
    assert kept_items(scanned, {"NaN"}) == [items[0]]


def nested(depth: int, *, array: bool) -> Any:
    """A value whose own nesting is `depth` levels."""
    value: Any = [] if array else {}
    for _ in range(depth - 1):
        value = [value] if array else {"d": value}
    return value


# Where a deep value goes, and the nesting level of that place in the body: the body is level
# 1, so a Node (in Nodes.items) is level 4 and a Node's member level 5.
DEEP_PLACES = [
    pytest.param(lambda doc, v: doc["Nodes"]["items"][0].update(deep=v), 5, id="first-node"),
    pytest.param(lambda doc, v: doc["Nodes"]["items"][2].update(deep=v), 5, id="last-node"),
    pytest.param(lambda doc, v: doc["Pod"].update(deep=v), 3, id="pod"),
    pytest.param(lambda doc, v: doc["Nodes"].update(deep=v), 3, id="nodelist"),
    pytest.param(lambda doc, v: doc.update(unread=v), 2, id="unread-member"),
]


@pytest.mark.parametrize("array", [False, True], ids=["objects", "arrays"])
@pytest.mark.parametrize(("place", "level"), DEEP_PLACES)
@pytest.mark.parametrize("threshold", [SCAN, STRICT], ids=["scanned", "parsed"])
def test_nesting_is_accepted_up_to_the_limit_and_rejected_one_level_deeper(
    place: Any, level: int, array: bool, threshold: int
) -> None:
    deepest = three_nodes()
    place(deepest, nested(MAX_DEPTH - level + 1, array=array))
    assert decode_args(compact(deepest), scan_threshold=threshold).candidates == ("n0", "n1", "n2")
    too_deep = three_nodes()
    place(too_deep, nested(MAX_DEPTH - level + 2, array=array))
    with pytest.raises(WireError, match=f"nests deeper than {MAX_DEPTH} levels"):
        decode_args(compact(too_deep), scan_threshold=threshold)


@pytest.mark.parametrize("depth", [255, 1025, 100_000])
@pytest.mark.parametrize("threshold", [SCAN, STRICT], ids=["scanned", "parsed"])
def test_nesting_beyond_what_any_parser_follows_is_a_wire_error(depth: int, threshold: int) -> None:
    head, tail = b'{"d":' * depth, b"}" * depth
    document = compact(args_body(nodes=[example_node("n0"), example_node("n1")]))
    body = document.replace(b'"spec":{', b'"spec":{"deep":' + head + b"1" + tail + b",", 1)
    with pytest.raises(WireError, match=f"nests deeper than {MAX_DEPTH} levels"):
        decode_args(body, scan_threshold=threshold)


def test_go_matches_keys_ignoring_case_and_the_last_duplicate_wins() -> None:
    body = b'{"pod": {"metadata": {"name": "x"}}, "Pod": {"METADATA": {"NAME": "y"}},'
    body += b' "nodenames": ["a"], "NODENAMES": ["b", "c"]}'
    scanned, parsed = both(body)
    assert scanned.pod.name == parsed.pod.name == "y"
    assert scanned.candidates == parsed.candidates == ("b", "c")
    assert scanned.pod.namespace == "default"
    exact_first = b'{"Pod": {"metadata": {"name": "x"}}, "pod": {"metadata": {"name": "y"}},'
    exact_first += (
        b' "Nodes": null, "NodeNames": ["a"], "nodeNames": null, "nodename\\u017f": ["z"]}'
    )
    scanned, parsed = both(exact_first)
    assert scanned.pod.name == parsed.pod.name == "y"
    assert scanned.candidates == parsed.candidates == ("z",)


def test_results_use_the_exact_go_field_names() -> None:
    args = decode_args(json.dumps(args_body(names=["a", "b"])).encode())
    result = encode_filter_result(args=args, failed={NodeName("b"): "why"}, unresolvable=False)
    assert json.loads(result) == {
        "Nodes": None,
        "NodeNames": ["a"],
        "FailedNodes": {"b": "why"},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }
    scores = {NodeName("a"): 10, NodeName("b"): 0}
    assert json.loads(encode_priorities(scores)) == [
        {"Host": "a", "Score": 10},
        {"Host": "b", "Score": 0},
    ]


# -- properties -------------------------------------------------------------------------------

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)


def _case(key: str) -> st.SearchStrategy[str]:
    return st.sampled_from([key, key.lower(), key.upper(), key.swapcase()])


@st.composite
def node_lists(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.text(min_size=1, max_size=8), max_size=6))
    items = []
    for name in names:
        metadata: dict[str, Any] = {"uid": draw(st.text(max_size=4))}
        if draw(st.booleans()):  # kube-scheduler's shape: the name first (the fast path)
            metadata = {draw(_case("name")): name, **metadata}
        else:
            metadata[draw(_case("name"))] = name
        metadata["annotations"] = draw(st.dictionaries(st.text(max_size=4), st.text(), max_size=2))
        node: dict[str, Any] = {
            draw(_case("metadata")): metadata,
            "spec": draw(json_values),
            "status": draw(json_values),
        }
        items.append(node)
    return {draw(_case("items")): items, "kind": "NodeList"}


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    pod = example("nodes")["Pod"]
    document: dict[str, Any] = {draw(_case("Pod")): pod}
    if draw(st.booleans()):
        document[draw(_case("Nodes"))] = draw(node_lists())
    else:
        document[draw(_case("NodeNames"))] = draw(st.lists(st.text(max_size=8), max_size=6))
    indent = draw(st.sampled_from([None, 0, 2]))
    compact = draw(st.booleans())
    separators = (",", ":") if compact and indent is None else None
    ascii_only = draw(st.booleans())
    return json.dumps(
        document, indent=indent, separators=separators, ensure_ascii=ascii_only
    ).encode()


@pytest.mark.parametrize("number", [-(2**63) - 1, 2**64, 2**64 - 1, 10**40, -(10**40)], ids=str)
def test_kept_nodes_keep_integers_beyond_64_bits_exactly_on_both_paths(number: int) -> None:
    # orjson reads such an integer as a float: the parser must not round what it echoes back.
    node = example_node("node-0")
    node["status"]["capacity"] = {"example.com/counter": number}
    body = json.dumps(args_body(nodes=[node, example_node("node-1")])).encode()
    scanned, parsed = both(body)
    for args in (scanned, parsed):
        (kept,) = kept_items(args, {"node-0"})
        assert kept["status"]["capacity"]["example.com/counter"] == number
        assert type(kept["status"]["capacity"]["example.com/counter"]) is int


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies(), data=st.data())
def test_scanner_and_parser_agree_on_random_requests(body: bytes, data: st.DataObject) -> None:
    scanned, parsed = both(body)
    assert scanned.candidates == parsed.candidates
    assert scanned.pod == parsed.pod
    assert (scanned.nodes is None) == (parsed.nodes is None)
    if scanned.nodes is not None:
        keep = set(
            data.draw(st.lists(st.sampled_from([str(n) for n in scanned.candidates] or [""])))
        )
        assert kept_items(scanned, keep) == kept_items(parsed, keep)


def _decodes_or_wire_error(body: bytes) -> None:
    for options in (SCAN, STRICT):
        with contextlib.suppress(WireError):
            decode_args(body, scan_threshold=options)


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=300))
def test_any_bytes_decode_or_raise_a_wire_error(body: bytes) -> None:
    _decodes_or_wire_error(body)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies(), cut=st.integers(min_value=0), flip=st.integers(0, 255), at=st.integers(0))
def test_damaged_requests_decode_or_raise_a_wire_error(
    body: bytes, cut: int, flip: int, at: int
) -> None:
    _decodes_or_wire_error(body[: cut % (len(body) + 1)])
    damaged = bytearray(body)
    damaged[at % len(damaged)] = flip
    _decodes_or_wire_error(bytes(damaged))


@settings(max_examples=100, deadline=None)
@given(document=json_values)
def test_any_json_value_decodes_or_raises_a_wire_error(document: Any) -> None:
    for body in (
        document,
        {"Pod": document, "Nodes": document},
        {"Pod": {"metadata": document}, "NodeNames": document},
        {"Pod": {}, "Nodes": {"items": document}},
        {"Pod": {}, "Nodes": {"items": [{"metadata": document}]}},
    ):
        _decodes_or_wire_error(json.dumps(body).encode())
