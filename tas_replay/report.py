"""What `tas replay` prints and writes: a summary per policy, what `--compare` changes, and
the window as a `tas simulate` scenario file (`--scenario-out`, built by `tas_replay.scenario`).

The command (`tas_cli.replay`) reads the flags, the history and the policies, replays them
(`tas_replay.evaluate`) and calls these; a problem the user can fix is a
`tas.runtime.process.SetupError`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from tas.durations import format_duration
from tas.policies.documents import read_documents
from tas.policies.files import policy_files
from tas.runtime.process import SetupError
from tas.types import MetricName
from tas_replay.evaluate import Replay, compare
from tas_replay.history import History
from tas_replay.scenario import build_scenario


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h"


def print_summary(replay: Replay, out: Any) -> None:
    window = replay.window
    print(
        f"Replayed {window.count:,} steps of {format_duration(window.step)} "
        f"({_hours(window.end - window.start)}):",
        file=out,
    )
    print(
        f"  {'policy':32} {'nodes':>5} {'violating':>10} {'dontsched':>10} "
        f"{'evictions':>9} {'filtered':>8} {'breaker':>8}",
        file=out,
    )
    for key, result in sorted(replay.policies.items()):
        violating = sum(1 for r in result.nodes.values() if r.violating_seconds > 0)
        seconds = sum(r.violating_seconds for r in result.nodes.values())
        blocked = sum(r.dontschedule_seconds for r in result.nodes.values())
        print(
            f"  {key:32} {violating:5} {_hours(seconds):>10} {_hours(blocked):>10} "
            f"{len(result.would_evict):9} {len(result.filtered_placements):8} "
            f"{_hours(result.breaker_open_seconds):>8}",
            file=out,
        )


def print_comparison(first: Replay, second: Replay, out: Any) -> None:
    print("Compared with --compare (first -> second):", file=out)
    for diff in compare(first, second):
        print(
            f"  {diff.key}: violating nodes {diff.nodes[0]} -> {diff.nodes[1]}, "
            f"node-hours {_hours(diff.violating_seconds[0])} -> "
            f"{_hours(diff.violating_seconds[1])}, "
            f"evictions {diff.evictions[0]} -> {diff.evictions[1]}, "
            f"filtered placements {diff.filtered[0]} -> {diff.filtered[1]}",
            file=out,
        )


def policy_documents(path: Path) -> list[dict[str, Any]]:
    """The policy documents under `path`, as written (for a scenario's `policies`), read as the
    components read them. One with a duplicate key never gets here: the command refused it
    (`tas.policies.files.load_policy_path`)."""
    documents: list[dict[str, Any]] = []
    for file in policy_files(path):
        for document in read_documents(file.read_text(encoding="utf-8")):
            body = document.body
            if isinstance(body, dict) and body.get("kind") == "TASPolicy":
                documents.append(body)
    return documents


def write_scenario(
    path: Path,
    history: History,
    policies: Sequence[dict[str, Any]],
    gauges: Sequence[MetricName],
) -> None:
    document = build_scenario(history, name=scenario_name(path), policies=policies, gauges=gauges)
    if not document["nodes"]:
        raise SetupError(
            "--scenario-out: no node has kube_node_status_allocatable in this window: "
            "is kube-state-metrics scraped?"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False, width=120))
    print(f"Wrote {path}: tas simulate {path}", file=sys.stderr)


def scenario_name(path: Path) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", path.stem.lower()).strip("-")[:63].strip("-")
    return name or "replayed"
