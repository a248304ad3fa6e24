"""`tas run` as a real process, for the tests that watch the demo from outside.

`start_demo(tmp_path)` starts it on free loopback ports with a fast sync period, waits until
the dashboard's API answers, and hands back its URLs and a way to poll `/api/` until a
condition holds. The process is stopped (SIGTERM) at the end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class DemoProcess:
    process: subprocess.Popen[str]
    dashboard: str
    extender: str
    metrics: Path
    output: list[str] = field(default_factory=list)

    def get(self, path: str) -> Any:
        response = httpx.get(f"{self.dashboard}{path}", timeout=5)
        response.raise_for_status()
        return response.json()

    def wait_for(self, what: str, probe: Callable[[], T | None], *, timeout: float = 30.0) -> T:
        """Poll `probe` until it returns something other than None (or fail, saying what)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"tas run exited ({self.process.returncode}) waiting for {what}:\n"
                            + "\n".join(self.output[-40:]))  # fmt: skip
            found = probe()
            if found is not None:
                return found
            time.sleep(0.2)
        pytest.fail(f"no {what} within {timeout:g}s; last output:\n" + "\n".join(self.output[-40:]))

    def node(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.get(f"/api/nodes/{name}")
        return found

    def set_health(self, node: str, value: str) -> None:
        """Exactly what a user types in a second terminal."""
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tas_cli",
                "set-health",
                node,
                value,
                "--dir",
                str(self.metrics),
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )


def _drain(process: subprocess.Popen[str], into: list[str]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        into.append(line.rstrip("\n"))


@contextlib.contextmanager
def start_demo(directory: Path, *extra: str) -> Iterator[DemoProcess]:
    dashboard_port, extender_port = free_port(), free_port()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "tas_cli", "run",
            "--dir", str(directory),
            "--listen", f"127.0.0.1:{extender_port}",
            "--dashboard", f"127.0.0.1:{dashboard_port}",
            "--sync-period", "0.3",
            "--descheduling-interval", "0.6",
            "--duration", "120",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    demo = DemoProcess(
        process,
        dashboard=f"http://127.0.0.1:{dashboard_port}",
        extender=f"http://127.0.0.1:{extender_port}",
        metrics=directory / "metrics",
    )
    threading.Thread(target=_drain, args=(process, demo.output), daemon=True).start()
    try:

        def answering() -> bool | None:
            try:
                state = demo.get("/api/state")
            except httpx.HTTPError:
                return None
            return True if state.get("nodes") else None

        demo.wait_for("dashboard API answering with nodes", answering, timeout=60)
        yield demo
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
