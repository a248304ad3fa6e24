"""`tas set-health NODE VALUE`: set a node's `health_metric` in the textfile metrics directory.

The quickest way to watch the health-metric demo react: the embedded default reads
`run/metrics/<node>.prom`, and a policy rule on `health_metric` reads `node_health_metric`.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from tas.metrics.textfile import write_node_metric

SERIES = "node_health_metric"


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "set-health",
        help="set a node's health_metric in the textfile metrics directory",
        description=f"Write `{SERIES} VALUE` into DIR/NODE.prom, keeping its other series.",
    )
    parser.add_argument("node", metavar="NODE")
    parser.add_argument("value", metavar="VALUE", help="a finite number, e.g. 0, 1, 2")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path("run/metrics"),
        help="the textfile metrics directory (default: run/metrics)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        value = float(args.value)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        print(f"set-health: VALUE must be a finite number, not {args.value!r}", file=sys.stderr)
        return 2
    try:
        write_node_metric(args.dir, args.node, SERIES, value)
    except ValueError as error:
        print(f"set-health: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"set-health: cannot write {args.dir}: {error}", file=sys.stderr)
        return 1
    print(f"{args.node}: {SERIES} {args.value} ({args.dir / (args.node + '.prom')})")
    return 0
