"""`tas replay`: what the policies would have done over a window of the cluster's own history.

Reads the policies' metrics and the pods (kube-state-metrics) from Prometheus with range
queries (`tas_replay.prometheus`), evaluates every policy at every step with the rule engine and
the breaker (`tas_replay.evaluate`), writes DIR/replay.json and prints a summary; PNG timelines
when matplotlib (the `[sim]` extra) is installed. `--compare` replays a second version of the
policies over the same history and prints the difference; `--scenario-out` writes the window
as a `tas simulate` scenario.

Runs on the base install. Bad input (a time, an empty or oversized window, a policy file with
errors, an unreachable Prometheus) is one line on stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from tas.adapters.metrics.prometheus import open_prometheus
from tas.durations import format_duration
from tas.metrics.config import load_metrics_config
from tas.metrics.errors import MetricFetchError, MetricSourceError
from tas.metrics.names import derived
from tas.metrics.refreshing import default_max_age
from tas.policies.files import load_policy_path
from tas.policies.model import TASPolicy
from tas.runtime.process import SetupError
from tas_cli.common import duration, share
from tas_cli.main import INSTALL_EXTRA
from tas_cli.validate import problem_lines
from tas_replay import timeline
from tas_replay.evaluate import Replay, replay_policies
from tas_replay.history import ReplayInputError, make_window, parse_time
from tas_replay.prometheus import read_history
from tas_replay.report import policy_documents, print_comparison, print_summary, write_scenario

#: `tas replay --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Replay policies over a window of Prometheus history: violating intervals, "
    "would-be evictions, filtered placements and breaker time per policy (DIR/replay.json, "
    "a summary, PNG timelines with matplotlib). --compare replays a second version; "
    "--scenario-out writes the window as a tas simulate scenario."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prometheus", required=True, metavar="URL", help="Prometheus base URL")
    parser.add_argument(
        "--start",
        default="-7d",
        metavar="T",
        help="RFC 3339, now, -7d, -36h, or Unix seconds (default -7d)",
    )
    parser.add_argument("--end", default="now", metavar="T", help="as --start (default now)")
    parser.add_argument(
        "--step", type=duration, default=30.0, metavar="DURATION", help="default 30s"
    )
    parser.add_argument(
        "--policies",
        required=True,
        type=Path,
        metavar="FILE|DIR",
        help="the TASPolicy files to replay: a YAML or JSON file (multi-document), or a "
        "directory of them",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="FILE|DIR",
        help="a second version of the policies: print what it changes",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("replay"),
        metavar="DIR",
        help="where replay.json and the PNG timelines are written (default replay/)",
    )
    parser.add_argument(
        "--scenario-out", type=Path, metavar="FILE", help="write the window as a scenario"
    )
    parser.add_argument(
        "--metric-max-age",
        type=duration,
        metavar="DURATION",
        help="older samples count as missing, as in the live components (default 30s)",
    )
    parser.add_argument(
        "--metrics-config",
        type=Path,
        metavar="FILE",
        help="PromQL overrides, node label, token and CA files (as the components')",
    )
    parser.add_argument(
        "--max-violating-node-share",
        dest="max_violating_share",
        type=share,
        default=0.5,
        metavar="SHARE",
        help="the circuit breaker's share, as the extender's flag of this name (default 0.5)",
    )
    parser.add_argument(
        "--max-violating-share",
        dest="max_violating_share",
        type=share,
        action=DeprecatedAlias,
        new_flag="--max-violating-node-share",
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--no-charts", action="store_true", help="skip the PNG timelines")


def run(args: argparse.Namespace) -> int:
    now = time.time()
    try:
        window = make_window(
            parse_time(args.start, now=now), parse_time(args.end, now=now), args.step
        )
    except ReplayInputError as error:
        raise SetupError(str(error)) from error
    policies = _load(args.policies, "--policies")
    other = _load(args.compare, "--compare") if args.compare is not None else ()
    max_age = args.metric_max_age if args.metric_max_age is not None else default_max_age(2.0)
    metrics = {
        r.metricname for p in (*policies, *other) for s in p.strategies.values() for r in s.rules
    }
    try:
        config = load_metrics_config(args.metrics_config)
        client = open_prometheus(args.prometheus, config=config)
    except MetricSourceError as error:
        raise SetupError(str(error)) from error
    print(
        f"Reading {window.count:,} steps of {format_duration(window.step)} "
        f"({len(metrics)} metrics, pods) from {args.prometheus} ...",
        file=sys.stderr,
    )
    try:
        history = read_history(
            client,
            sorted(metrics, key=str),
            window,
            max_age=max_age,
            promql=config.promql,
            node_label=config.node_label,
            rate_window=config.rate_window,
            scenario=args.scenario_out is not None,
        )
    except MetricFetchError as error:
        raise SetupError(f"cannot read the history from Prometheus: {error}") from error
    finally:
        client.close()
    if not any(history.metrics.get(m) for m in metrics):
        print(
            f"tas replay: warning: Prometheus has no values for {', '.join(sorted(metrics))} "
            "in this window: nothing can violate",
            file=sys.stderr,
        )
    replay = replay_policies(policies, history, max_share=args.max_violating_share)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "replay.json").write_text(json.dumps(replay.as_json(), indent=1) + "\n")
    print_summary(replay, sys.stdout)
    _charts(replay, args.out, skip=args.no_charts)
    if other:
        second = replay_policies(other, history, max_share=args.max_violating_share)
        (args.out / "replay-compare.json").write_text(json.dumps(second.as_json(), indent=1) + "\n")
        print_comparison(replay, second, sys.stdout)
    if args.scenario_out is not None:
        gauges = [m for m in metrics if derived(m) is None]
        write_scenario(args.scenario_out, history, policy_documents(args.policies), gauges)
    print(f"Wrote {args.out / 'replay.json'}", file=sys.stderr)
    return 0


class DeprecatedAlias(argparse.Action):
    """An old spelling of a flag, hidden from `--help`: it still works, and says on stderr
    which flag to use instead."""

    def __init__(self, *args: Any, new_flag: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.new_flag = new_flag

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(
            f"tas replay: {option_string} is deprecated: use {self.new_flag}",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, values)


def _load(path: Path, flag: str) -> tuple[TASPolicy, ...]:
    result = load_policy_path(path)
    if result.problems:
        # One problem a line, as `tas validate` prints them.
        lines = "\n".join(problem_lines(result.problems))
        raise SetupError(f"{flag} {path} has errors:\n{lines}")
    if not result.policies:
        raise SetupError(f"{flag} {path}: no TASPolicy found")
    return result.policies


def _charts(replay: Replay, out: Path, *, skip: bool) -> None:
    if skip:
        return
    if not timeline.available():
        print(
            "tas replay: no PNG timelines: they need matplotlib, the [sim] extra ("
            + INSTALL_EXTRA.format(extra="sim")
            + "); replay.json is complete",
            file=sys.stderr,
        )
        return
    for key, result in sorted(replay.policies.items()):
        timeline.draw_timeline(key, result, replay.window, out / timeline.file_name(key))
