"""An HTTP request body read with a ceiling, for the apps that take one (the extender, the
dashboard's controls).

A client that sends more than an endpoint could ever need is refused as soon as its body passes
the limit, so it cannot make the server buffer more than that; how the refusal reads (status,
message, JSON shape) stays each app's. It reads any async stream of chunks, so it needs no web
framework: Starlette's `Request.stream()` is one.
"""

from __future__ import annotations

from collections.abc import AsyncIterable


class BodyTooLargeError(Exception):
    """The body grew past `limit` bytes; nothing after that point was read."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the body is over {limit} bytes")
        self.limit = limit


async def read_limited(chunks: AsyncIterable[bytes], *, limit: int) -> bytes:
    """The chunks joined, or `BodyTooLargeError` at the first chunk that passes `limit`."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise BodyTooLargeError(limit)
        parts.append(chunk)
    return b"".join(parts)
