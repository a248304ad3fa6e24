"""A list+watch cache of one resource, kept current by a daemon thread.

The loop is the informer of client-go, reduced to what this project needs: LIST once, then
WATCH from the list's resourceVersion (with bookmarks, so a quiet resource still advances it);
when the stream ends, watch again from the last resourceVersion seen; when the API says that
version is gone (410, as an ERROR event or as the HTTP status), LIST again and report the
difference as changes; on any other failure, retry with exponential backoff.

The LIST is paginated as client-go's pager does it: `limit` objects a page (500, the pager's
default), each next page asked for with the `continue` token of the one before, so neither the
API server nor this process ever holds a whole 150,000-pod list at once; each page is parsed,
converted and dropped before the next is read. resourceVersion semantics (docs/deploy.md,
"Scale"): the first page sets no resourceVersion, which asks for the most recent state (a
consistent read, from etcd or, since Kubernetes 1.31, from the watch cache), and the pages
after it carry only the token, which pins them to the first page's snapshot. `resourceVersion=0`
(any cached state) is not used: the API server's watch cache ignores `limit` for it and sends
every object in one response, the very peak paging avoids. When the token has expired (410,
the snapshot was compacted away mid-list) the list starts again from its first page, as after
any other 410; client-go would fall back to one unpaginated list instead.

The cache holds only the converted records, never the parsed JSON (a 6 KB pod is about 28 KiB
of Python objects as dicts, under 2 KiB converted). The bytes are read by the resource's codec
(`tas.cluster.codec`: typed structs for pods and nodes, dicts for the rest), and an object is
converted only when it is newer than the cached one. Each record carries its resourceVersion,
which is all the loop needs to tell a newer object from one it already has.

Writes made by the adapter are folded in at once (`apply`), so a reader never acts on a state
older than its own last write; a watch event that is not newer than the cached object is
ignored, so each change is reported once.

Stopping is prompt: `close()` aborts the request in progress (see `_abort`), so a quiet watch
does not hold its thread, and the process, for the rest of its server-side timeout (60 s).
"""

from __future__ import annotations

import logging
import random
import socket
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from kubernetes.client.exceptions import ApiException

from tas.cluster.codec import Codec, Event, Page
from tas.cluster.interface import ChangeType

log = logging.getLogger(__name__)

Raw = Mapping[str, Any]
#: A generated list function of the client, with its positional arguments bound.
ListCall = Callable[..., Any]
Sleep = Callable[[float], None]
#: What a cache tells of each change: its type, the object's namespace ("" when cluster-scoped)
#: and name.
ChangeCallback = Callable[[ChangeType, str, str], None]

#: Objects a LIST page asks for: client-go's pager default (`pager.defaultPageSize`).
PAGE_SIZE = 500


class Versioned(Protocol):
    """A cached record: it knows the resourceVersion of the object it was converted from."""

    @property
    def resource_version(self) -> str: ...


T = TypeVar("T", bound=Versioned)


class _GoneError(Exception):
    """The resourceVersion we would resume from is no longer in the API's history."""


@dataclass
class Backoff:
    """Exponential backoff with jitter: initial, x factor per failure, capped; reset on success."""

    initial: float = 0.5
    factor: float = 2.0
    maximum: float = 30.0
    jitter: float = 0.1
    _next: float = 0.0

    def next_delay(self) -> float:
        delay = self._next or self.initial
        self._next = min(delay * self.factor, self.maximum)
        return delay * (1 + random.uniform(-self.jitter, self.jitter))

    def reset(self) -> None:
        self._next = 0.0


def _lines(response: Any) -> Iterator[bytes]:
    """The non-empty lines of a streamed watch response, as they arrive."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        yield from (line for line in lines if line.strip())
    if buffer.strip():
        yield buffer


def _abort(response: Any) -> None:
    """Make a read blocked on `response`, in any thread, return at once.

    Closing the response from another thread is not enough: CPython closes the descriptor
    only when its last user lets go, so the thread blocked in recv() keeps waiting until the
    server ends the watch (60 s). Shutting the socket down acts on the connection itself:
    the blocked recv() returns end-of-stream now, on plain and TLS sockets alike, and the
    server sees the connection end. (The alternative, a short read timeout polled against
    the stop event, would wake every watch every period for nothing, cannot tell a quiet
    watch from a dead one, and urllib3 cannot resume a chunked read after a timeout.)
    """
    try:
        shutdown = getattr(response, "shutdown", None)  # urllib3 >= 2.3
        if shutdown is not None:
            shutdown()
            return
        connection = getattr(response, "connection", None) or getattr(response, "_connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, ValueError, RuntimeError):
        # Already closed, or already handed back to the pool: nothing is blocked on it.
        log.debug("aborting a finished request failed", exc_info=True)


def _newer(candidate: str, current: str) -> bool:
    """resourceVersions are opaque, but etcd's are integers; compare them when we can."""
    try:
        return int(candidate) > int(current)
    except ValueError:
        return candidate != current


