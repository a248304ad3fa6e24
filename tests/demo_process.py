"""`tas run` as a real process, for the tests that watch the demo from outside.

`start_demo(tmp_path)` starts it on free loopback ports with a fast sync period, waits until
the dashboard's API answers, and hands back its URLs and a way to poll `/api/` until a
condition holds. The process (a `tests.processes.Process`, its output in `<dir>/tas-run.log`)
is stopped (SIGTERM) at the end.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests.processes import Process, free_port, tas_command

T = TypeVar("T")


@dataclass
class DemoProcess:
    server: Process
    dashboard: str
    extender: str
    metrics: Path

    @property
    def process(self) -> subprocess.Popen[bytes]:
        assert self.server.popen is not None, "tas run is not running"
        return self.server.popen

    @property
    def output(self) -> list[str]:
        return self.server.output().splitlines()

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
            tas_command("set-health", node, value, "--dir", str(self.metrics)),
            check=True,
            capture_output=True,
            timeout=30,
        )


@contextlib.contextmanager
def start_demo(directory: Path, *extra: str) -> Iterator[DemoProcess]:
    dashboard_port, extender_port = free_port(), free_port()
    dashboard = f"http://127.0.0.1:{dashboard_port}"
    server = Process(
        tas_command(
            "run",
            "--dir", str(directory),
            "--listen", f"127.0.0.1:{extender_port}",
            "--dashboard", f"127.0.0.1:{dashboard_port}",
            "--sync-period", "0.3",
            "--descheduling-interval", "0.6",
            "--duration", "120",
            *extra,
        ),
        dashboard,
        None,
        directory / "tas-run.log",
    )  # fmt: skip
    demo = DemoProcess(
        server,
        dashboard=dashboard,
        extender=f"http://127.0.0.1:{extender_port}",
        metrics=directory / "metrics",
    )

    def answering() -> bool:
        try:
            state = demo.get("/api/state")
        except httpx.HTTPError:
            return False
        return bool(state.get("nodes"))

    with server:
        server.start(60, ready=answering)
        yield demo
