"""`make run`: the health-metric demo closes the loop on the embedded default.

Covered (through the real `tas run` process, its real extender over HTTP, and `tas set-health`):
- the extender answers the demo filter request: node-b removed with its reason;
- the demo pods are all placed, never on node-b (dontschedule: health 1);
- node-c set to 2: it is labelled `demo-policy=violating`, its pods are evicted by the
  descheduler and rescheduled elsewhere, and no pod is placed back on node-c.
"""

from __future__ import annotations

import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
FIRST_PODS = {f"health-metric-demo/demo-app-6558d5ffbf-0000{i}" for i in range(3)}
REQUEST = REPO / "deploy" / "health-metric-demo" / "filter-request.json"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Demo:
    def __init__(self, process: subprocess.Popen[str], url: str, metrics: Path) -> None:
        self.process = process
        self.url = url
        self.metrics = metrics
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for_state(self, pattern: str, timeout: float = 30.0) -> str:
        """The first state line matching `pattern` printed within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        wanted = re.compile(pattern)
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self.seen.append(line)
            if wanted.search(line):
                return line
        pytest.fail(f"no line matching {pattern!r} in {timeout}s; output:\n" + "\n".join(self.seen))


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "tas_cli", "run",
            "--dir", str(tmp_path),
            "--listen", f"127.0.0.1:{port}",
            "--sync-period", "0.3",
            "--descheduling-interval", "0.6",
            "--duration", "60",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        yield Demo(process, f"http://127.0.0.1:{port}", tmp_path / "metrics")
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def set_health(demo: Demo, node: str, value: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "tas_cli", "set-health", node, value, "--dir", str(demo.metrics)],
        check=True,
        capture_output=True,
    )


def test_the_demo_serves_the_extender_and_closes_the_loop(demo: Demo) -> None:
    demo.wait_for_state(r"^node-b: health=1 labels=- pods=-$")
    demo.wait_for_state(r"^node-c: health=0 labels=- pods=demo-app")

    answer = httpx.post(
        f"{demo.url}/scheduler/filter",
        content=REQUEST.read_bytes(),
        headers={"Content-Type": "application/json"},
    ).json()
    assert answer["NodeNames"] == ["node-a", "node-c"]
    assert answer["FailedAndUnresolvableNodes"] == {
        "node-b": "demo-policy: health_metric Equals 1 (value 1)"
    }

    set_health(demo, "node-c", "2")
    # Every pod ends on node-a: node-b is unhealthy (1) and node-c now violates (2).
    node_a = demo.wait_for_state(r"^node-a: .*pods=demo-app.*, demo-app.*, demo-app")
    assert node_a.count("demo-app") == 3
    demo.wait_for_state(r"^node-b: health=1 labels=- pods=-$")
    demo.wait_for_state(r"^node-c: health=2 labels=demo-policy=violating pods=-$")
    # The recreated pods were placed through the extender, which explains each decision.
    decisions = httpx.get(f"{demo.url}/debug/decisions").json()
    recreated = [d for d in decisions if d["verb"] == "filter" and d["pod"] not in FIRST_PODS]
    assert recreated, json.dumps(decisions)[:2000]
