"""A request body read with a ceiling (`tas.request_body`), as the extender and the dashboard read
theirs.

Covered: a body up to the limit is returned whole, in order; one byte more is refused with the
limit in the message; the refusal comes at the chunk that passes the limit, so a client sending
without end is never read further.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tas.request_body import BodyTooLargeError, read_limited


async def _stream(chunks: list[bytes], sent: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        sent.append(chunk)
        yield chunk


def _read(chunks: list[bytes], *, limit: int) -> tuple[bytes, list[bytes]]:
    sent: list[bytes] = []
    return asyncio.run(read_limited(_stream(chunks, sent), limit=limit)), sent


def test_a_body_up_to_the_limit_is_returned_whole() -> None:
    body, _ = _read([b"ab", b"", b"cd"], limit=4)
    assert body == b"abcd"


def test_one_byte_over_the_limit_is_refused_with_the_limit_in_the_message() -> None:
    with pytest.raises(BodyTooLargeError, match="over 4 bytes") as refused:
        _read([b"ab", b"cde"], limit=4)
    assert refused.value.limit == 4


def test_nothing_is_read_after_the_chunk_that_passes_the_limit() -> None:
    sent: list[bytes] = []
    endless = [b"x" * 10] * 1000
    with pytest.raises(BodyTooLargeError):
        asyncio.run(read_limited(_stream(endless, sent), limit=25))
    assert len(sent) == 3