# How many removed keys the cache remembers: a write's answer trails its watch event by one
# round trip, in which far fewer objects than this go away.
TOMBSTONES = 4096


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


class Informer(Generic[T]):
    def __init__(
        self,
        *,
        name: str,
        list_call: ListCall,
        codec: Codec[T],
        on_change: ChangeCallback,
        watch_timeout: float = 60.0,
        connect_timeout: float = 10.0,
        backoff: Backoff | None = None,
        sleep: Sleep | None = None,
        selectors: Mapping[str, str] | None = None,
        page_size: int = PAGE_SIZE,
        after_page: Callable[[int, bool], None] | None = None,
    ) -> None:
        """`codec` reads the resource's bytes and converts its objects (`tas.cluster.codec`);
        `after_page(pages, last)` runs after each LIST page is folded in, with the number of pages
        read so far (`tas.adapters.cluster.heap`)."""
        self.name = name
        self._list_call = list_call
        self._codec = codec
        self._on_change = on_change
        self._watch_timeout = watch_timeout
        self._connect_timeout = connect_timeout
        self._backoff = backoff or Backoff()
        self._sleep = sleep
        self._selectors = dict(selectors or {})
        self._page_size = page_size
        self._after_page = after_page
        self._lock = threading.Lock()
        self._items: dict[str, T] = {}
        # The resourceVersion each recently removed key went away at. A write's answer can
        # arrive after the watch event that removed its object (deleted, or moved out of this
        # cache's label selector); without the tombstone it would put the object back for good.
        self._tombstones: OrderedDict[str, str] = OrderedDict()
        self._resource_version: str | None = None
        self._response: Any = None
        # Guards `_response`: once the loop has let a response go, its connection may serve
        # another request from the pool, which `close()` must then not shut down.
        self._response_lock = threading.Lock()
        self.synced = threading.Event()
        self.lists = 0  # how many complete LISTs so far (a test and metric hook)

    # ------------------------------------------------------------ reads

    def items(self) -> list[T]:
        with self._lock:
            return [self._items[key] for key in sorted(self._items)]

    def get(self, key: str) -> T | None:
        with self._lock:
            return self._items.get(key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    # ------------------------------------------------------------ updates

    def apply_answer(self, type_: ChangeType, data: bytes) -> bool:
        """Fold in the object an API answer carries (our own write's); True if it changed."""
        return self._apply(type_, self._codec.one(data))

    def _apply(self, type_: ChangeType, obj: Any) -> bool:
        """Fold one decoded object in (a page's, a watch event's, a write's answer's)."""
        identity = self._codec.identity(obj)
        namespace, name = identity.namespace, identity.name
        key = _key(namespace, name)
        if type_ is ChangeType.DELETED:
            return self._remove(key, namespace, name, identity.resource_version)
        with self._lock:
            current = self._items.get(key)
            gone_at = self._tombstones.get(key)
        if current is not None and not _newer(identity.resource_version, current.resource_version):
            return False
        if gone_at is not None and not _newer(identity.resource_version, gone_at):
            return False
        # Converted outside the lock: readers wait for no conversion. Only this cache's watch
        # thread and the adapter's own writes convert, and a write that loses a race to a
        # newer event is caught by the version check again below.
        record = self._codec.convert(obj)
        with self._lock:
            current = self._items.get(key)
            if current is not None and not _newer(
                record.resource_version, current.resource_version
            ):
                return False
            gone_at = self._tombstones.pop(key, None)
            if gone_at is not None and not _newer(record.resource_version, gone_at):
                self._tombstones[key] = gone_at
                return False
            self._items[key] = record
        self._on_change(
            ChangeType.MODIFIED if current is not None else ChangeType.ADDED, namespace, name
        )
        return True

    def _remove(self, key: str, namespace: str, name: str, version: str | None = None) -> bool:
        with self._lock:
            if version is not None:
                self._tombstones[key] = version
                self._tombstones.move_to_end(key)
                while len(self._tombstones) > TOMBSTONES:
                    self._tombstones.popitem(last=False)
            if self._items.pop(key, None) is None:
                return False
        self._on_change(ChangeType.DELETED, namespace, name)
        return True

    # ------------------------------------------------------------ the loop

    def run(self, stop: threading.Event) -> None:
        """List and watch until `stop` is set; meant for a daemon thread."""
        while not stop.is_set():
            try:
                if self._resource_version is None:
                    self._list(stop)
                self._watch(stop)
                self._backoff.reset()
            except _GoneError as error:
                # A watch's resume point, or a list's continue token, was compacted away.
                log.info("%s: %s; listing again", self.name, error or "resourceVersion expired")
                self._resource_version = None
            except Exception as error:  # any failure: the loop must survive and retry
                if stop.is_set():
                    break
                delay = self._backoff.next_delay()
                log.warning(
                    "%s: list/watch failed (%s); retrying in %.1fs", self.name, error, delay
                )
                if self._sleep is not None:
                    self._sleep(delay)
                else:
                    stop.wait(delay)

    def close(self) -> None:
        """Abort the list or watch in progress; set the loop's stop event first.

        A request still being opened has no response to abort yet: the loop aborts it itself
        as soon as it returns (`_open`).
        """
        with self._response_lock:
            if self._response is not None:
                _abort(self._response)

    def _open(self, stop: threading.Event, **arguments: Any) -> Any:
        """Start one list or watch request, where `close()` can find it to abort it."""
        response = self._list_call(_preload_content=False, **arguments, **self._selectors)
        with self._response_lock:
            self._response = response
        # `close()` sets no flag of its own: it runs after `stop` is set, and `_response` is
        # set before `stop` is read here, so either `close()` sees this response or this
        # thread sees the stop. A stop during the opening thus costs one round trip, not a
        # whole watch timeout.
        if stop.is_set():
            _abort(response)
        return response

    def _finish(self, response: Any, *, complete: bool) -> None:
        with self._response_lock:
            self._response = None
        if not complete:
            response.close()  # a stream left unread or aborted cannot go back to the pool
        response.release_conn()

    def _list(self, stop: threading.Event) -> None:
        """LIST page by page, folding each page in as it arrives; then drop what no page held.

        Each object of a page goes through `apply`, which ignores one the cache already has at
        that resourceVersion, so a LIST after a 410 reports only what changed meanwhile.
        """
        listed: set[str] = set()
        token: str | None = None
        pages = 0
        while True:
            page = self._list_page(stop, token)
            for obj in page.objects:
                self._apply(ChangeType.ADDED, obj)
                identity = self._codec.identity(obj)
                listed.add(_key(identity.namespace, identity.name))
            token = page.token
            resource_version = page.resource_version
            del page  # the decoded page: the largest transient the process has
            pages += 1
            if self._after_page is not None:
                self._after_page(pages, token is None)
            if token is None or stop.is_set():
                break
        if stop.is_set():
            return
        with self._lock:
            gone = [key for key in self._items if key not in listed]
        for key in gone:
            namespace, _, name = key.rpartition("/")
            self._remove(key, namespace, name)
        self.lists += 1
        self._resource_version = resource_version
        self.synced.set()

    def _list_page(self, stop: threading.Event, token: str | None) -> Page:
        """One page: the first (no token) at the most recent resourceVersion, the others
        pinned to its snapshot by their token. An expired token (410) is `_GoneError`."""
        paging: dict[str, Any] = {"limit": self._page_size}
        if token is not None:
            paging["_continue"] = token
        try:
            response = self._open(
                stop, _request_timeout=(self._connect_timeout, self._watch_timeout), **paging
            )
        except ApiException as error:
            if error.status == 410:
                raise _GoneError(f"continue token expired: {error.reason}") from error
            raise
        complete = False
        try:
            data = response.data
            complete = True
        finally:
            self._finish(response, complete=complete)
        return self._codec.page(data)

    def _watch(self, stop: threading.Event) -> None:
        try:
            response = self._open(
                stop,
                watch=True,
                resource_version=self._resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=max(1, int(self._watch_timeout)),
                _request_timeout=(self._connect_timeout, self._watch_timeout + 5),
            )
        except ApiException as error:
            if error.status == 410:
                raise _GoneError from error
            raise
        complete = False
        try:
            for line in _lines(response):
                if stop.is_set():
                    return
                self._event(self._codec.event(line))
            complete = not stop.is_set()  # an aborted stream also ends, but not cleanly
        finally:
            self._finish(response, complete=complete)

    def _event(self, event: Event) -> None:
        kind, obj = event.type, event.object
        if kind == "ERROR":
            status = obj if isinstance(obj, dict) else {}
            if status.get("code") == 410:
                raise _GoneError(status.get("message", ""))
            raise ApiException(status=status.get("code", 0), reason=status.get("message", ""))
        if obj is None:
            return
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._apply(ChangeType[kind], obj)
        version = self._codec.identity(obj).resource_version
        if version:
            self._resource_version = version
