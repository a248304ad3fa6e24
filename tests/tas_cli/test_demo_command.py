"""`tas demo`'s command line against a real `tas run` (issue 21): which `make run` it controls.

Covered: `--url` is accepted before the action and after it, `TAS_DEMO_URL` names the dashboard
when `--url` does not, and `--url` wins over it; an unreachable dashboard names both ways to give
another address.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.demo_process import start_demo
from tests.processes import free_port, tas_command


def tas_demo(*args: str, url_variable: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TAS_DEMO_URL"}
    if url_variable is not None:
        env["TAS_DEMO_URL"] = url_variable
    return subprocess.run(
        tas_command("demo", *args), capture_output=True, text=True, timeout=30, env=env, check=False
    )


def test_the_url_is_taken_anywhere_on_the_line_or_from_the_environment(tmp_path: Path) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    with start_demo(tmp_path) as demo:
        for args, variable, replicas in (
            (["--url", demo.dashboard, "scale", "demo-app", "5"], None, 5),
            (["scale", "demo-app", "6", "--url", demo.dashboard], None, 6),
            (["scale", "--url", demo.dashboard + "/", "demo-app", "3"], None, 3),
            (["scale", "demo-app", "4"], demo.dashboard, 4),
            (["scale", "demo-app", "2", "--url", demo.dashboard], nowhere, 2),
        ):
            done = tas_demo(*args, url_variable=variable)
            assert done.returncode == 0, (args, variable, done.stderr)
            # The dashboard's answer: this `make run` was the one asked.
            assert json.loads(done.stdout)["replicas"] == replicas


def test_an_unreachable_dashboard_says_how_to_name_another() -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    done = tas_demo("unload", "node-d", url_variable=nowhere)
    assert done.returncode == 2
    assert done.stderr.startswith(f"tas demo: cannot reach {nowhere} (is `make run` running? ")
    assert "--url or TAS_DEMO_URL" in done.stderr
