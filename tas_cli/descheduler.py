"""`tas descheduler` (and `python -m descheduler`): the descheduler's command line.

Reads the flags into `DeschedulerCommandSettings`, the DeschedulerPolicy file (or a
KubeDescheduler, expanded: `descheduler.kubedescheduler`) and checks it, prints it with
`--print-policy`, and otherwise runs the process (`descheduler.runtime.run_descheduler`: the
caches, the policies, the metric view, the assembled descheduler on its schedule, leader
election, probes and shutdown). A policy with errors lists every one and exits 2.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from descheduler.config import ConfigError, parse_config
from descheduler.cycle import Mode
from descheduler.kubedescheduler import KubeDeschedulerError, expand
from descheduler.liveness import MISSED_CYCLES
from descheduler.runtime import run_descheduler
from tas.cluster.interface import ObservableCluster
from tas.cron import CronSchedule
from tas.runtime import startup
from tas_cli import common

#: What `--print-policy` shows for Prometheus's URL when `--metrics` does not give it: showing a
#: policy needs no Prometheus, running it does. It reads as what to do, and is no address a
#: client could reach by mistake.
PROMETHEUS_URL_PLACEHOLDER = "<Prometheus URL: give --metrics prometheus:URL>"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    policy = parser.add_mutually_exclusive_group(required=True)
    policy.add_argument(
        "--policy-config-file",
        type=Path,
        metavar="FILE",
        help="DeschedulerPolicy (descheduler/v1alpha2) file; see deploy/descheduler/",
    )
    policy.add_argument(
        "--kubedescheduler",
        type=Path,
        metavar="FILE",
        help="an OpenShift KubeDescheduler (operator.openshift.io/v1) file: its profiles, mode "
        "and interval, expanded to the equivalent policy (see --print-policy)",
    )
    parser.add_argument(
        "--print-policy",
        action="store_true",
        help="print the DeschedulerPolicy that would run (a KubeDescheduler expanded) and exit",
    )
    common.add_metric_arguments(
        parser, required=False, absent_means="without it only label-based violations are seen"
    )
    common.add_policy_arguments(parser)
    common.add_kubernetes_arguments(parser)
    parser.add_argument(
        "--mode",
        choices=[m.value for m in Mode],
        default=None,
        help="Predictive (default, or the KubeDescheduler's mode): report what would be "
        "evicted; Automatic: evict",
    )
    parser.add_argument(
        "--descheduling-interval",
        type=common.duration_or_zero,
        default=None,
        metavar="DURATION",
        help="run every DURATION (e.g. 60s, 10m, 1h30m); 0 with no cron: run once and exit "
        "(default 0, or the KubeDescheduler's deschedulingIntervalSeconds)",
    )
    parser.add_argument(
        "--descheduling-interval-cron-expression",
        type=common.cron_schedule,
        default=None,
        metavar="CRON",
        help="run on a 5-field cron schedule, e.g. '*/10 * * * *' (the interval wins if both)",
    )
    common.add_leader_arguments(parser, lease="tas-descheduler")
    parser.add_argument(
        "--allow-token-over-http",
        action="store_true",
        help="send the ServiceAccount token to an http:// Prometheus of the policy's "
        "metricsProviders (refused by default: it authenticates as the descheduler)",
    )
    common.add_sync_period_argument(parser)
    common.add_listen_argument(
        parser,
        flag="--listen-metrics",
        default=None,
        help="serve /metrics here (e.g. 127.0.0.1:9103), with /healthz failing once cycles stop "
        f"({MISSED_CYCLES} scheduled cycles without one ending) and /readyz once policies are "
        "loaded; off by default",
    )
    common.add_log_level_argument(parser)


#: `tas descheduler --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Evict pods whose node violates their TASPolicy, rebalance load on real "
    "telemetry, and run the classic descheduler strategies, all through the Eviction API."
)


@dataclass(frozen=True)
class DeschedulerCommandSettings:
    """Everything `tas descheduler` was told, read once from its command line."""

    #: Exactly one of the two is set (a required mutually exclusive group).
    policy_config_file: Path | None
    kubedescheduler: Path | None
    print_policy: bool
    kube: startup.KubeSettings
    metrics: startup.MetricsSettings
    policies: Path | None
    #: None: the KubeDescheduler's, else Predictive (`policy_document`).
    mode: Mode | None
    #: None: the KubeDescheduler's, else 0 (run once).
    descheduling_interval: float | None
    cron: CronSchedule | None
    listen_metrics: tuple[str, int] | None
    log_level: str
    allow_token_over_http: bool = False
    leader_elect: bool = False
    lease_name: str = "tas-descheduler"
    lease_namespace: str = "default"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> DeschedulerCommandSettings:
        return common.read_settings(
            cls,
            args,
            mode=Mode(args.mode) if args.mode is not None else None,
            cron=args.descheduling_interval_cron_expression,
        )

    @property
    def policy_source(self) -> Path:
        source = self.kubedescheduler or self.policy_config_file
        assert source is not None, "argparse requires one of the two"
        return source


def run(args: argparse.Namespace, *, cluster: ObservableCluster | None = None) -> int:
    """Run as the arguments say; `cluster` replaces the Kubernetes one (the in-memory world,
    tests)."""
    settings = DeschedulerCommandSettings.from_args(args)
    common.configure_logging(settings.log_level)
    try:
        document, mode, interval = policy_document(settings)
        config = parse_config(document)
    except (ConfigError, KubeDeschedulerError) as error:
        source = settings.policy_source
        for problem in error.problems:
            print(problem if str(source) in problem else f"{source}: {problem}", file=sys.stderr)
        if isinstance(error, KubeDeschedulerError) and "Prometheus" in str(error):
            print("hint: give Prometheus's URL with --metrics prometheus:URL", file=sys.stderr)
        return 2
    if settings.print_policy:
        text = yaml.safe_dump(document, sort_keys=False)
        sys.stdout.write(text)
        if PROMETHEUS_URL_PLACEHOLDER in text:
            print(
                f"tas descheduler: {settings.policy_source}: the profiles read Prometheus; its "
                "URL is left as a placeholder (give --metrics prometheus:URL to fill it in)",
                file=sys.stderr,
            )
        return 0
    return run_descheduler(settings, config, mode, interval, cluster)


def policy_document(settings: DeschedulerCommandSettings) -> tuple[Any, Mode, float]:
    """The DeschedulerPolicy document to run, its mode and its interval.

    A KubeDescheduler is expanded (`descheduler.kubedescheduler`): its mode and interval apply
    unless `--mode` or `--descheduling-interval` say otherwise.
    """
    mode, interval = Mode.PREDICTIVE, 0.0
    if settings.kubedescheduler is not None:
        raw = _read_yaml(settings.kubedescheduler)
        url = settings.metrics.prometheus_url
        if url is None and settings.print_policy:
            url = PROMETHEUS_URL_PLACEHOLDER
        expansion = expand(raw, prometheus_url=url)
        document: Any = expansion.policy
        mode, interval = Mode(expansion.mode), expansion.interval_seconds
    else:
        document = _read_yaml(settings.policy_source)
    if settings.mode is not None:
        mode = settings.mode
    if settings.descheduling_interval is not None:
        interval = settings.descheduling_interval
    return document, mode, interval


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError([f"{path}: cannot read: {error}"]) from error
    except yaml.YAMLError as error:
        raise ConfigError([f"{path}: not valid YAML: {error}"]) from error
