"""`tas set-health NODE VALUE`: set a node's `health_metric`, here or on a real node over ssh.

The quickest way to watch the health-metric demo react: the in-memory world reads
`run/metrics/<node>.prom`, and a policy rule on `health_metric` reads `node_health_metric`.
The file is rewritten atomically under the directory's writer lock, so `make run`'s own
telemetry writes (which rewrite the same file every second) never lose the value.

The running `make run` is asked first (its dashboard, `GET /api/state`, at `--url`,
$TAS_DEMO_URL or the default address): its `nodes` are the nodes there are and its `metricsDir`
(an absolute path) is the directory to write, so the command works from any directory. Only
when none answers is the directory `--dir` (default `run/metrics`) and its files the nodes.

A typo must not look like success: a node the running demo does not have is exit 2 naming its
nodes (and the closest one, whatever the case typed), `--create` or not, since nothing would
read its file; without a running demo, a node without a file in the directory is the same
error, and `--create` writes a new node's file on purpose. A directory that does not exist is
an error too, never created here (a mistyped `--dir` would otherwise be a new, unread
directory). Any finite VALUE is written; with a running demo, the line printed says what its
policies do with it (`5` acts as `2` under the demo's `GreaterThan 1`: don't schedule here,
move pods away).

With `--ssh [USER@]HOST` it does what TAS's demo script does on a real node: it writes
`node_health_metric VALUE` to `/tmp/node-metrics/text.prom` (`--remote-dir`) for that node's
node-exporter textfile collector, as `deploy/health-metric-demo/set-health.sh` does. Nothing
typed becomes shell code: VALUE must be a finite number (written in canonical form), the user,
host and directory must match strict patterns, ssh gets an argv (no local shell), and the
command sshd hands the remote shell is a fixed script whose arguments are `shlex.quote`d. A
user other than root writes through `sudo -n` (the directory is root's): a sudo that wants a
password fails at once with sudo's own message.
"""

from __future__ import annotations

import argparse
import difflib
import http.client
import json
import math
import subprocess
import sys
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tas.adapters.metrics.textfile import (
    HEALTH_SERIES,
    REMOTE_DIR,
    REMOTE_FILE,
    SUFFIX,
    format_value,
    node_file,
    ssh_command,
    write_node_series,
)
from tas.policies.model import Rule
from tas.rules import rule_is_true
from tas_cli import common

SERIES = HEALTH_SERIES
#: The name a policy rule reads it by.
METRIC = "health_metric"
#: Where `make run` writes its textfiles, when no running one says where.
DEFAULT_DIR = Path("run/metrics")
SSH_TIMEOUT_SECONDS = 30
#: A dashboard on this machine answers at once; a slow answer is treated as no `make run`.
DASHBOARD_TIMEOUT_SECONDS = 2.0


class SetHealthError(Exception):
    """Bad input: printed as one line, exit code 2."""


#: `tas set-health --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    f"Write `{SERIES} VALUE` into DIR/NODE.prom, keeping its other series; "
    f"with --ssh, into {REMOTE_DIR}/{REMOTE_FILE} on a real node. From any directory: "
    "without --dir it asks the running `make run` (its dashboard's GET /api/state) for its "
    "metrics directory and its nodes; NODE must be one of them."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("node", metavar="NODE")
    parser.add_argument("value", metavar="VALUE", help="a finite number, e.g. 0, 1, 2")
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="the textfile metrics directory (default: the running `make run`'s own, which "
        f"its dashboard at --url says, from any directory; when none answers, {DEFAULT_DIR})",
    )
    parser.add_argument(
        "--create",
        action="store_true",
        help="write NODE's file in a directory that has none yet (a directory of your own: "
        "never a node the running `make run` does not have)",
    )
    parser.add_argument(
        "--url",
        default=None,
        help=f"the running `make run`'s dashboard, asked for its nodes and its metrics "
        f"directory (GET /api/state; default ${common.DEMO_URL_VARIABLE} or {common.DEMO_URL})",
    )
    parser.add_argument(
        "--ssh",
        metavar="[USER@]HOST",
        help=f"write {REMOTE_DIR}/{REMOTE_FILE} on this host over ssh instead (TAS's demo)",
    )
    parser.add_argument(
        "--remote-dir",
        default=REMOTE_DIR,
        metavar="DIR",
        help=f"with --ssh: the node-exporter textfile directory (default {REMOTE_DIR})",
    )


