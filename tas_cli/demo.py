"""`tas demo scale|load|unload`: the dashboard's controls from a terminal.

`make run` serves its controls as a JSON API (docs/dashboard.md); these commands call it, so
everything a newcomer can click can be scripted too (`tas set-health` writes the metric itself).
The API validates every request; a refusal is printed with its reason and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx

from tas_cli import subcommand

DEFAULT_URL = "http://127.0.0.1:8080"
TIMEOUT_SECONDS = 10.0


def add_parser(commands: Any) -> None:
    parser = subcommand.add_command(
        commands,
        "demo",
        help="control a running `make run` from the terminal (scale, load, unload)",
        description="Call the dashboard's control API of a running `tas run` (docs/dashboard.md).",
        handler=run,
    )
    parser.add_argument("--url", default=DEFAULT_URL, help=f"the dashboard (default {DEFAULT_URL})")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    scale = actions.add_parser("scale", help="set a workload's replicas")
    scale.add_argument("workload")
    scale.add_argument("replicas", type=int)
    load = actions.add_parser("load", help="add CPU load (a noisy neighbour) to a node")
    load.add_argument("node")
    load.add_argument("cores", type=float)
    unload = actions.add_parser("unload", help="remove the load added to a node")
    unload.add_argument("node")


def run(args: argparse.Namespace) -> int:
    base = args.url.rstrip("/")
    if args.action == "scale":
        method, path, body = (
            "POST",
            f"/api/workloads/{args.workload}/scale",
            {"replicas": args.replicas},
        )
    elif args.action == "load":
        method, path, body = "POST", f"/api/nodes/{args.node}/load", {"cores": args.cores}
    else:
        method, path, body = "DELETE", f"/api/nodes/{args.node}/load", None
    try:
        response = httpx.request(method, base + path, json=body, timeout=TIMEOUT_SECONDS)
    except httpx.HTTPError as error:
        print(f"tas demo: cannot reach {base} (is `make run` running?): {error}", file=sys.stderr)
        return 2
    try:
        answer = response.json()
    except ValueError:
        answer = {"error": response.text[:200]}
    if response.is_success:
        print(json.dumps(answer))
        return 0
    reason = answer.get("error", answer) if isinstance(answer, dict) else answer
    print(f"tas demo: {response.status_code}: {reason}", file=sys.stderr)
    return 1
