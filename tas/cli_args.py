"""Command-line pieces every component shares: durations and the metric source options.

One definition, so `--sync-period 2s` or `--metrics textfile:DIR` means the same in the
extender, the policy controller and the descheduler.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}

METRICS_HELP = (
    "metric source: prometheus:URL, custom-metrics, node-exporter:NODE=URL,..., textfile:DIR"
)


def parse_duration(text: str) -> float:
    """`2s`, `500ms`, `1m`, `1h` or a bare number of seconds; must be positive."""
    match = _DURATION.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 2s, 500ms or 1m")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration must be positive")
    return seconds


def add_metric_source_arguments(
    parser: argparse.ArgumentParser, *, required: bool = True, absent_means: str = ""
) -> None:
    """`--metrics SOURCE` and `--metrics-config FILE` (see `tas.metrics.open_metric_view`)."""
    help_text = f"{METRICS_HELP} ({absent_means})" if absent_means else METRICS_HELP
    parser.add_argument("--metrics", required=required, metavar="SOURCE", help=help_text)
    parser.add_argument(
        "--metrics-config",
        type=Path,
        metavar="FILE",
        help="metric source config: PromQL overrides, node label, token and CA files",
    )
