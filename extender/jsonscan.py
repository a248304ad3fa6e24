"""A byte-level JSON scanner for multi-megabyte NodeLists, and a validator that keeps it honest.

With `nodeCacheCapable: false` kube-scheduler sends every candidate Node in full: 5,000 nodes
are over 20 MB. The extender needs only each node's `metadata.name`, and answers with the kept
nodes unchanged, so building Python objects for whole nodes would waste most of a request's
time. The scanner walks the structure it needs (object members, array elements, strings) and
skips every other value with one bounded-depth regular expression, which runs in C; values are
returned as byte spans of the original body so kept nodes are re-emitted by slicing.

The scanner checks the structure it walks exactly (keys, separators, scalars), but skipped
values only for balanced brackets and well-formed strings. Bytes it only skipped must never be
trusted, because they may be copied into an answer: callers pass each such span to
`check_json`, a complete validation in C (pydantic-core's parser, given a schema that ignores
everything, so no Python objects are built) that also enforces `MAX_DEPTH`. Anything the
scanner cannot follow or the validator rejects raises `ScanError`, and callers fall back to a
full, strict parse, which decides and explains.

Errors:
    ScanError       the scanner cannot follow these bytes, or they are not valid JSON
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import orjson
from pydantic_core import SchemaValidator, ValidationError, core_schema

#: The deepest nesting a request may have, counting the body itself as level 1. Kubernetes
#: objects stay near twenty levels; the limit keeps every parser and encoder used here within
#: its own (orjson writes at most 254 levels), so deep nesting is a client error, never a crash.
MAX_DEPTH = 200

#: Nesting depth the skipping expression can follow inside one skipped value.
MAX_SKIP_DEPTH = 32

_WS = re.compile(rb"[ \t\n\r]*+")
_STRING_SRC = rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_STRING = re.compile(_STRING_SRC)
# Text between brackets: runs of non-bracket, non-quote bytes and whole strings (unrolled loop,
# possessive so the engine never backtracks into a long node).
_RUN = rb'[^"{}\[\]]*+(?:' + _STRING_SRC + rb'[^"{}\[\]]*+)*+'


def _balanced(depth: int) -> bytes:
    pattern = rb"[\{\[]" + _RUN + rb"[\}\]]"
    for _ in range(depth):
        pattern = rb"[\{\[]" + _RUN + rb"(?:" + pattern + _RUN + rb")*+[\}\]]"
    return pattern


_BALANCED_SRC = _balanced(MAX_SKIP_DEPTH)
_BALANCED = re.compile(_BALANCED_SRC)
#: From inside an object or array, after a complete member, to just past its closing bracket.
_REST = re.compile(_RUN + rb"(?:" + _BALANCED_SRC + _RUN + rb")*+[\}\]]")
_NUMBER_SRC = rb"-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+\-]?+[0-9]++)?+"
_SCALAR = re.compile(_NUMBER_SRC + rb"|true|false|null")
# A string as RFC 8259 has it: no raw control characters, only the defined escapes. The bytes
# must still decode as UTF-8, and `\u` escapes must pair surrogates (orjson checks both).
_STRICT_STRING = re.compile(rb'"(?:[^"\\\x00-\x1f]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+"')


class ScanError(ValueError):
    """The scanner cannot follow this body, or part of it is not valid JSON; a strict parser
    must decide."""


# pydantic-core's JSON parser (jiter) checks a whole document in C. Given an object schema that
# ignores every member it builds no Python objects, which makes it several times faster than
# `orjson.loads` on a NodeList. Each checked value is wrapped in `{"":...}` levels so that the
# parser's own depth limit falls exactly on MAX_DEPTH for the value's place in the body.
_IGNORE_EVERYTHING = SchemaValidator(core_schema.typed_dict_schema({}, extra_behavior="ignore"))
_WRAP_OPEN = b'{"":'
_WRAP_CLOSE = b"}"


def _accepts(document: bytes) -> bool:
    try:
        _IGNORE_EVERYTHING.validate_json(document)
    except ValidationError:
        return False
    return True


def _parser_depth() -> int:
    """The deepest nesting the parser accepts (pydantic-core does not publish it: 201 in 2.x)."""
    accepted, rejected = 1, 1 << 12
    if _accepts(_WRAP_OPEN * rejected + b"{}" + _WRAP_CLOSE * rejected):
        raise RuntimeError("pydantic-core's JSON parser has no usable depth limit")
    while rejected - accepted > 1:
        middle = (accepted + rejected) // 2
        if _accepts(_WRAP_OPEN * (middle - 1) + b"{}" + _WRAP_CLOSE * (middle - 1)):
            accepted = middle
        else:
            rejected = middle
    if accepted < MAX_DEPTH:
        raise RuntimeError(f"pydantic-core's JSON parser stops at {accepted} levels")
    return accepted


_PARSER_DEPTH = _parser_depth()
_POSITION = re.compile(r" at line \d+ column \d+$")


def check_json(raw: bytes | memoryview, *, level: int = 1) -> None:
    """Raise `ScanError` unless `raw` is exactly one JSON value (RFC 8259) that nests no
    deeper than MAX_DEPTH when its own top sits at nesting `level` of the body."""
    wrap = _PARSER_DEPTH - MAX_DEPTH + level - 1
    document = b"".join((_WRAP_OPEN * wrap, raw, _WRAP_CLOSE * wrap))
    # jiter also reads NaN, Infinity and -Infinity, which JSON does not have. Outside strings
    # no JSON token contains `N` or `I`, and inside strings any ASCII letter will do: replaced
    # (two memchr-speed passes), they leave the parser rejecting exactly what JSON rejects.
    document = document.replace(b"N", b"x").replace(b"I", b"x")
    try:
        _IGNORE_EVERYTHING.validate_json(document)
    except ValidationError as error:
        details = error.errors(include_url=False, include_input=False)
        if details and details[0]["type"] != "json_invalid":
            return  # parsed, then refused by the schema: only an unwrapped non-object does
        message = details[0]["msg"] if details else str(error)
        if "recursion limit" in message:
            raise ScanError(f"nests deeper than {MAX_DEPTH} levels") from None
        # The position would count the wrapping.
        message = _POSITION.sub("", message.removeprefix("Invalid JSON: "))
        raise ScanError(f"is not valid JSON ({message})") from None


def check_depth(raw: bytes, *, level: int = 1) -> None:
    """Raise `ScanError` if valid JSON `raw` nests deeper than MAX_DEPTH from `level`.

    Nesting cannot exceed the number of opening brackets, so most bodies (a pod and 500 node
    names has a dozen) are cleared by two counts, without parsing them again.
    """
    if raw.count(b"{") + raw.count(b"[") + level - 1 <= MAX_DEPTH:
        return
    check_json(raw, level=level)


class Cursor:
    """A position in a JSON body, advanced by the methods that read from it."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def skip_ws(self) -> None:
        match = _WS.match(self.data, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()

    def peek(self) -> int:
        """The next non-whitespace byte, or -1 at the end."""
        self.skip_ws()
        return self.data[self.pos] if self.pos < len(self.data) else -1

    def expect(self, char: bytes) -> None:
        if self.peek() != char[0]:
            raise ScanError(f"expected {char.decode()!r} at byte {self.pos}")
        self.pos += 1

    def string(self) -> str:
        self.skip_ws()
        match = _STRICT_STRING.match(self.data, self.pos)
        if match is None:
            raise ScanError(f"expected a string at byte {self.pos}")
        raw = self.data[match.start() + 1 : match.end() - 1]
        self.pos = match.end()
        try:
            if b"\\" not in raw:
                return raw.decode("utf-8")
            text = orjson.loads(self.data[match.start() : match.end()])
        except (UnicodeDecodeError, orjson.JSONDecodeError) as error:
            raise ScanError(f"invalid string at byte {match.start()}") from error
        assert isinstance(text, str)
        return text

    def skip_value(self) -> tuple[int, int]:
        """Skip one value; return its span."""
        first = self.peek()
        start = self.pos
        if first in (0x7B, 0x5B):  # { [
            match = _BALANCED.match(self.data, start)
        elif first == 0x22:  # "
            match = _STRING.match(self.data, start)
        else:
            match = _SCALAR.match(self.data, start)
        if match is None:
            raise ScanError(f"cannot skip the value at byte {start}")
        self.pos = match.end()
        return start, self.pos

    def skip_rest(self) -> None:
        """Skip the remaining members or elements of the current container and its close."""
        match = _REST.match(self.data, self.pos)
        if match is None:
            raise ScanError(f"cannot skip to the end of the container at byte {self.pos}")
        self.pos = match.end()

    def members(self) -> Iterator[str]:
        """Yield each key of the object here, with the cursor on its value.

        The consumer reads the value or leaves the cursor where it was (the value is then
        skipped). Closing the generator early leaves the cursor inside the object.
        """
        self.expect(b"{")
        if self.peek() == 0x7D:  # }
            self.pos += 1
            return
        while True:
            key = self.string()
            self.expect(b":")
            self.skip_ws()
            at = self.pos
            yield key
            if self.pos == at:
                self.skip_value()
            following = self.peek()
            self.pos += 1
            if following == 0x7D:
                return
            if following != 0x2C:  # ,
                raise ScanError(f"expected ',' or '}}' at byte {self.pos - 1}")

    def at_end(self) -> bool:
        return self.peek() == -1