def parse_value(text: object) -> float:
    # Not always a string: argparse hands a positional typed as a lone `--` after `--` over
    # as an empty list (a known argparse quirk), and that must be a usage error, not a crash.
    try:
        value = float(text) if isinstance(text, str) else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise SetHealthError(f"VALUE must be a finite number, not {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    directory: Path | None = args.dir
    try:
        value = parse_value(args.value)
        if args.ssh is not None:
            return _over_ssh(args.node, args.ssh, value, remote_dir=args.remote_dir)
        url = common.demo_url(args.url)
        demo = running_demo(url)
        if directory is None:
            directory = demo.metrics_dir if demo is not None and demo.metrics_dir else DEFAULT_DIR
        check_target(directory, args.node, create=args.create, url=url, demo=demo)
        write_node_series(directory, args.node, {SERIES: value})
    except SetHealthError as error:
        print(f"set-health: {error}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"set-health: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"set-health: cannot write {directory}: {error}", file=sys.stderr)
        return 1
    said = f"{args.node}: {SERIES} {args.value} ({node_file(directory, args.node)})"
    meaning = value_meaning(value, demo.policies) if demo is not None else None
    print(f"{said}: {meaning}" if meaning else said)
    return 0


#: What each strategy does to a node where its rules hold (the page's words for them).
EFFECTS = {"dontschedule": "don't schedule here", "deschedule": "move pods away"}


def value_meaning(value: float, policies: Sequence[Mapping[str, Any]]) -> str | None:
    """What the running demo's policies (its `/api/state` `policies`) do to a node whose
    `health_metric` is `value`: any number is accepted, and this says what it means (5 acts as
    2 under the demo's `GreaterThan 1`). None when no policy has a strategy on the metric alone.
    """
    said: list[str] = []
    for policy in policies:
        effects: list[str] = []
        judged = False
        for strategy, effect in EFFECTS.items():
            spec = policy.get("strategies", {}).get(strategy)
            rules = spec.get("rules", []) if isinstance(spec, Mapping) else []
            if not rules or any(r.get("metricname") != METRIC for r in rules):
                continue  # a strategy on other metrics too: the value alone does not decide
            judged = True
            holds = [_holds(r, value) for r in rules]
            if all(holds) if spec.get("logicalOperator") == "allOf" else any(holds):
                texts = [r.get("text") or "" for r, h in zip(rules, holds, strict=True) if h]
                effects.append(f"{effect} ({strategy}: {'; '.join(texts)})")
        if judged:
            name = policy.get("name", "?")
            said.append(f"{name}: " + (", ".join(effects) or _healthy(policy)))
    return "; ".join(said) or None


def _healthy(policy: Mapping[str, Any]) -> str:
    """A value none of the policy's rules holds for: healthy to it, with the values its Equals
    rules name (the demo's legend: 1, 2), so a value outside them is not taken for one."""
    named = sorted(
        {
            r["target"]
            for name in EFFECTS
            for r in policy.get("strategies", {}).get(name, {}).get("rules", [])
            if r.get("operator") == "Equals" and isinstance(r.get("target"), int | float)
        }
    )
    values = ", ".join(format_value(float(v)) for v in named)
    return "no rule holds: healthy to it" + (f" (its rules name {values})" if named else "")


def _holds(rule: Mapping[str, Any], value: float) -> bool:
    try:
        parsed = Rule(
            metricname=rule["metricname"], operator=rule["operator"], target=rule["target"]
        )
    except (KeyError, ValueError):
        return False
    return rule_is_true(parsed, value)


@dataclass(frozen=True)
class RunningDemo:
    """What the running `tas run` says of itself on its dashboard (`GET /api/state`)."""

    nodes: tuple[str, ...]
    #: The textfile directory its telemetry writes and its metric view reads (None: not said).
    metrics_dir: Path | None
    #: Its policies, as `/api/state` gives them (what a value means, `value_meaning`).
    policies: tuple[Mapping[str, Any], ...] = ()


def check_target(
    directory: Path, node: str, *, create: bool, url: str, demo: RunningDemo | None
) -> None:
    """Raise `SetHealthError` unless `directory` exists and `node` is a node there.

    In the running demo's (`demo`) directory its nodes are the known ones, `create` or not: a
    file for a node it does not have would be read by nothing. In a directory of one's own
    (no demo answers, or `--dir` names another), the directory's files are, and `create`
    writes a new node's file. A node of the demo never goes to another directory's file."""
    path = node_file(directory, node)  # a name that cannot be a file is refused first
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise SetHealthError(
            f"{directory} {what} ({directory.resolve()}): is `make run` running? It creates "
            f"its metrics directory and serves it at {url}, where this command looks first "
            f"(--url, ${common.DEMO_URL_VARIABLE}). For a directory of your own: "
            f"mkdir -p {directory}"
        )
    # The demo's own directory, or (a --dir elsewhere) a directory of one's own.
    own = demo is None or (
        demo.metrics_dir is not None and directory.resolve() != demo.metrics_dir.resolve()
    )
    if demo is not None and node in demo.nodes and not path.exists():
        raise SetHealthError(
            f"{directory} has no {path.name}, but {node} is a node of the running `make run` "
            f"at {url}: is {directory} its metrics directory? (leave out --dir: this command "
            "asks `make run` for it)"
        )
    if demo is not None and not own:
        if node not in demo.nodes:
            guess = _did_you_mean(node, demo.nodes)
            raise SetHealthError(
                f"no node {node!r} in the running `make run` at {url}{guess}; "
                f"its nodes: {', '.join(demo.nodes)}"
            )
        return
    if create or path.exists():
        return
    files = tuple(sorted(p.name.removesuffix(SUFFIX) for p in directory.glob(f"*{SUFFIX}")))
    known = f"the nodes there: {', '.join(files)}" if files else "it has no node files"
    demo_said = (
        f"no `make run` answers at {url}"
        if demo is None
        else f"not the directory of the running `make run` at {url}"
    )
    raise SetHealthError(
        f"no node {node!r} in {directory}{_did_you_mean(node, files)} ({known}; {demo_said}); "
        "--create writes a new node's file in a directory of your own"
    )


def _did_you_mean(node: str, known: Sequence[str]) -> str:
    """The closest known node, whatever the case typed (`node-C` is node-c, not node-e)."""
    lowered = {name.lower(): name for name in known}
    close = difflib.get_close_matches(node.lower(), list(lowered), n=1)
    return f" (did you mean {lowered[close[0]]}?)" if close else ""


def running_demo(url: str) -> RunningDemo | None:
    """What the `make run` serving its dashboard at `url` says of itself, or None when none
    answers."""
    if not url.startswith(("http://", "https://")):
        raise SetHealthError(f"--url must be an http:// or https:// address, not {url!r}")
    request = urllib.request.Request(
        url.rstrip("/") + "/api/state", headers={"Accept": "application/json"}
    )
    # No proxy: the dashboard is `make run` on this machine (or one the user names), and a
    # proxy from the environment would answer for it, or refuse, instead.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=DASHBOARD_TIMEOUT_SECONDS) as response:
            answer = json.loads(response.read())
    except (OSError, http.client.HTTPException, ValueError):  # refused, not HTTP, not JSON
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("nodes"), list):
        return None
    names = [entry.get("name") for entry in answer["nodes"] if isinstance(entry, dict)]
    nodes = tuple(name for name in names if isinstance(name, str))
    if not nodes:
        return None
    said = answer.get("metricsDir")
    policies = answer.get("policies")
    return RunningDemo(
        nodes,
        Path(said) if isinstance(said, str) and said else None,
        tuple(p for p in policies if isinstance(p, dict)) if isinstance(policies, list) else (),
    )


def _over_ssh(node: str, destination: str, value: float, *, remote_dir: str) -> int:
    argv = ssh_command(destination, value, remote_dir=remote_dir)
    try:
        result = subprocess.run(argv, check=False, timeout=SSH_TIMEOUT_SECONDS)
    except FileNotFoundError:
        print("set-health: ssh is not installed", file=sys.stderr)
        return 1
    except subprocess.TimeoutExpired:
        print(f"set-health: ssh to {destination} timed out", file=sys.stderr)
        return 1
    if result.returncode != 0:
        code = result.returncode
        print(f"set-health: ssh to {destination} failed (exit {code})", file=sys.stderr)
        return 1
    where = f"{destination}:{remote_dir}/{REMOTE_FILE}"
    print(f"{node}: {SERIES} {format_value(value)} ({where})")
    return 0
