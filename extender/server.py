"""Serving the extender application with uvicorn, in the foreground or in a thread.

The listening socket is bound before uvicorn starts, so port 0 works (tests and benchmarks ask
for a free port and read back the one they got) and the URL is known before the first request.

Stopping is bounded: idle keep-alive connections (kube-scheduler keeps some) are closed at
once, and requests still running get `shutdown_timeout` seconds before they are cancelled,
so a rollout never waits on the extender for long.

`background` coroutines run on the server's event loop while it serves, and are cancelled
when it stops: work that must not race the connections, such as reloading the certificate
into the SSL context they are made with (`extender.cert_reload`).
"""

from __future__ import annotations

import asyncio
import ctypes
import socket
import ssl
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from types import TracebackType
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from extender.tls import client_certificate

#: glibc `mallopt` parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def tune_allocator(*, largest_body: int = 64 * 1024 * 1024) -> bool:
    """Keep freed request-sized buffers in the heap instead of returning them to the system.

    glibc serves allocations above its mmap threshold (at most 32 MiB) with fresh mappings and
    trims freed heap above 2x that threshold, so every 20 MB request body and answer page-faults
    its memory in again: more than the decoding itself costs. Raising both thresholds keeps
    those pages mapped for the next request. Returns False where glibc is not the allocator.
    """
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    limit = min(largest_body, 2**30)
    return bool(mallopt(_M_MMAP_THRESHOLD, limit) and mallopt(_M_TRIM_THRESHOLD, 4 * limit))


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


#: A coroutine function run on the server's loop (see the module docstring).
Background = Callable[[], Coroutine[Any, Any, None]]


class _Server(uvicorn.Server):
    """uvicorn's server, with `background` tasks from its start to its shutdown."""

    def __init__(self, config: uvicorn.Config, background: Sequence[Background]) -> None:
        super().__init__(config)
        self._background = tuple(background)
        self._tasks: list[asyncio.Task[None]] = []

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self._tasks = [asyncio.create_task(start()) for start in self._background]

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await super().shutdown(sockets=sockets)


class ClientCertificateProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol, with the TLS peer certificate's name and expiry in every
    request's scope (`scope["extensions"]["tls"]`, `extender.tls.client_certificate`), for
    `extender.tls.ClientNameGuard`."""

    _tls: dict[str, Any] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._tls = client_certificate(transport)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._tls is not None:
            extensions: dict[str, dict[object, object]] = {"tls": dict(self._tls.items())}
            self.scope["extensions"] = extensions


class ExtenderServer:
    """One uvicorn server on one pre-bound socket."""

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl_context: ssl.SSLContext | None = None,
        log_level: str = "info",
        shutdown_timeout: int = 1,
        background: Sequence[Background] = (),
    ) -> None:
        self._ssl_context = ssl_context
        self.socket = bind_socket(host, port)
        bound_host, bound_port = self.socket.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        self.url = f"{'https' if ssl_context else 'http'}://{shown}:{bound_port}"
        factory: Callable[[uvicorn.Config, Callable[[], ssl.SSLContext]], ssl.SSLContext] | None
        factory = (lambda config, default: ssl_context) if ssl_context is not None else None
        self.config = uvicorn.Config(
            app,
            lifespan="off",
            access_log=False,
            server_header=False,
            log_level=log_level,
            log_config=None,
            # uvicorn's own context has no minimum TLS version; the factory hands it ours.
            ssl_context_factory=factory,
            http=ClientCertificateProtocol if ssl_context is not None else "auto",
            timeout_graceful_shutdown=shutdown_timeout,
        )
        self.server: uvicorn.Server = _Server(self.config, background)
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Serve until the process is told to stop (SIGINT/SIGTERM) or `request_stop()`.

        In the main thread uvicorn handles SIGINT and SIGTERM itself while serving, then
        restores the handlers it found and raises the signal again: install a handler first
        (one that calls `request_stop()`), or the default action kills the process after all.
        """
        try:
            self.server.run(sockets=[self.socket])
        finally:
            self.socket.close()

    def start(self, timeout: float = 10.0) -> None:
        """Serve in a daemon thread; return once the server accepts connections."""
        self._thread = threading.Thread(target=self.run, name="extender-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the extender server did not start")
            time.sleep(0.01)

    def request_stop(self) -> None:
        """Begin a graceful stop; safe from a signal handler, and before `run()` too."""
        self.server.should_exit = True

    def stop(self, timeout: float = 10.0) -> None:
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> ExtenderServer:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
