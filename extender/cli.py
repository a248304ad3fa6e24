"""The extender's command line, shared by `tas extender` and `python -m extender`.

`add_arguments` fills a parser and `run` wires the parts: the policy store fed by a file
watcher, the metric view refreshed in the background, the application and its server.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from prometheus_client import CollectorRegistry

from extender.app import create_app
from extender.server import ExtenderServer, parse_listen, tune_allocator
from extender.settings import DEFAULT_MAX_BODY_BYTES, ExtenderSettings
from extender.tls import TLSConfigError, server_ssl_context, tls_files
from tas.cli_args import add_metric_source_arguments, parse_duration
from tas.metrics import MetricSourceError, open_metric_view
from tas.policies.files import PolicyFileWatcher
from tas.policies.store import PolicyStore
from tas.rules import ScoreMode

log = logging.getLogger(__name__)

#: How long the cleanups after the server has stopped may take in all (the server's own
#: graceful stop is bounded by `ExtenderServer`): together well under 2 s from SIGTERM to exit.
CLEANUP_SECONDS = 0.5
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policies",
        type=Path,
        metavar="PATH",
        help="a TASPolicy file or a directory of *.yaml/*.yml/*.json files (reloaded on "
        "change); default: the TASPolicy objects in the cluster",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="FILE",
        help="kubeconfig for reading TASPolicy objects (default: in-cluster config)",
    )
    add_metric_source_arguments(parser, required=True)
    parser.add_argument("--listen", default="0.0.0.0:9001", metavar="HOST:PORT")
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
    parser.add_argument("--sync-period", type=parse_duration, default=2.0, metavar="DURATION")
    parser.add_argument(
        "--metric-max-age",
        type=parse_duration,
        default=None,
        metavar="DURATION",
        help="values older than this count as missing (default: 5 sync periods, at least 30s)",
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
        "--max-body-bytes", type=_positive_int, default=DEFAULT_MAX_BODY_BYTES, metavar="N"
    )
    parser.add_argument("--decision-log-size", type=_positive_int, default=200, metavar="N")
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        host, port = parse_listen(args.listen)
        files = tls_files(
            cert=args.cert, key=args.key, cacert=args.cacert, insecure_http=args.insecure_http
        )
        ssl_context = server_ssl_context(files) if files is not None else None
    except (ValueError, TLSConfigError) as error:
        print(f"tas extender: {error}", file=sys.stderr)
        return 2
    if ssl_context is None:
        log.warning("Serving plain HTTP (--insecure-http): for development only")

    registry = CollectorRegistry()
    try:
        view = open_metric_view(
            args.metrics,
            sync_period=args.sync_period,
            max_age=args.metric_max_age,
            config_file=args.metrics_config,
            registry=registry,
            clock=time.time,
        )
    except MetricSourceError as error:
        print(f"tas extender: --metrics {args.metrics!r}: {error}", file=sys.stderr)
        return 2

    store = PolicyStore()
    store.subscribe(lambda snapshot: view.set_wanted(snapshot.metric_names))
    stop = threading.Event()
    # Each takes the seconds it may use.
    cleanups: list[Callable[[float], object]] = [view.stop]
    if args.policies is not None:
        watcher = PolicyFileWatcher(args.policies, store)
        watcher.poll()
        threading.Thread(
            target=watcher.run, args=(stop, 1.0), name="policy-files", daemon=True
        ).start()
        source = str(args.policies)
    else:
        try:
            cleanups.append(_follow_cluster_policies(args.kubeconfig, store, stop))
        except Exception as error:  # config problems: one clear line, not a traceback
            print(f"tas extender: cannot read policies from the cluster: {error}", file=sys.stderr)
            return 2
        source = "the cluster's TASPolicy objects"
    settings = ExtenderSettings(
        score_mode=args.score_mode,
        tas_compat_failed_nodes=args.tas_compat_failed_nodes,
        max_body_bytes=args.max_body_bytes,
        decision_log_size=args.decision_log_size,
    )
    app = create_app(store=store, metrics=view, settings=settings, registry=registry)
    tune_allocator(largest_body=args.max_body_bytes)
    try:
        server = ExtenderServer(
            app, host=host, port=port, ssl_context=ssl_context, log_level=args.log_level
        )
    except OSError as error:
        print(f"tas extender: cannot listen on {args.listen}: {error}", file=sys.stderr)
        return 2

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()
        server.request_stop()  # also when uvicorn has not yet taken the signals over

    # uvicorn takes SIGINT and SIGTERM while it serves, then gives them back to these handlers
    # and raises the signal again: without them, that second delivery would kill the process
    # (SIGTERM) or raise KeyboardInterrupt (SIGINT) before the cleanups, and exit non-zero.
    previous = (
        {signum: signal.signal(signum, request_stop) for signum in _STOP_SIGNALS}
        if threading.current_thread() is threading.main_thread()
        else {}
    )
    view.start()
    log.info("Extender serving on %s (policies from %s)", server.url, source)
    try:
        server.run()
    finally:
        stop.set()
        deadline = time.monotonic() + CLEANUP_SECONDS
        for cleanup in reversed(cleanups):
            cleanup(max(0.0, deadline - time.monotonic()))
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    log.info("Extender stopped")
    return 0


def _follow_cluster_policies(
    kubeconfig: Path | None, store: PolicyStore, stop: threading.Event
) -> Callable[[float], None]:
    """Keep `store` equal to the cluster's TASPolicy objects; returns the cleanup.

    Only the policy cache is kept: the extender needs nothing else (and its RBAC allows
    nothing else). /readyz stays false until the first complete list has loaded.
    """
    from tas.cluster.interface import ResourceKind
    from tas.cluster.kubernetes import kubernetes_cluster
    from tas.policies.cluster import ClusterPolicyLoader

    cluster = kubernetes_cluster(kubeconfig, watched=[ResourceKind.POLICY])
    cluster.start()

    def follow() -> None:
        while not stop.is_set() and not cluster.wait_synced(0.2):
            pass
        if stop.is_set():
            return
        loader = ClusterPolicyLoader(cluster, store)
        loader.attach(cluster)
        loader.run(stop, 10.0)  # polling as a safety net for a missed notification

    threading.Thread(target=follow, name="policy-cluster", daemon=True).start()
    return cluster.stop  # aborts the watch stream


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m extender",
        description="The telemetry-aware scheduler extender (kube-scheduler filter/prioritize).",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))
