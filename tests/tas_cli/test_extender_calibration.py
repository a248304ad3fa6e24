"""Herd control's calibration as the extender's processes run it (issue 55).

Covered: the window's flags (`--estimate-window`, `--estimate-window-min`,
`--estimate-window-max`) reach the tracker's limits, and limits that contradict each other or
the starting window are refused with one line naming the flags (never silently widened);
with herd control on, the metric view fetches `cpu_utilization` and `cpu_pressure` whatever
the policies name (the curve learns from the pair), and only the policies' metrics with it
off; a real `tas extender` process (cluster policies and nodes from the API emulator) serves
what herd control learned on /metrics, the window as its flag set it; and `tas run
--scenario`'s extender, served over HTTP, does too.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client import CollectorRegistry

from extender import runtime
from tas.adapters.metrics.textfile import write_node_series
from tas.metrics.static import StaticMetricView
from tas.policies.store import PolicyStore
from tas.runtime.process import SetupError
from tas.types import MetricName
from tas_cli import extender
from tas_cli.main import command_parser, main
from tests.builders import make_policy, rule
from tests.extender.support import HEALTH_POLICY, args_body, extender_process
from tests.k8s_emulator import KubeEmulator
from tests.k8s_emulator.realistic import node
from tests.processes import free_port

CALIBRATION = (
    "tas_extender_pressure_curve_servers",
    "tas_extender_pressure_curve_samples",
    "tas_extender_pressure_curve_fallback",
    "tas_extender_estimate_window_seconds",
)


def settings_of(*flags: str) -> extender.ExtenderCommandSettings:
    args = command_parser("extender").parse_args(["--metrics", "textfile:/m", *flags])
    return extender.ExtenderCommandSettings.from_args(args)


# -- the window's flags -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "start", "limits"),
    [
        pytest.param([], 90.0, (90.0, 300.0), id="default: from 90s, grows up to 5m"),
        pytest.param(
            ["--estimate-window-min", "30s", "--estimate-window-max", "10m"],
            90.0,
            (30.0, 600.0),
            id="both limits",
        ),
        pytest.param(
            ["--estimate-window", "2m", "--estimate-window-max", "2m"],
            120.0,
            (120.0, 120.0),
            id="a fixed window",
        ),
        pytest.param(["--estimate-window", "8m"], 480.0, (480.0, 480.0), id="a start past 5m"),
    ],
)
def test_the_window_flags_reach_the_tracker(
    flags: list[str], start: float, limits: tuple[float, float]
) -> None:
    tracker = runtime.placement_tracker(settings_of(*flags).placements)
    assert tracker is not None
    assert tracker.window == start
    assert tracker.window_limits == limits
    extender.check_settings(settings_of(*flags))


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        pytest.param(
            ["--estimate-window-min", "10m", "--estimate-window-max", "5m"],
            "--estimate-window-min 10m is longer than --estimate-window-max 5m: ",
            id="min over max",
        ),
        pytest.param(
            ["--estimate-window", "10m", "--estimate-window-min", "8m"],
            "--estimate-window-min 8m is longer than --estimate-window-max 5m (the default): ",
            id="min over the default max",
        ),
        pytest.param(
            ["--estimate-window-min", "2m"],
            "--estimate-window-min 2m is longer than --estimate-window 1m30s, where the window "
            "starts: give --estimate-window 2m or longer too",
            id="min over the start",
        ),
        pytest.param(
            ["--estimate-window-max", "1m"],
            "--estimate-window-max 1m is shorter than --estimate-window 1m30s, where the window "
            "starts: give --estimate-window 1m or shorter too",
            id="max under the start",
        ),
    ],
)
def test_window_limits_that_cannot_hold_are_refused_in_one_line(
    flags: list[str], said: str
) -> None:
    with pytest.raises(SetupError) as refused:
        extender.check_settings(settings_of(*flags))
    assert str(refused.value).startswith(said)
    assert "\n" not in str(refused.value)


def test_tas_extender_refuses_a_minimum_above_the_maximum_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--policies", str(HEALTH_POLICY), "--metrics", f"textfile:{tmp_path}",
            "--insecure-http", "--listen", f"127.0.0.1:{free_port()}",
            "--estimate-window-min", "6m", "--estimate-window-max", "4m"]  # fmt: skip
    assert main(["extender", *argv]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "--estimate-window-min 6m is longer than --estimate-window-max 4m" in line


# -- what the view fetches ----------------------------------------------------------------------

PRESSURE_ONLY = make_policy("p", scheduleonmetric=[rule("cpu_pressure", "LessThan")])
HEALTH_ONLY = make_policy("h", dontschedule=[rule("health_metric", "Equals", 1)])
CPU = {MetricName("cpu_utilization"), MetricName("cpu_pressure")}


@pytest.mark.parametrize(
    ("herd_control", "extra"),
    [
        pytest.param(True, CPU, id="herd control: the curve's pair too"),
        pytest.param(False, set(), id="off: the policies' metrics alone"),
    ],
)
def test_with_herd_control_the_view_fetches_utilization_and_pressure_whatever_policies_name(
    herd_control: bool, extra: set[MetricName]
) -> None:
    store, view = PolicyStore(), StaticMetricView()
    store.replace([PRESSURE_ONLY])
    runtime.want_metrics(store, view, herd_control=herd_control)
    assert view.wanted == {MetricName("cpu_pressure")} | extra
    store.replace([HEALTH_ONLY])  # the policies change: the pair stays
    assert view.wanted == {MetricName("health_metric")} | extra


# -- real processes -----------------------------------------------------------------------------


def _samples(text: str, name: str) -> dict[str, float]:
    """The samples of one metric family in exposition text: series (with labels) -> value."""
    found = {}
    for line in text.splitlines():
        series, _, value = line.rpartition(" ")
        if series == name or series.startswith(name + "{"):
            found[series] = float(value)
    return found


def test_tas_extender_serves_what_herd_control_learned_on_metrics(
    tmp_path: Path, kube_emulator: KubeEmulator
) -> None:
    document = yaml.safe_load(HEALTH_POLICY.read_text())
    kube_emulator.create("taspolicies", document, namespace=document["metadata"]["namespace"])
    for name in ("A", "B"):
        kube_emulator.create("nodes", node(name, cpu="16"))
    for name, (utilization, pressure) in {"A": (0.5, 0.2), "B": (0.3, 0.1)}.items():
        values = {"node_cpu_utilization": utilization, "node_cpu_pressure": pressure}
        write_node_series(tmp_path / "metrics", name, {"node_health_metric": 0, **values})
    port = free_port()
    args = ["--kubeconfig", str(kube_emulator.write_kubeconfig(tmp_path / "kubeconfig")),
            "--metrics", f"textfile:{tmp_path / 'metrics'}", "--listen", f"127.0.0.1:{port}",
            "--insecure-http", "--sync-period", "200ms",
            "--estimate-window", "2m", "--estimate-window-max", "4m"]  # fmt: skip
    with extender_process(args, port, tmp_path / "extender.log") as process:
        process.start()
        with httpx.Client(base_url=process.url, timeout=10) as client:
            # A request reads the view: its samples teach the curves, their age the lag.
            body = args_body(names=["A", "B"])
            assert client.post("/scheduler/prioritize", json=body).status_code == 200
            text = client.get("/metrics").text
    assert _samples(text, "tas_extender_estimate_window_seconds") == {
        "tas_extender_estimate_window_seconds": 120.0
    }
    # The policy names health_metric alone, yet each node's curve has its first sample (too
    # few to fit: the shared model stands for it until it has 8).
    assert _samples(text, "tas_extender_pressure_curve_samples") == {
        'tas_extender_pressure_curve_samples{node="A"}': 1.0,
        'tas_extender_pressure_curve_samples{node="B"}': 1.0,
    }
    assert _samples(text, "tas_extender_pressure_curve_fallback") == {
        'tas_extender_pressure_curve_fallback{node="A"}': 1.0,
        'tas_extender_pressure_curve_fallback{node="B"}': 1.0,
    }
    (lag,) = _samples(text, "tas_extender_observed_metric_lag_seconds").values()
    assert 0 <= lag < 60
    for name in CALIBRATION:
        assert f"# TYPE {name} gauge" in text
    # The policy names health_metric only; herd control fetches the curve's pair as well.
    wanted = _samples(text, "tas_metric_max_age_seconds")
    assert {series.split('"')[1] for series in wanted} == {
        "health_metric",
        "cpu_utilization",
        "cpu_pressure",
    }


def test_tas_run_s_scenario_extender_serves_what_herd_control_learned_on_metrics(
    tmp_path: Path,
) -> None:
    from tas_cli.run import RunCommandSettings
    from tas_dashboard.worlds import scenario_setup

    args = command_parser("run").parse_args(
        ["--dir", str(tmp_path), "--scenario", "herd", "--listen", "127.0.0.1:0"]
    )
    setup = scenario_setup("herd", RunCommandSettings.from_args(args), CollectorRegistry())
    with setup.extender as server:
        text = httpx.get(f"{server.url}/metrics", timeout=10).text
    for name in CALIBRATION:
        assert f"# TYPE {name} gauge" in text
    assert _samples(text, "tas_extender_estimate_window_seconds") == {
        "tas_extender_estimate_window_seconds": 90.0
    }
