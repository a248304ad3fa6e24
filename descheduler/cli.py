"""`tas descheduler` (and `python -m descheduler`): wire a cluster, a metric view, policies and
the policy file into a `Descheduler`, and run it on its schedule.

The Kubernetes adapter and the metric sources are imported only here and only when used, so the
library parts stay importable (and testable) without them.
"""

from __future__ import annotations

import argparse
import functools
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from descheduler.clock import SystemClock
from descheduler.config import ConfigError, load_config_file
from descheduler.cycle import Descheduler, Mode, PolicySource
from descheduler.metrics import DeschedulerMetrics
from descheduler.schedule import CronSchedule, ScheduleError, parse_duration, run_schedule
from tas.cli_args import add_metric_source_arguments
from tas.cluster.interface import Cluster, ResourceKind
from tas.metrics.static import StaticMetricView
from tas.metrics.view import MetricView
from tas.policies.files import PolicyFileWatcher
from tas.policies.store import PolicyStore
from tas.policy import PolicyValidationError, TASPolicy, parse_policy
from tas.types import MetricName, PolicyKey

log = logging.getLogger("descheduler")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy-config-file",
        type=Path,
        required=True,
        metavar="FILE",
        help="DeschedulerPolicy (descheduler/v1alpha2) file; see deploy/descheduler/",
    )
    add_metric_source_arguments(
        parser, required=False, absent_means="without it only label-based violations are seen"
    )
    parser.add_argument(
        "--policies",
        type=Path,
        metavar="PATH",
        help="TASPolicy file or directory (default: the TASPolicy objects in the cluster)",
    )
    parser.add_argument("--kubeconfig", type=Path, metavar="FILE", help="kubeconfig file")
    parser.add_argument(
        "--mode",
        choices=[m.value for m in Mode],
        default=Mode.PREDICTIVE.value,
        help="Predictive (default): report what would be evicted; Automatic: evict",
    )
    parser.add_argument(
        "--descheduling-interval",
        default="0",
        metavar="DURATION",
        help="run every DURATION (e.g. 60s, 10m); 0 with no cron: run once and exit",
    )
    parser.add_argument(
        "--descheduling-interval-cron-expression",
        default="",
        metavar="CRON",
        help="run on a 5-field cron schedule, e.g. '*/10 * * * *' (the interval wins if both)",
    )
    parser.add_argument("--sync-period", default="2s", metavar="DURATION")
    parser.add_argument("--metric-max-age", default="", metavar="DURATION")
    parser.add_argument(
        "--listen-metrics",
        default="",
        metavar="HOST:PORT",
        help="serve Prometheus metrics here (e.g. 127.0.0.1:9103); off by default",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING"])


#: How long startup waits for the cluster caches to fill before giving up.
SYNC_TIMEOUT = 60.0
#: How long a cycle under way may go on after SIGTERM. With the rest of the shutdown (aborting
#: the watch streams) it stays well inside 2 s: a rollout or a CronJob should not wait on us,
#: and Kubernetes kills a pod 30 s after SIGTERM anyway.
CYCLE_GRACE_SECONDS = 0.5


def _open_cluster(
    kubeconfig: Path | None, cleanups: list[Callable[[], Any]], stop: threading.Event
) -> Cluster:
    # The official client is heavy: import it only when a real cluster is wanted.
    from tas.cluster.kubernetes import kubernetes_cluster

    # Every cache the descheduler reads, named: a new cache must come with its RBAC grant.
    cluster = kubernetes_cluster(
        kubeconfig,
        watched=[ResourceKind.NODE, ResourceKind.POD, ResourceKind.PDB, ResourceKind.POLICY],
    )
    cluster.start()
    # Aborting the watches takes milliseconds; the bound is for a dead API server, and keeps
    # it with `CYCLE_GRACE_SECONDS` under 2 s.
    cleanups.append(functools.partial(cluster.stop, timeout=0.5))
    deadline = time.monotonic() + SYNC_TIMEOUT
    while not cluster.wait_synced(0.2):  # in short waits, so that a stop is seen at once
        if stop.is_set():
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the cluster caches did not fill within {SYNC_TIMEOUT:.0f}s")
    return cluster


def _run_until_stopped(schedule: Callable[[], object], stop: threading.Event) -> None:
    """Run `schedule` in a worker thread until it returns or `stop` is set.

    The calling thread only waits, so that a SIGTERM is answered at once even in the middle
    of a cycle: the cycle gets `CYCLE_GRACE_SECONDS` to finish and is then left to the
    process exit, which is no worse than the SIGKILL that would follow (each eviction is one
    API call: none is left half done).
    """
    failures: list[Exception] = []

    def work() -> None:
        try:
            schedule()
        except Exception as error:  # reported by the caller, as if raised there
            failures.append(error)
        finally:
            stop.set()  # a run-once schedule is done: shut down now

    worker = threading.Thread(target=work, name="descheduler", daemon=True)
    worker.start()
    stop.wait()
    worker.join(CYCLE_GRACE_SECONDS)
    if worker.is_alive():
        log.warning("Stopped in the middle of a descheduling cycle")
    if failures:
        raise failures[0]


def _cluster_policies(cluster: Cluster) -> PolicySource:
    reported: set[str] = set()

    def read() -> Mapping[PolicyKey, TASPolicy]:
        found: dict[PolicyKey, TASPolicy] = {}
        for document in cluster.list_policy_documents():
            try:
                policy = parse_policy(document.body, source=str(document.key))
            except PolicyValidationError as error:
                if str(error) not in reported:
                    reported.add(str(error))
                    log.error("Invalid policy skipped: %s", error)
                continue
            found[policy.key] = policy
        return found

    return read


def _policy_metric_names(policies: Mapping[PolicyKey, TASPolicy]) -> set[MetricName]:
    return {
        rule.metricname
        for policy in policies.values()
        for strategy in policy.strategies.values()
        for rule in strategy.rules
    }


def _serve_metrics(address: str, registry: CollectorRegistry) -> None:
    from prometheus_client import start_http_server

    host, _, port = address.rpartition(":")
    start_http_server(int(port), addr=host or "127.0.0.1", registry=registry)


def run(args: argparse.Namespace, *, cluster: Cluster | None = None) -> int:
    """Run as the arguments say; `cluster` replaces the Kubernetes one (embedded mode, tests)."""
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        config = load_config_file(args.policy_config_file)
    except ConfigError as error:
        for problem in error.problems:
            print(problem, file=sys.stderr)
        return 2
    try:
        interval = parse_duration(args.descheduling_interval)
        cron_text = args.descheduling_interval_cron_expression.strip()
        cron = CronSchedule.parse(cron_text) if cron_text else None
        sync_period = parse_duration(args.sync_period)
        max_age = parse_duration(args.metric_max_age) if args.metric_max_age else None
    except ScheduleError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    registry = CollectorRegistry()
    stop = threading.Event()
    cleanups: list[Callable[[], Any]] = []
    try:
        # First of all, so that a SIGTERM while the caches fill is a clean stop too.
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                previous = signal.signal(signum, lambda *_: stop.set())
                cleanups.append(functools.partial(signal.signal, signum, previous))
        if cluster is None:
            cluster = _open_cluster(args.kubeconfig, cleanups, stop)
            if stop.is_set():
                return 0
        policies: PolicySource
        assert cluster is not None
        if args.policies is not None:
            store = PolicyStore()
            watcher = PolicyFileWatcher(args.policies, store)

            def from_files() -> Mapping[PolicyKey, TASPolicy]:
                watcher.poll()
                return store.snapshot().policies

            policies = from_files
        else:
            policies = _cluster_policies(cluster)
        view: MetricView
        refresh: Callable[[], None] = lambda: None  # noqa: E731
        if args.metrics:
            from tas.metrics import open_metric_view

            refreshing = open_metric_view(
                args.metrics,
                sync_period=sync_period,
                max_age=max_age,
                config_file=args.metrics_config,
                registry=registry,
            )
            cleanups.append(refreshing.stop)
            view, refresh = refreshing, refreshing.refresh_once
        else:
            log.warning("No --metrics source: only label-based TAS violations can be seen")
            view = StaticMetricView()
        descheduler = Descheduler(
            config=config,
            cluster=cluster,
            metric_view=view,
            policies=policies,
            mode=Mode(args.mode),
            clock=SystemClock(),
            metrics=DeschedulerMetrics(registry=registry),
        )
        if args.listen_metrics:
            _serve_metrics(args.listen_metrics, registry)

        def cycle() -> None:
            wanted = descheduler.wanted_metrics() | _policy_metric_names(policies())
            if wanted != set(getattr(view, "wanted", set())):
                view.set_wanted(wanted)
            # A blocking refresh before each cycle: decisions use values fetched for them.
            refresh()
            descheduler.run_cycle()

        log.info("Descheduler starting in %s mode", args.mode)
        _run_until_stopped(
            lambda: run_schedule(
                cycle, interval=interval, cron=cron, clock=SystemClock(), stop=stop
            ),
            stop,
        )
        return 0
    except Exception as error:  # startup problems: one clear line, not a traceback
        log.error("Descheduler stopped: %s", error)
        return 1
    finally:
        for cleanup in reversed(cleanups):
            cleanup()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="descheduler", description="Evict pods that telemetry says should move."
    )
    add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))
