"""Real processes for tests: one way to start a program, wait until it serves, and stop it.

`Process(args, url, ready_path, log)` is a program with its output in a log file. `start()`
launches it and waits until `url + ready_path` answers 200 (or until `ready()`, when a test
knows better what ready means), failing with the log's tail if the program exits or the time
runs out; `eventually(check, what)` waits for what the running program should do, failing
with its exit code and the log's tail at once if it exits; `stop()` sends SIGTERM, as kubelet
does, and kills it after a grace period.
`free_port()` finds a loopback port (never the same one for two tests running side by side,
under pytest-xdist too); `black_hole()` is a loopback server that never answers (a hung API
server or Prometheus); `tas_command(...)` is the `tas` command line of this interpreter;
`write_stand_in_ssh(directory, log)` writes an `ssh` that runs the remote command here.

Used for Prometheus and node-exporter (tests/tas/adapters/metrics/processes.py), `tas run`
(tests/demo_process.py), the extender (tests/tas_cli/test_extender.py) and the components under
RBAC (tests/test_rbac.py).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests import waiting

ROOT = Path(__file__).resolve().parents[1]


#: Ports `free_port` handed out in this process: it never hands one out twice.
_HANDED_OUT: set[int] = set()


def _worker() -> tuple[int, int]:
    """This process's index among the suite's processes and their number: under pytest-xdist
    (make test) worker gwN of PYTEST_XDIST_WORKER_COUNT, else 0 of 1."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return (int(name.removeprefix("gw")) if name.startswith("gw") else 0), max(count, 1)


def free_port() -> int:
    """A loopback port nothing listens on, for a program the test starts. The port is free
    only until someone binds it, so each test process takes its own share of them and none
    twice: two tests running side by side are not handed the same port. The share is by
    port // 2 modulo the number of xdist workers (Linux gives bind() to port 0 even ports
    only, so the port's own parity would leave one worker none); a worker that meets no port
    of its share in 100 tries takes any it has not handed out before."""
    index, count = _worker()
    for attempt in itertools.count():
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
        if port not in _HANDED_OUT and ((port // 2) % count == index or attempt >= 100):
            _HANDED_OUT.add(port)
            return port
    raise AssertionError("unreachable")


@contextlib.contextmanager
def black_hole() -> Iterator[str]:
    """The URL of a server that accepts connections (into its backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        host, port = listener.getsockname()
        yield f"http://{host}:{port}"


def write_stand_in_ssh(directory: Path, log: Path) -> Path:
    """An `ssh` in `directory` (made if missing) that appends its arguments to `log`, then runs
    the remote command with `sh -c`, as sshd does; `directory`, for a test to put first on PATH."""
    directory.mkdir(exist_ok=True)
    ssh = directory / "ssh"
    ssh.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$*\" >> '{log}'\n"
        'while [ "$#" -gt 0 ]; do case "$1" in --) shift; break;; -o|-l) shift 2;; '
        "*) break;; esac; done\n"
        'shift\nexec sh -c "$1"\n'
    )
    ssh.chmod(0o755)
    return directory


def tas_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tas_cli", *args]


@dataclass
class Process(contextlib.AbstractContextManager["Process"]):
    """One program: its command line, where it serves, and its log file (see the module)."""

    args: list[str]
    url: str
    #: Readiness: a GET of `url + ready_path` answers 200; None: started is ready.
    ready_path: str | None
    log: Path
    #: What the readiness check trusts: a CA file for a server with a private certificate.
    verify: ssl.SSLContext | bool = True
    env: Mapping[str, str] = field(default_factory=dict)
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self, timeout: float = 20.0, *, ready: Callable[[], bool] | None = None) -> None:
        with self.log.open("ab") as log:
            self.popen = subprocess.Popen(
                self.args,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
            )
        check = ready or self._answers
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                pytest.fail(f"{self.args[0]} exited: {self.output()[-2000:]}")
            if check():
                return
            time.sleep(0.1)
        self.stop()
        pytest.fail(f"{self.args[0]} did not get ready in {timeout}s: {self.output()[-2000:]}")

    def _answers(self) -> bool:
        if self.ready_path is None:
            return True
        try:
            answer = httpx.get(self.url + self.ready_path, timeout=1.0, verify=self.verify)
        except httpx.HTTPError:
            return False
        return answer.status_code == 200

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def eventually(
        self,
        check: Callable[[], bool],
        what: str,
        timeout: float = 30.0,
        *,
        state: Callable[[], str] | None = None,
    ) -> None:
        """Return once `check()` is true; fail naming `what`, with the exit code, `state()` and
        the log's tail, after `timeout` seconds or as soon as the process has exited."""

        def report() -> str:
            assert self.popen is not None
            seen = f"{state()}\n" if state is not None else ""
            return f"(exit code {self.popen.poll()})\n{seen}--- output:\n{self.output()[-4000:]}"

        assert self.popen is not None, "not started"
        waiting.eventually(
            check, timeout, what=what, poll=0.1, hopeless=lambda: not self.running, state=report
        )

    def terminate(self, timeout: float = 10.0) -> int:
        """SIGTERM, as kubelet stops a container; the exit code."""
        assert self.popen is not None, "not started"
        self.popen.send_signal(signal.SIGTERM)
        return self.popen.wait(timeout=timeout)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; nothing when not running."""
        if self.popen is None or self.popen.poll() is not None:
            return
        try:
            self.terminate()
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(5)

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
