"""The README's words on `make run`'s extender are true: its URL answers a GET with the list of
its endpoints (what a browser shows there), and the `curl` the terminal prints for it runs as
printed against the real extender and answers as kube-scheduler's filter call does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from extender.app import ENDPOINTS
from tas_dashboard.worlds import demo_banner
from tests.demo_process import start_demo
from tests.processes import ROOT

README = ROOT / "README.md"


def test_the_extender_lists_its_endpoints_and_the_printed_curl_filters(tmp_path: Path) -> None:
    said = " ".join(README.read_text(encoding="utf-8").split("- **the extender**", 1)[1].split())
    assert said.startswith(
        ", <http://127.0.0.1:9001>: a browser there gets the list of its endpoints (JSON); the "
        "terminal prints a ready-to-paste `curl` that asks it to filter, as kube-scheduler."
    )
    with start_demo(tmp_path) as demo:
        index = httpx.get(f"{demo.extender}/", timeout=5)
        assert index.json()["endpoints"] == ENDPOINTS
        banner = demo_banner(demo.metrics, demo.dashboard, demo.extender)
        curl = banner.split("Ask the extender, as kube-scheduler would:\n", 1)[1]
        command = curl.replace("\\\n", " ").strip()
        assert command.endswith(f"{demo.extender}/scheduler/filter")
        ran = subprocess.run(
            command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=30, check=True
        )
    answer = json.loads(ran.stdout)
    assert set(answer) >= {"NodeNames", "FailedNodes", "Error"}, answer
