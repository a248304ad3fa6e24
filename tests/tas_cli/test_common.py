"""The wiring every command shares (`tas_cli.common`): one meaning for every shared flag, and
one orderly way for a process to end.

Covered:
- durations: positive where a period is meant, zero allowed where it means "not at all", Go's
  compound forms, clear argument errors otherwise;
- `HOST:PORT`, `[IPv6]:PORT` and `:PORT`; log levels in either case; cron expressions;
- every component command accepts the shared flags with the same meaning, and reads them once
  into the same frozen settings pieces (`KubeSettings`, `MetricsSettings`); a settings field
  is read from the argument of its name (a shared piece from its own flags), and one with no
  argument is an error at once;
- the Prometheus URL of `--metrics prometheus:URL`, and per-pod usage reached with the metrics
  config's access settings (a CA file that cannot load stops startup instead of being ignored);
- the extender's recent placements: on by default with the cluster's policies, off with files;
- `Lifetime`: threads joined in start order, cleanups last-registered first, each given what
  is left of one budget; a failing cleanup does not skip the others; signals restored;
- `want_policy_metrics`: the view fetches what the policies name, plus a component's extras,
  and hears about every policy change;
- a Kubernetes configuration that cannot be loaded is one clear line and exit 2;
- a server that cannot bind names its address; a taken port is followed by how to pick another;
- the running `make run` the demo commands talk to: --url, else $TAS_DEMO_URL, else the
  address `tas run` serves its dashboard on by default.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from extender import runtime
from tas.metrics.static import StaticMetricView
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.runtime import process, startup
from tas.types import MetricName
from tas_cli import common, controller, descheduler, extender
from tas_cli.main import command_parser, main
from tests.builders import make_policy, rule


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("2s", 2.0, id="seconds"),
        pytest.param("500ms", 0.5, id="milliseconds"),
        pytest.param("1m30s", 90.0, id="Go compound"),
        pytest.param("1.5", 1.5, id="bare seconds"),
    ],
)
def test_durations_are_parsed_with_one_grammar(text: str, seconds: float) -> None:
    assert common.duration(text) == seconds


@pytest.mark.parametrize("text", ["", "2 weeks", "-1s", "0s", "0", "s", "1h30"])
def test_a_period_that_is_not_a_positive_duration_is_an_argument_error(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        common.duration(text)


def test_zero_is_allowed_where_it_means_not_at_all() -> None:
    assert common.duration_or_zero("0") == 0.0
    with pytest.raises(argparse.ArgumentTypeError, match="negative"):
        common.duration_or_zero("-1m")


@pytest.mark.parametrize(
    ("text", "address"),
    [
        pytest.param("127.0.0.1:8081", ("127.0.0.1", 8081), id="ipv4"),
        pytest.param("[::1]:9000", ("::1", 9000), id="ipv6"),
        pytest.param(":9001", ("0.0.0.0", 9001), id="every interface"),
    ],
)
def test_listen_addresses_are_parsed(text: str, address: tuple[str, int]) -> None:
    assert common.listen_address(text) == address


@pytest.mark.parametrize("text", ["8081", "host:", "host:port", "host:99999"])
def test_a_bad_listen_address_is_an_argument_error(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="HOST:PORT"):
        common.listen_address(text)


def test_log_levels_are_accepted_in_either_case_and_others_refused() -> None:
    assert common.log_level("INFO") == common.log_level("info") == "info"
    with pytest.raises(argparse.ArgumentTypeError, match="debug, info, warning, error"):
        common.log_level("verbose")


def test_cron_expressions_are_parsed_and_bad_ones_refused() -> None:
    assert common.cron_schedule("") is None
    schedule = common.cron_schedule("*/10 * * * *")
    assert schedule is not None
    assert schedule.expression == "*/10 * * * *"
    with pytest.raises(argparse.ArgumentTypeError, match="needs 5 fields"):
        common.cron_schedule("* *")


@pytest.mark.parametrize(
    ("command", "required"),
    [
        pytest.param("extender", ["--metrics", "textfile:/m", "--insecure-http"], id="extender"),
        pytest.param("controller", ["--metrics", "textfile:/m"], id="controller"),
        pytest.param("descheduler", ["--policy-config-file", "p.yaml"], id="descheduler"),
    ],
)
def test_every_component_reads_the_shared_flags_the_same_way(
    command: str, required: list[str]
) -> None:
    parser = command_parser(command)
    shared = [
        "--kubeconfig", "/k", "--context", "c", "--policies", "/p", "--sync-period", "1m30s",
        "--metric-max-age", "45s", "--log-level", "DEBUG", "--metrics-config", "/c",
    ]  # fmt: skip
    args = parser.parse_args([*required, *shared])
    assert (args.kubeconfig, args.context, args.policies) == (Path("/k"), "c", Path("/p"))
    assert (args.sync_period, args.metric_max_age) == (90.0, 45.0)
    assert (args.log_level, args.metrics_config) == ("debug", Path("/c"))


@pytest.mark.parametrize(
    ("settings_type", "required", "source"),
    [
        pytest.param(
            extender.ExtenderCommandSettings,
            ["--metrics", "textfile:/m", "--insecure-http"],
            "textfile:/m",
            id="extender",
        ),
        pytest.param(
            controller.ControllerCommandSettings, ["--metrics", "custom-metrics"], "custom-metrics",
            id="controller",
        ),
        pytest.param(
            descheduler.DeschedulerCommandSettings, ["--policy-config-file", "p.yaml"], None,
            id="descheduler",
        ),
    ],
)  # fmt: skip
def test_every_component_reads_the_shared_flags_into_the_same_frozen_settings(
    settings_type: Any, required: list[str], source: str | None
) -> None:
    command = {
        extender.ExtenderCommandSettings: "extender",
        controller.ControllerCommandSettings: "controller",
        descheduler.DeschedulerCommandSettings: "descheduler",
    }[settings_type]
    shared = [
        "--kubeconfig", "/k", "--context", "c", "--policies", "/p", "--sync-period", "1m30s",
        "--metric-max-age", "45s", "--log-level", "DEBUG", "--metrics-config", "/c",
    ]  # fmt: skip
    settings = settings_type.from_args(command_parser(command).parse_args([*required, *shared]))
    assert settings.kube == startup.KubeSettings(kubeconfig=Path("/k"), context="c")
    assert settings.metrics == startup.MetricsSettings(
        source=source, config_file=Path("/c"), max_age=45.0, sync_period=90.0
    )
    assert (settings.policies, settings.log_level) == (Path("/p"), "debug")
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.policies = None  # read once: nothing downstream can change what was asked


@pytest.mark.parametrize(
    ("source", "url"),
    [
        pytest.param("prometheus:https://prom.test:9090/", "https://prom.test:9090/", id="prom"),
        pytest.param("textfile:/run/metrics", None, id="textfile"),
        pytest.param("custom-metrics", None, id="custom-metrics"),
        pytest.param(None, None, id="none"),
    ],
)  # fmt: skip
def test_only_a_prometheus_source_names_a_prometheus(source: str | None, url: str | None) -> None:
    settings = startup.MetricsSettings(source=source)
    assert settings.prometheus_url == url
    if url is None:
        assert startup.open_pod_usage(settings) is None


def test_per_pod_usage_is_reached_with_the_metrics_configs_ca_file(tmp_path: Path) -> None:
    # Per-pod usage used to build its own client and never looked at ca_file: a wrong path
    # started fine and then failed every query against a Prometheus with a private CA.
    config = tmp_path / "metrics.yaml"
    config.write_text(f"prometheus:\n  ca_file: {tmp_path / 'missing-ca.crt'}\n")
    settings = startup.MetricsSettings(source="prometheus:https://prom.test", config_file=config)
    with pytest.raises(process.SetupError, match="ca_file"):
        startup.open_pod_usage(settings)


@pytest.mark.parametrize(
    ("flags", "enabled"),
    [
        pytest.param([], True, id="cluster-policies-default-on"),
        pytest.param(["--policies", "/p"], False, id="policy-files-default-off"),
        pytest.param(["--policies", "/p", "--recent-placements", "on"], True, id="files-on"),
        pytest.param(["--recent-placements", "off"], False, id="cluster-off"),
    ],
)
def test_recent_placements_default_to_on_only_with_the_clusters_policies(
    flags: list[str], enabled: bool
) -> None:
    args = command_parser("extender").parse_args(
        ["--metrics", "textfile:/m", "--insecure-http", "--node-capacity", "cpu=8", *flags]
    )
    settings = extender.ExtenderCommandSettings.from_args(args).placements
    assert settings.enabled is enabled
    assert (runtime.placement_tracker(settings) is not None) is enabled
    assert settings.default_capacity == {"cpu": 8.0, "memory": 64.0 * 1024**3}


@pytest.mark.parametrize(
    ("flags", "percentile"),
    [
        pytest.param([], None, id="the workload's mean by default"),
        pytest.param(["--estimate-percentile", "90"], 90.0, id="a percentile when asked"),
    ],
)
def test_the_estimate_percentile_reaches_the_tracker(
    flags: list[str], percentile: float | None
) -> None:
    args = command_parser("extender").parse_args(["--metrics", "textfile:/m", *flags])
    tracker = runtime.placement_tracker(extender.ExtenderCommandSettings.from_args(args).placements)
    assert tracker is not None
    assert tracker.usage_percentile == percentile


@pytest.mark.parametrize("bad", ["0", "101", "p90"])
def test_an_estimate_percentile_outside_0_to_100_is_refused(bad: str) -> None:
    with pytest.raises(SystemExit):
        command_parser("extender").parse_args(["--metrics", "x", "--estimate-percentile", bad])


def test_a_lifetime_joins_threads_in_order_then_runs_cleanups_last_first() -> None:
    order: list[str] = []
    budgets: list[float] = []
    with process.Lifetime("test", shutdown_seconds=1.0) as life:

        def worker(name: str) -> None:
            life.stop.wait()
            order.append(name)
            time.sleep(0.05)

        life.in_background(worker, "first", name="first")
        life.on_close(
            lambda seconds: (order.append("cleanup registered first"), budgets.append(seconds))
        )
        life.on_close(lambda seconds: order.append("cleanup registered last"))
        life.in_background(worker, "second", name="second")
    assert order[-2:] == ["cleanup registered last", "cleanup registered first"]
    assert set(order[:2]) == {"first", "second"}
    assert 0 < budgets[0] < 1.0  # what was left after the joins


def test_a_lifetime_keeps_to_its_budget_and_survives_a_failing_cleanup() -> None:
    ran: list[str] = []

    def failing(seconds: float) -> None:
        raise RuntimeError("boom")

    started = time.monotonic()
    life = process.Lifetime("test", shutdown_seconds=0.3)
    life.in_background(time.sleep, 5.0, name="stuck")  # never finishes in time
    life.on_close(lambda seconds: ran.append(f"{seconds:.1f}"))
    life.on_close(failing)
    life.close()
    assert time.monotonic() - started < 1.0
    assert ran == ["0.0"]


def test_a_lifetime_restores_the_signal_handlers_it_replaced() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with process.Lifetime("test", shutdown_seconds=0.1) as life:
        life.catch_signals()
        assert signal.getsignal(signal.SIGTERM) is not before
        signal.raise_signal(signal.SIGTERM)
        assert life.stop.is_set()
    assert signal.getsignal(signal.SIGTERM) is before


class RecordingView(StaticMetricView):
    def __init__(self) -> None:
        super().__init__()
        self.told: list[frozenset[MetricName]] = []

    def set_wanted(self, names: Iterable[MetricName]) -> None:
        self.told.append(frozenset(names))


def test_the_view_fetches_what_the_policies_name_and_hears_every_change() -> None:
    store = PolicyStore()
    view = RecordingView()
    want_policy_metrics(store, view, extra=[MetricName("node_cpu_pressure")])
    assert view.told == [{"node_cpu_pressure"}]
    store.replace([make_policy("p", dontschedule=[rule("health_metric", "GreaterThan", 1)])])
    assert view.told[-1] == {"health_metric", "node_cpu_pressure"}
    store.replace([])
    assert view.told[-1] == {"node_cpu_pressure"}


def test_an_unloadable_kubeconfig_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.yaml"
    code = main(["controller", "--metrics", f"textfile:{tmp_path}", "--kubeconfig", str(missing)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("tas controller: cannot load Kubernetes configuration")
    assert "Traceback" not in err


def test_a_server_that_cannot_bind_is_a_setup_error_naming_the_address_and_what_it_serves() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(process.SetupError, match=rf"^cannot listen on 127.0.0.1:{port} for "):
            process.bind(
                ("127.0.0.1", port),
                lambda host, port: socket.create_server((host, port)),
                what="the dashboard",
            )
    with process.bind(("127.0.0.1", 0), lambda host, port: socket.create_server((host, port))):
        pass  # a free port binds: the server itself is returned


def test_a_taken_port_is_followed_by_how_to_pick_another_and_only_a_taken_one() -> None:
    def serve(host: str, port: int) -> socket.socket:
        return socket.create_server((host, port))

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(process.SetupError) as raised:
            process.bind(("127.0.0.1", port), serve, what="the dashboard", if_taken="Use --x.")
    said = str(raised.value)
    assert said.startswith(f"cannot listen on 127.0.0.1:{port} for the dashboard: Address already")
    assert said.endswith(". Use --x.")
    # 192.0.2.1 (TEST-NET-1, RFC 5737) is no address of this machine: not a taken port.
    with pytest.raises(process.SetupError) as raised:
        process.bind(("192.0.2.1", port), serve, if_taken="Use --x.")
    assert str(raised.value).startswith(f"cannot listen on 192.0.2.1:{port}: ")
    assert "Use --x." not in str(raised.value)


def test_the_demo_s_dashboard_is_the_url_given_else_tas_demo_url_else_tas_run_s_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TAS_DEMO_URL", raising=False)
    assert common.demo_url() == "http://127.0.0.1:8080"
    # `tas run --dashboard`'s default is the same address.
    assert command_parser("run").get_default("dashboard") == ("127.0.0.1", 8080)
    monkeypatch.setenv("TAS_DEMO_URL", "http://demo.example:18080/")
    assert common.demo_url() == "http://demo.example:18080"
    assert common.demo_url("http://given:1") == "http://given:1"


def test_settings_are_read_from_the_arguments_of_their_names_and_none_may_be_missing() -> None:
    @dataclasses.dataclass(frozen=True)
    class Settings:
        lease_name: str
        kube: startup.KubeSettings  # a shared piece, read from its own flags
        mode: str = "given"

    args = argparse.Namespace(lease_name="tas", kubeconfig=Path("/k"), context=None)
    assert common.read_settings(Settings, args, mode="Automatic") == Settings(
        "tas", startup.KubeSettings(kubeconfig=Path("/k")), "Automatic"
    )
    with pytest.raises(AttributeError, match="lease_name"):
        common.read_settings(Settings, argparse.Namespace(kubeconfig=None, context=None))
