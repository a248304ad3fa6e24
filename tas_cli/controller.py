"""`tas controller` (and `python -m policy_controller`): the policy controller's command line.

Parses and reads the flags (`ControllerCommandSettings`) and runs the process
(`policy_controller.runtime.run_controller`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from policy_controller.runtime import run_controller
from policy_controller.settings import ControllerSettings
from tas.breaker import DEFAULT_MAX_SHARE
from tas.runtime import startup
from tas_cli import common


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_metric_arguments(parser, required=True)
    common.add_policy_arguments(parser)
    common.add_kubernetes_arguments(parser)
    common.add_sync_period_argument(parser)
    parser.add_argument(
        "--status-refresh-cycles",
        type=common.count,
        default=30,
        metavar="N",
        help="rewrite an unchanged policy status every N cycles (0: only on change)",
    )
    parser.add_argument(
        "--max-violating-node-share",
        type=common.share,
        default=DEFAULT_MAX_SHARE,
        metavar="SHARE",
        help="label no node newly violating while more than this share of the nodes with "
        "values violate a policy's rule at once: a broken metric, not broken nodes (default "
        "0.5; 1 never holds back)",
    )
    common.add_leader_arguments(parser, lease="tas-policy-controller")
    common.add_listen_argument(
        parser,
        default=("127.0.0.1", 8081),
        help="/healthz, /readyz and /metrics (default 127.0.0.1:8081)",
    )
    common.add_log_level_argument(parser)


#: `tas controller --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Every sync period, evaluate every policy's deschedule and labeling "
    "strategies, patch only the labels that differ, and keep each policy's status current."
)


@dataclass(frozen=True)
class ControllerCommandSettings:
    """Everything `tas controller` was told, read once from its command line."""

    kube: startup.KubeSettings
    metrics: startup.MetricsSettings
    policies: Path | None
    #: What the reconciler is built with (`policy_controller.settings`).
    controller: ControllerSettings
    leader_elect: bool
    lease_name: str
    lease_namespace: str
    listen: tuple[str, int]
    log_level: str
    tas_flag_notices: tuple[str, ...] = ()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ControllerCommandSettings:
        return common.read_settings(
            cls,
            args,
            controller=ControllerSettings(
                status_refresh_cycles=args.status_refresh_cycles,
                max_violating_node_share=args.max_violating_node_share,
            ),
        )


run = common.component_command(ControllerCommandSettings.from_args, run_controller)
