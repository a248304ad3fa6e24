"""The command line every command shares, written once.

The extender, the policy controller and the descheduler are different loops around the same
parts, so their command lines agree by construction: `--kubeconfig/--context`,
`--metrics/--metrics-config/--metric-max-age`, `--policies`, `--sync-period`, `--log-level`
mean the same everywhere, with one duration grammar (`tas.durations`: Go's, plus bare seconds)
and case-insensitive log levels. What they open from those flags is `tas.runtime.startup`'s (the
Kubernetes connection and caches, the metric view, per-pod usage, the policies followed), and
how a process lives and ends is `tas.runtime.process`'s (`Lifetime`, the addresses it serves, the
Lease).

Startup problems are `tas.runtime.process.SetupError`s: the command prints one line and exits 2,
never
a traceback.

Each command reads its `argparse.Namespace` once, in its own module, into a frozen settings
object built from the shared pieces (`tas.runtime.startup.KubeSettings`, `MetricsSettings`;
`read_settings` fills every other field from the argument of its name), and passes that on;
the helpers take those pieces, never the Namespace (kopf's `OperatorSettings`,
kopf/_cogs/configs/configuration.py, is the model: one typed object instead of loose options).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from tas.cron import CronError, CronSchedule
from tas.durations import DurationError, parse_duration
from tas.runtime.startup import KubeSettings, MetricsSettings
from tas.tas_flags import Component, TasFlagError, translate_tas_flags

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


log = logging.getLogger("tas")

D = TypeVar("D", bound="DataclassInstance")

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
METRICS_HELP = (
    "metric source: prometheus:URL, custom-metrics, node-exporter:NODE=URL,..., textfile:DIR"
)


def print_problems(headline: str, problems: Iterable[str]) -> None:
    """`headline`, then each problem indented under it, on stderr: every problem the user has
    to fix, at once, not only the first."""
    print(headline, file=sys.stderr)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)


# ------------------------------------------------------------------ argument types


def duration(text: str) -> float:
    """A positive duration (`2s`, `500ms`, `1m30s`, or bare seconds)."""
    try:
        seconds = parse_duration(text)
    except DurationError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration must be positive")
    return seconds


def duration_or_zero(text: str) -> float:
    """A duration where 0 means "not at all" (e.g. run once)."""
    try:
        return parse_duration(text)
    except DurationError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def cron_schedule(text: str) -> CronSchedule | None:
    """A five-field cron expression; empty means none."""
    if not text.strip():
        return None
    try:
        return CronSchedule.parse(text.strip())
    except CronError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def listen_address(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `[IPv6]:PORT`, or `:PORT` for every interface."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT, e.g. 127.0.0.1:8081")
    return host.strip("[]") or "0.0.0.0", int(port)


def count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return int(text)


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def share(text: str) -> float:
    """A fraction in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share between 0 (excluded) and 1")
    return value


def log_level(text: str) -> str:
    lowered = text.lower()
    if lowered not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(LOG_LEVELS)}")
    return lowered


# ------------------------------------------------------------------ a running `make run`

#: Where `tas run` (`make run`) serves its dashboard unless told otherwise (`--dashboard`).
DEMO_DASHBOARD = ("127.0.0.1", 8080)
DEMO_URL = f"http://{DEMO_DASHBOARD[0]}:{DEMO_DASHBOARD[1]}"
#: The environment variable that names the dashboard of a `make run` elsewhere.
DEMO_URL_VARIABLE = "TAS_DEMO_URL"


def demo_url(given: str | None = None) -> str:
    """The dashboard of the running `make run` that `tas demo`, `tas set-health` and
    `tas explain --demo` talk to: `given` (their --url), else $TAS_DEMO_URL, else `tas run`'s
    own default."""
    return (given or os.environ.get(DEMO_URL_VARIABLE) or DEMO_URL).rstrip("/")


# ------------------------------------------------------------------ settings


def read_settings(cls: type[D], args: argparse.Namespace, **given: Any) -> D:
    """A command's frozen settings (`cls`, a dataclass) read from `args`: each field not
    `given` is the shared piece of its name (`kube`, `metrics`, `tas_flag_notices`: `_SHARED`)
    or else the argument of its name (`--lease-name` is `lease_name`). An argument missing for
    a field is an AttributeError at once, never a silent default."""
    read = {
        f.name: _SHARED[f.name](args) if f.name in _SHARED else getattr(args, f.name)
        for f in dataclasses.fields(cls)
        if f.name not in given
    }
    return cls(**read, **given)


def tas_flag_notices(args: argparse.Namespace) -> tuple[str, ...]:
    """The deprecation notices `parse_with_tas_flags` left on `args` (none without it)."""
    return tuple(getattr(args, "tas_flag_notices", ()))


