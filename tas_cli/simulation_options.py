"""The options `tas simulate` and `tas sweep` share: which contenders run, and where the runs go."""

from __future__ import annotations

import argparse


def add_contenders_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--contenders", default="", metavar="A,B", help="only these contenders (default: all)"
    )


def add_spreading_options(parser: argparse.ArgumentParser) -> None:
    """Where the runs go: local processes, or a Dask scheduler."""
    parser.add_argument(
        "--workers", type=int, default=None, metavar="W", help="processes (default: every core)"
    )
    parser.add_argument(
        "--dask",
        default="",
        metavar="ADDRESS",
        help="run on this Dask distributed scheduler (tcp://host:8786) instead of local processes",
    )
