"""`tas extender` (and `python -m extender`): the scheduler extender's command line.

Reads the flags into `ExtenderCommandSettings`, checks what cannot work together (the
estimate window's limits, TAS's `--cacert` default that does not exist) and runs the process
(`extender.runtime.serve_extender`: the policy store, herd control, the metric view, the
application and its server with TLS).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

from extender.runtime import PlacementSettings, serve_extender
from extender.settings import DEFAULT_MAX_BODY_BYTES, ExtenderSettings
from tas.breaker import DEFAULT_MAX_SHARE
from tas.quantity import parse_quantity
from tas.rules import ScoreMode
from tas.runtime import process, startup
from tas.tas_flags import TAS_DEFAULT_CACERT
from tas.types import MetricName
from tas_cli import common
from tas_herd.placements import DEFAULT_RESOURCES, DEFAULT_WINDOW

#: `--node-capacity`'s default.
DEFAULT_CAPACITY = {"cpu": 16.0, "memory": 64.0 * 1024**3}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_policy_arguments(parser)
    common.add_kubernetes_arguments(parser)
    common.add_metric_arguments(parser, required=True)
    common.add_sync_period_argument(parser)
    common.add_listen_argument(
        parser,
        default=("0.0.0.0", 9001),
        help="/scheduler/filter, /scheduler/prioritize, the probes and /metrics (default "
        "0.0.0.0:9001)",
    )
    parser.add_argument(
        "--insecure-http", action="store_true", help="serve plain HTTP (development only)"
    )
    parser.add_argument("--cert", type=Path, metavar="FILE", help="server certificate (PEM)")
    parser.add_argument("--key", type=Path, metavar="FILE", help="server private key (PEM)")
    parser.add_argument(
        "--cacert",
        type=Path,
        metavar="FILE",
        help="CA bundle (PEM): require client certificates signed by it (mTLS)",
    )
    parser.add_argument(
        "--client-cert-names",
        type=lambda text: tuple(n.strip() for n in text.split(",") if n.strip()),
        default=(),
        metavar="NAME[,NAME...]",
        help="accept /scheduler/filter and /scheduler/prioritize only from client certificates "
        "with one of these common names (kube-scheduler's; scripts/gen-certs.sh makes "
        "tas-kube-scheduler); needs --cacert. Default: any certificate the CA signed",
    )
    parser.add_argument(
        "--score-mode",
        type=ScoreMode,
        choices=list(ScoreMode),
        default=ScoreMode.PROPORTIONAL,
        help="scheduleonmetric scores: proportional to the value, or TAS's rank (10, 9, ...)",
    )
    parser.add_argument(
        "--tas-compat-failed-nodes",
        action="store_true",
        help="report violating nodes in FailedNodes, as TAS does, instead of "
        "FailedAndUnresolvableNodes",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=common.positive_int,
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="N",
    )
    parser.add_argument("--decision-log-size", type=common.positive_int, default=200, metavar="N")
    parser.add_argument(
        "--max-violating-node-share",
        type=common.share,
        default=DEFAULT_MAX_SHARE,
        metavar="SHARE",
        help="fail open (keep every node) when dontschedule would remove them all and more "
        "than this share of nodes violate: a broken metric, not broken nodes (default 0.5; "
        "1 never fails open)",
    )
    placements = parser.add_argument_group(
        "recent placements (herd control)",
        "Pods bound since a node's samples add their estimated load to its values until a "
        "sample covers them (docs/recent-placements.md).",
    )
    placements.add_argument(
        "--recent-placements",
        choices=["on", "off"],
        default=None,
        help="watch pods and add recent placements' estimates when scoring (default: on when "
        "policies come from the cluster, off with --policies)",
    )
    placements.add_argument(
        "--estimate-window",
        type=common.duration,
        default=DEFAULT_WINDOW,
        metavar="DURATION",
        help="a pod counts until its node's sample time is later than its bind time plus this "
        "window: the metrics' averaging window plus pod start-up and scrape delay. Where it "
        "starts (default 90s); it then follows the observed start-up and metric lag within "
        "--estimate-window-min and --estimate-window-max",
    )
    placements.add_argument(
        "--estimate-window-min",
        type=common.duration,
        default=None,
        metavar="DURATION",
        help="the shortest the window may follow the observed delays down to (default: "
        "--estimate-window, so it only grows); at most --estimate-window",
    )
    placements.add_argument(
        "--estimate-window-max",
        type=common.duration,
        default=None,
        metavar="DURATION",
        help="the longest the window may follow the observed delays up to (default 5m; "
        "--estimate-window's value for a fixed window); at least --estimate-window",
    )
    placements.add_argument(
        "--estimate-metric",
        type=_metric_resource,
        action="append",
        metavar="METRIC=RESOURCE",
        help="a metric that gets estimates, and the pod resource whose share of the node's "
        "capacity it rises by (repeat; default: cpu_utilization=cpu, cpu_pressure=cpu, "
        "memory_utilization=memory)",
    )
    placements.add_argument(
        "--node-capacity",
        type=_resource_quantity,
        action="append",
        metavar="RESOURCE=QUANTITY",
        help="the capacity estimates are shares of where a node's allocatable (read from its "
        "Node) does not say (repeat; default cpu=16, memory=64Gi)",
    )
    placements.add_argument(
        "--learn-pressure-curve",
        choices=["on", "off"],
        default="on",
        help="a pressure estimate follows the node's own utilization-to-PSI curve, learned "
        "from its samples (docs/recent-placements.md); off: the shared model for every node "
        "(default on)",
    )
    placements.add_argument(
        "--estimate-percentile",
        type=_percentile,
        default=None,
        metavar="P",
        help="estimate a new pod at this percentile of its workload's per-pod usage instead "
        "of their mean (e.g. 90 for workloads mixing busy and idle replicas; default: the "
        "mean); a pod's own usage replaces it once measured",
    )
    placements.add_argument(
        "--filter-on-estimates",
        action="append",
        default=[],
        metavar="POLICY",
        help="also add estimates before this policy's dontschedule rules (name or "
        "namespace/name; repeat); scheduleonmetric always sees them",
    )
    common.add_log_level_argument(parser)


def _metric_resource(text: str) -> tuple[MetricName, str]:
    metric, sep, resource = text.partition("=")
    if not sep or not metric.strip() or not resource.strip():
        raise argparse.ArgumentTypeError(f"expected METRIC=RESOURCE, not {text!r}")
    return MetricName(metric.strip()), resource.strip()


def _percentile(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"expected a percentile in (0, 100], not {text!r}")
    return value


def _resource_quantity(text: str) -> tuple[str, float]:
    resource, sep, amount = text.partition("=")
    try:
        value = parse_quantity(amount.strip()) if sep else -1.0
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: {error}") from error
    if not resource.strip() or not value > 0:
        raise argparse.ArgumentTypeError(f"expected RESOURCE=QUANTITY (positive), not {text!r}")
    return resource.strip(), value


def placement_settings(args: argparse.Namespace) -> PlacementSettings:
    """The recent-placements group of flags, defaults applied."""
    enabled = args.recent_placements
    if enabled is None:
        enabled = "off" if args.policies is not None else "on"
    capacity = dict(DEFAULT_CAPACITY)
    capacity.update(dict(args.node_capacity or []))
    return PlacementSettings(
        enabled=enabled == "on",
        window=args.estimate_window,
        resources=dict(args.estimate_metric) if args.estimate_metric else DEFAULT_RESOURCES,
        default_capacity=capacity,
        usage_percentile=args.estimate_percentile,
        learn_curves=args.learn_pressure_curve == "on",
        min_window=args.estimate_window_min,
        max_window=args.estimate_window_max,
    )


@dataclass(frozen=True)
class ExtenderCommandSettings:
    """Everything `tas extender` was told, read once from its command line."""

    kube: startup.KubeSettings
    metrics: startup.MetricsSettings
    policies: Path | None
    listen: tuple[str, int]
    insecure_http: bool
    cert: Path | None
    key: Path | None
    cacert: Path | None
    client_cert_names: tuple[str, ...]
    #: What the application is built with (`extender.settings`).
    app: ExtenderSettings
    placements: PlacementSettings
    log_level: str
    tas_flag_notices: tuple[str, ...] = ()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ExtenderCommandSettings:
        return common.read_settings(
            cls,
            args,
            app=ExtenderSettings(
                score_mode=args.score_mode,
                tas_compat_failed_nodes=args.tas_compat_failed_nodes,
                max_body_bytes=args.max_body_bytes,
                decision_log_size=args.decision_log_size,
                filter_estimate_policies=frozenset(args.filter_on_estimates),
                max_violating_node_share=args.max_violating_node_share,
            ),
            placements=placement_settings(args),
        )


def check_settings(settings: ExtenderCommandSettings) -> None:
    """What the command line says that cannot work, before anything starts."""
    problem = settings.placements.window_problem()
    if problem is not None:
        raise process.SetupError(problem)
    if (
        settings.cacert == Path(TAS_DEFAULT_CACERT)
        and not settings.insecure_http
        and not settings.cacert.is_file()
    ):
        # Kept from a TAS command line without --cacert (tas.tas_flags): serving without
        # client authentication instead would silently drop the guarantee TAS gave.
        raise process.SetupError(
            f"--cacert {TAS_DEFAULT_CACERT} (TAS's default, kept because TAS always required "
            "client certificates) does not exist: pass --cacert FILE, the CA that signed "
            "kube-scheduler's client certificate"
        )


#: `tas extender --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Serve POST /scheduler/filter and /scheduler/prioritize for kube-scheduler, "
    "with /healthz, /readyz, /metrics and /debug/decisions."
)


def _serve(settings: ExtenderCommandSettings) -> int:
    check_settings(settings)
    return serve_extender(settings)


run = common.component_command(ExtenderCommandSettings.from_args, _serve)
