"""Ctrl-C during `tas simulate`, as a terminal sends it (SIGINT to the whole process group:
the command and its workers): it stops within 2 s with one line, exit 130, no traceback from
the command or any worker, and no warning of leaked semaphores."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.processes import tas_command


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_ctrl_c_stops_the_runs_quietly_within_two_seconds(tmp_path: Path) -> None:
    command = tas_command(
        "simulate", "psi-skewed", "--seeds", "3", "--workers", "2", "--out", str(tmp_path)
    )
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        # The workers started and running (the resource tracker is a child too).
        while len(children(process.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        time.sleep(2.0)
        pressed = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=10)
        took = time.monotonic() - pressed
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    said = err.decode()
    assert process.returncode == 130, said
    assert took < 2.0
    assert said.strip() == "tas simulate: interrupted; nothing written", said
    assert not (tmp_path / "summary.json").exists()
