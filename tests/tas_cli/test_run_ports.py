"""`tas run`'s ports, checked before anything starts: a real process (issue 45).

Covered: with both its ports taken, `tas run` says so for both in one error, each with the
flag that moves it, and exits 2 without setting anything up (no run directory); the same
address given to both servers is named as such. (One taken port: tests/tas_cli/test_run_command.py.)
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.processes import free_port, tas_command


@contextmanager
def taken_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def tas_run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tas_command("run", "--dir", str(directory / "run"), *args),
        capture_output=True, text=True, timeout=60, check=False, cwd=directory,
    )  # fmt: skip


def test_every_taken_port_is_reported_in_one_error_with_its_flag(tmp_path: Path) -> None:
    with taken_port() as extender, taken_port() as dashboard:
        done = tas_run(
            tmp_path, "--listen", f"127.0.0.1:{extender}", "--dashboard", f"127.0.0.1:{dashboard}"
        )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    head, *lines = done.stderr.strip().splitlines()
    assert head == "tas run: cannot listen on 2 addresses:"
    assert len(lines) == 2, lines
    assert lines[0].strip().startswith(f"127.0.0.1:{dashboard} for the dashboard: ")
    assert "pick another port with --dashboard 127.0.0.1:18080" in lines[0]
    assert lines[1].strip().startswith(f"127.0.0.1:{extender} for the extender: ")
    assert "pick another port with --listen 127.0.0.1:19001" in lines[1]
    assert all("Address already in use" in line for line in lines)
    assert not (tmp_path / "run").exists(), "nothing is set up while a port is taken"


def test_one_address_for_both_servers_is_an_error_up_front(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    done = tas_run(tmp_path, "--listen", address, "--dashboard", address)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"tas run: cannot listen on {address} for the extender: already given for the dashboard"
    )
