"""`tas demo scale|load|unload`: the dashboard's controls from a terminal.

`make run` serves its controls as a JSON API (docs/dashboard.md); these commands call it, so
everything a newcomer can click can be scripted too (`tas set-health` writes the metric itself).
The API validates every request; a refusal is printed in words (its reason: a name the demo
does not have comes with the closest one and the list, as the page words it, "workloads") and
exits 1.

Which `make run`: `--url`, given before or after the action (`tas demo --url U scale ...` and
`tas demo scale ... --url U` alike), else `TAS_DEMO_URL`, else the default address.
"""

from __future__ import annotations

import argparse
import json
import sys

import httpx

from tas_cli import common

TIMEOUT_SECONDS = 10.0


#: `tas demo --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = "Call the dashboard's control API of a running `tas run` (docs/dashboard.md)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    url_help = (
        "the dashboard of the `make run` to control "
        f"(default ${common.DEMO_URL_VARIABLE}, else {common.DEMO_URL})"
    )
    parser.add_argument("--url", default=None, help=url_help)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    scale = actions.add_parser("scale", help="set a workload's replicas")
    scale.add_argument("workload")
    scale.add_argument("replicas", type=int)
    load = actions.add_parser("load", help="add CPU load (a noisy neighbour) to a node")
    load.add_argument("node")
    load.add_argument("cores", type=float)
    unload = actions.add_parser("unload", help="remove the load added to a node")
    unload.add_argument("node")
    for action in (scale, load, unload):
        # After the action too. SUPPRESS: an action's parser that is not given --url leaves
        # the value the command's parser read before it (argparse copies its defaults over).
        action.add_argument("--url", default=argparse.SUPPRESS, help=url_help)


def run(args: argparse.Namespace) -> int:
    base = common.demo_url(args.url)
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
        print(
            f"tas demo: cannot reach {base} (is `make run` running? on another address: "
            f"--url or {common.DEMO_URL_VARIABLE}): {error}",
            file=sys.stderr,
        )
        return 2
    try:
        answer = response.json()
    except ValueError:
        answer = {"error": response.text[:200]}
    if response.is_success:
        print(json.dumps(answer))
        return 0
    reason = answer.get("error", answer) if isinstance(answer, dict) else answer
    # In words only: the reason says what was wrong (the status code is for scripts).
    print(f"tas demo {args.action}: {reason}", file=sys.stderr)
    return 1
