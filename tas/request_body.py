"""An HTTP request body read with a ceiling, and refused with a reason, for the apps that take
one (the extender, the dashboard's controls).

A client that sends more than an endpoint could ever need is refused as soon as its body passes
the limit, so it cannot make the server buffer more than that. It reads any async stream of
chunks, so it needs no web framework: Starlette's `Request.stream()` is one.

A body the app will not act on is a `RejectedRequestError`: the 4xx status and the reason, both
apps' one way to say it; how the answer reads (JSON shape, metrics) stays each app's.
"""

from __future__ import annotations

from collections.abc import AsyncIterable


class RejectedRequestError(Exception):
    """A request refused before anything acts on it: its 4xx `status` and why (`message`)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


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
