"""A byte-level JSON scanner for multi-megabyte NodeLists.

With `nodeCacheCapable: false` kube-scheduler sends every candidate Node in full: 5,000 nodes
are over 20 MB. The extender needs only each node's `metadata.name`, and answers with the kept
nodes unchanged, so building Python objects for whole nodes would waste most of a request's
time. The scanner walks the structure it needs (object members, array elements, strings) and
skips every other value with one bounded-depth regular expression, which runs in C; values are
returned as byte spans of the original body so kept nodes are re-emitted by slicing.

The scanner checks the structure it walks exactly, but skipped values only for balanced
brackets and well-formed strings: it relies on the sender (kube-scheduler's Go encoder) for the
rest. Anything it cannot follow (nesting deeper than `MAX_SKIP_DEPTH`, malformed structure)
raises `ScanError`, and callers fall back to a full, strict parse.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import orjson

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
_SCALAR = re.compile(rb"-?[0-9][0-9.eE+\-]*+|true|false|null")


class ScanError(ValueError):
    """The scanner cannot follow this body; a strict parser must decide."""


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
        match = _STRING.match(self.data, self.pos)
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