def kube_settings(args: argparse.Namespace) -> KubeSettings:
    """`--kubeconfig`, `--context`."""
    return read_settings(KubeSettings, args)


def metrics_settings(args: argparse.Namespace) -> MetricsSettings:
    """`--metrics`, `--metrics-config`, `--metric-max-age` and `--sync-period`."""
    return MetricsSettings(
        source=args.metrics,
        config_file=args.metrics_config,
        max_age=args.metric_max_age,
        sync_period=args.sync_period,
    )


#: The pieces every command that has them reads the same way (`read_settings`), by field name.
_SHARED: dict[str, Callable[[argparse.Namespace], object]] = {
    "kube": kube_settings,
    "metrics": metrics_settings,
    "tas_flag_notices": tas_flag_notices,
}


# ------------------------------------------------------------------ shared options


def add_kubernetes_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="FILE",
        help="kubeconfig file (default: in-cluster configuration, else ~/.kube/config)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context")


def add_metric_arguments(
    parser: argparse.ArgumentParser, *, required: bool, absent_means: str = ""
) -> None:
    help_text = f"{METRICS_HELP} ({absent_means})" if absent_means else METRICS_HELP
    parser.add_argument("--metrics", required=required, metavar="SOURCE", help=help_text)
    parser.add_argument(
        "--metrics-config",
        type=Path,
        metavar="FILE",
        help="metric source config: PromQL overrides, node label, token and CA files",
    )
    parser.add_argument(
        "--metric-max-age",
        type=duration,
        metavar="DURATION",
        help="older metric values count as missing (default: 5 sync periods, at least 30s, "
        "or, for a source that updates more slowly, two missed updates)",
    )


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policies",
        type=Path,
        metavar="PATH",
        help="a TASPolicy file or a directory of *.yaml/*.yml/*.json files (reloaded on "
        "change); default: the TASPolicy objects in the cluster",
    )


def add_sync_period_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sync-period",
        type=duration,
        default=2.0,
        metavar="DURATION",
        help="how often metrics are refreshed (and the controller reconciles); default 2s",
    )


def add_listen_argument(
    parser: argparse.ArgumentParser,
    *,
    default: tuple[str, int] | None,
    help: str,
    flag: str = "--listen",
) -> None:
    """A `HOST:PORT` a server of the command binds (`default` None: no server unless given)."""
    parser.add_argument(flag, type=listen_address, default=default, metavar="HOST:PORT", help=help)


def add_log_level_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        type=log_level,
        default="info",
        metavar="LEVEL",
        help=f"{', '.join(LOG_LEVELS)} (default info)",
    )


def parse_with_tas_flags(
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    *,
    component: Component,
    prefix: Sequence[str] = (),
) -> argparse.Namespace:
    """Parse `argv`, first translating Intel TAS's flags (`tas.tas_flags`).

    An old TAS manifest starts unchanged; each TAS flag used is logged as a deprecation
    warning naming its new spelling once logging is configured (`warn_tas_flags`).
    """
    try:
        translated, notices = translate_tas_flags(argv, component=component)
    except TasFlagError as error:
        parser.error(f"{component}: {error}")  # exits 2 with the usage, as any bad flag
    args = parser.parse_args([*prefix, *translated])
    args.tas_flag_notices = notices
    return args


def warn_tas_flags(notices: Iterable[str]) -> None:
    for notice in notices:
        log.warning("%s", notice)


class ComponentSettings(Protocol):
    """What a long-running component's settings (the extender's, the controller's) tell of
    its start: the log level, and the TAS flags translated on the way in."""

    @property
    def log_level(self) -> str: ...

    @property
    def tas_flag_notices(self) -> tuple[str, ...]: ...


C = TypeVar("C", bound=ComponentSettings)


def component_command(
    read: Callable[[argparse.Namespace], C], body: Callable[[C], int]
) -> Callable[[argparse.Namespace], int]:
    """A component's `run`: its settings read once (`read`), logging configured at their
    level and each TAS flag used warned of (`warn_tas_flags`), then `body(settings)`."""

    def run(args: argparse.Namespace) -> int:
        settings = read(args)
        configure_logging(settings.log_level)
        warn_tas_flags(settings.tas_flag_notices)
        return body(settings)

    return run


# ------------------------------------------------------------------ setup


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format=LOG_FORMAT)


def add_leader_arguments(parser: argparse.ArgumentParser, *, lease: str) -> None:
    """`--leader-elect`, `--lease-name` (default `lease`) and `--lease-namespace`."""
    parser.add_argument(
        "--leader-elect", action="store_true", help="run only while holding a Lease"
    )
    parser.add_argument("--lease-name", default=lease, metavar="NAME")
    parser.add_argument(
        "--lease-namespace",
        default=os.environ.get("POD_NAMESPACE", "default"),
        metavar="NAMESPACE",
    )
