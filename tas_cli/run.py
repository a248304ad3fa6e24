"""`tas run` (`make run`): the health-metric demo on the embedded default, the loop closed.

Everything real except the cluster: the extender serves HTTP on 127.0.0.1, the policy
controller labels nodes and pods, the descheduler (Automatic) evicts, and a small scheduler
places pending pods by calling the extender with kube-scheduler's wire format. The cluster is
the in-memory one; node telemetry comes from textfiles that `tas set-health` rewrites.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from descheduler.config import ConfigError, load_config_file
from descheduler.cycle import Descheduler, Mode
from descheduler.metrics import DeschedulerMetrics
from embedded.cluster import InMemoryCluster
from embedded.demo import HEALTH_SERIES, NODES, build_demo_cluster, write_start_metrics
from embedded.extender_client import HttpExtender
from embedded.scheduler import EmbeddedScheduler
from extender.app import create_app
from extender.server import ExtenderServer
from extender.settings import ExtenderSettings
from policy_controller.metrics import ControllerMetrics
from policy_controller.reconciler import Reconciler
from tas.clock import SystemClock
from tas.metrics import MetricSourceError, open_metric_view
from tas.metrics.textformat import parse_text
from tas.policies.files import PolicyFileWatcher
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.vocabulary import POD_VIOLATION_LABEL
from tas_cli import common

log = logging.getLogger("tas.run")

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "deploy" / "health-metric-demo"


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "run",
        help="the health-metric demo on the embedded cluster (no Kubernetes, no Prometheus)",
        description="Run the extender, the policy controller, the descheduler and a small "
        "scheduler against an in-memory cluster whose node metrics are textfiles.",
    )
    parser.add_argument("--dir", type=Path, default=Path("run"), help="state directory (run/)")
    parser.add_argument(
        "--listen", type=common.listen_address, default=("127.0.0.1", 9001), metavar="HOST:PORT"
    )
    parser.add_argument("--policies", type=Path, default=DEMO / "health-policy.yaml")
    parser.add_argument(
        "--descheduler-config", type=Path, default=DEMO / "descheduler-demo.yaml", metavar="FILE"
    )
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.AUTOMATIC.value)
    parser.add_argument(
        "--sync-period", type=common.duration, default=1.0, metavar="DURATION", help="default 1s"
    )
    parser.add_argument(
        "--descheduling-interval",
        type=common.duration,
        default=5.0,
        metavar="DURATION",
        help="default 5s",
    )
    parser.add_argument(
        "--duration",
        type=common.duration_or_zero,
        default=0.0,
        metavar="DURATION",
        help="stop after this long (default 0: never)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    common.configure_logging("info")
    for noisy in ("httpx", "uvicorn.error"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    metrics_dir: Path = args.dir / "metrics"
    if not args.policies.exists():
        print(f"tas run: no policy at {args.policies} (give --policies FILE)", file=sys.stderr)
        return 2
    host, port = args.listen
    try:
        deschedule_config = load_config_file(args.descheduler_config)
    except ConfigError as error:
        print(f"tas run: {args.descheduler_config}: {error}", file=sys.stderr)
        return 2
    write_start_metrics(metrics_dir)

    registry = CollectorRegistry()
    try:
        view = open_metric_view(
            f"textfile:{metrics_dir}", sync_period=args.sync_period, registry=registry
        )
    except MetricSourceError as error:
        print(f"tas run: {error}", file=sys.stderr)
        return 2
    store = PolicyStore()
    watcher = PolicyFileWatcher(args.policies, store)
    cluster = build_demo_cluster()
    descheduler = Descheduler(
        config=deschedule_config,
        cluster=cluster,
        metric_view=view,
        policies=lambda: store.snapshot().policies,
        mode=Mode(args.mode),
        clock=SystemClock(),
        metrics=DeschedulerMetrics(registry=CollectorRegistry()),
    )
    want_policy_metrics(store, view, extra=descheduler.wanted_metrics())
    watcher.poll()
    view.refresh_once()
    view.start()
    app = create_app(store=store, metrics=view, settings=ExtenderSettings(), registry=registry)
    try:
        server = ExtenderServer(app, host=host, port=port, log_level="warning")
    except OSError as error:
        print(f"tas run: cannot listen on {host}:{port}: {error}", file=sys.stderr)
        return 2
    server.start()
    reconciler = Reconciler(
        cluster=cluster,
        policies=store,
        metric_view=view,
        metrics=ControllerMetrics(CollectorRegistry()),
    )
    scheduler = EmbeddedScheduler(cluster, extender=HttpExtender(server.url))
    print_banner(server.url, metrics_dir)
    stop = threading.Event()
    started = time.monotonic()
    next_deschedule = started + args.descheduling_interval
    shown = ""
    try:
        while not stop.is_set():
            watcher.poll()
            scheduler.schedule_pending()
            reconciler.reconcile()
            if time.monotonic() >= next_deschedule:
                descheduler.run_cycle()
                next_deschedule = time.monotonic() + args.descheduling_interval
            state = describe_state(cluster, metrics_dir)
            if state != shown:
                print(state, flush=True)
                shown = state
            if args.duration and time.monotonic() - started >= args.duration:
                break
            stop.wait(args.sync_period)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        view.stop()
    return 0


def print_banner(url: str, metrics_dir: Path) -> None:
    request = DEMO / "filter-request.json"
    tas = shlex.quote(str(Path(sys.argv[0]))) if sys.argv[0].endswith("tas") else "tas"
    print(
        f"""
Health-metric demo: extender at {url}, policy demo-policy (namespace health-metric-demo).
Node metrics are textfiles in {metrics_dir}/ (node-a=0, node-b=1, node-c=0).

Ask the extender, as kube-scheduler would:
  curl -s -X POST -H 'Content-Type: application/json' \\
       --data @{shlex.quote(str(request))} {url}/scheduler/filter
  curl -s -X POST -H 'Content-Type: application/json' \\
       --data @{shlex.quote(str(request))} {url}/scheduler/prioritize
  curl -s {url}/debug/decisions

Make node-c unhealthy and watch the loop close (label, eviction, rescheduling):
  {tas} set-health node-c 2 --dir {shlex.quote(str(metrics_dir))}
and heal it again:
  {tas} set-health node-c 0 --dir {shlex.quote(str(metrics_dir))}
Ctrl-C stops the demo.
""",
        flush=True,
    )


def describe_state(cluster: InMemoryCluster, metrics_dir: Path) -> str:
    """One line per node: health value, our labels, and the pods on it."""
    lines = ["-- cluster state --"]
    pods = cluster.list_pods()
    for node in cluster.list_nodes():
        health = _health(metrics_dir / f"{node.name}.prom")
        labels = [f"{k}={v}" for k, v in sorted(node.labels.items()) if v == "violating"]
        on_node = [
            p.name
            + (
                f" [{POD_VIOLATION_LABEL}={p.labels[POD_VIOLATION_LABEL]}]"
                if POD_VIOLATION_LABEL in p.labels
                else ""
            )
            for p in pods
            if p.node_name == node.name
        ]
        lines.append(
            f"{node.name}: health={health} labels={','.join(labels) or '-'} "
            f"pods={', '.join(on_node) or '-'}"
        )
    pending = [p.name for p in pods if p.node_name is None]
    if pending:
        lines.append(f"pending: {', '.join(pending)}")
    return "\n".join(lines)


def _health(path: Path) -> str:
    try:
        samples = parse_text(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "?"
    for sample in samples:
        if sample.name == HEALTH_SERIES:
            return f"{sample.value:g}"
    return "?"


__all__ = ["NODES", "add_parser", "run"]
