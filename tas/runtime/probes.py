"""`/healthz`, `/readyz` and `/metrics` on a small stdlib HTTP server.

The policy controller and the descheduler serve no API, so the standard library is enough: no
framework, one thread. Health and readiness are callables and the registry is injected, so
tests build the server with whatever they need.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


class ProbeServer:
    """Serves the probes and metrics on `host:port` (port 0 picks a free port) in a thread."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        registry: CollectorRegistry,
        healthy: Callable[[], bool],
        ready: Callable[[], bool],
        name: str = "probes",
    ) -> None:
        handler = _handler(registry, healthy, ready)
        self._name = name
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        # shutdown() waits for the serving loop to look at its flag, once per poll interval.
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"{self._name}-http",
            daemon=True,
        )
        self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        if self._thread is not None:
            self._server.shutdown()  # only a running serve_forever() ever answers it
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout)


def _handler(
    registry: CollectorRegistry, healthy: Callable[[], bool], ready: Callable[[], bool]
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path in ("/healthz", "/livez"):
                self._probe(healthy())
            elif path == "/readyz":
                self._probe(ready())
            else:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")

        def _probe(self, ok: bool) -> None:
            status, body = (200, b"ok\n") if ok else (503, b"not ok\n")
            self._send(status, body, "text/plain; charset=utf-8")

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # probes every few seconds would drown the log

    return Handler
