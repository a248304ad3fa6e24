"""The descheduler's liveness: `/healthz` fails once its cycles stop.

Covered:
- the deadline: three scheduled starts after the last cycle ended (or after the start), plus
  the grace for a cycle's own work, on an interval and on a cron schedule (whose gaps it
  follows); a run-once descheduler is always live; a cycle ending moves the deadline;
- the real probe server (`tas.runtime.probes.ProbeServer`) answers `/healthz` 200 while cycles end
and
  503 once they stop, on the port that serves `/metrics`;
- a real `tas descheduler` process against the Kubernetes API emulator, on an interval: its
  metrics port answers `/healthz` and `/readyz` with 200 and `/metrics` counts the cycles run,
  each with its wall and its CPU time (`tas_descheduler_cycle_duration_seconds`,
  `tas_descheduler_cycle_cpu_seconds`: one observation per cycle that ran).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from descheduler.liveness import GRACE_SECONDS, MISSED_CYCLES, CycleLiveness
from tas.cron import CronSchedule
from tas.runtime.probes import ProbeServer
from tests.builders import ManualClock
from tests.k8s_emulator import KubeEmulator
from tests.processes import Process, free_port

ROOT = Path(__file__).resolve().parents[2]
START = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)  # a Friday


def test_cycles_on_an_interval_are_live_until_three_intervals_and_the_grace_pass() -> None:
    clock = ManualClock(START)
    liveness = CycleLiveness(interval=60, cron=None, clock=clock)
    allowance = MISSED_CYCLES * 60 + GRACE_SECONDS
    assert liveness.deadline() == START + timedelta(seconds=allowance)
    clock.advance(allowance)
    assert liveness.live()
    clock.advance(1)
    assert not liveness.live()
    liveness.cycle_ended()
    assert liveness.live()
    assert liveness.deadline() == clock.now() + timedelta(seconds=allowance)


@pytest.mark.parametrize(
    ("expression", "last", "deadline"),
    [
        pytest.param("*/10 * * * *", START, START + timedelta(minutes=30), id="every 10 minutes"),
        # Friday 12:00: the third weekday 03:00 after it is Wednesday 03:00, not Monday.
        pytest.param(
            "0 3 * * 1-5",
            START,
            datetime(2026, 1, 7, 3, 0, tzinfo=UTC),
            id="weekdays: the weekend is no missed cycle",
        ),
    ],
)
def test_cycles_on_a_cron_schedule_follow_its_own_gaps(
    expression: str, last: datetime, deadline: datetime
) -> None:
    clock = ManualClock(last)
    liveness = CycleLiveness(interval=0, cron=CronSchedule.parse(expression), clock=clock)
    assert liveness.deadline() == deadline + timedelta(seconds=GRACE_SECONDS)


def test_the_interval_wins_over_a_cron_expression_as_in_the_schedule() -> None:
    clock = ManualClock(START)
    liveness = CycleLiveness(interval=10, cron=CronSchedule.parse("0 3 * * *"), clock=clock)
    assert liveness.deadline() == START + timedelta(seconds=30 + GRACE_SECONDS)


def test_a_run_once_descheduler_is_always_live() -> None:
    clock = ManualClock(START)
    liveness = CycleLiveness(interval=0, cron=None, clock=clock)
    clock.advance(86400 * 365)
    assert liveness.deadline() is None
    assert liveness.live()


def test_the_probe_server_fails_healthz_once_cycles_stop() -> None:
    clock = ManualClock(START)
    liveness = CycleLiveness(interval=1, cron=None, clock=clock, grace_seconds=0)
    registry = CollectorRegistry()
    server = ProbeServer(
        host="127.0.0.1",
        port=0,
        registry=registry,
        healthy=liveness.live,
        ready=lambda: True,
        name="descheduler",
    )
    server.start()
    try:
        host, port = server.address
        with httpx.Client(base_url=f"http://{host}:{port}", timeout=5) as client:
            for _ in range(5):  # cycles end every second
                clock.advance(1)
                liveness.cycle_ended()
                assert client.get("/healthz").status_code == 200
            clock.advance(MISSED_CYCLES + 0.5)  # then none ends
            assert client.get("/healthz").status_code == 503
            assert client.get("/metrics").status_code == 200  # the port still serves metrics
            liveness.cycle_ended()
            assert client.get("/healthz").status_code == 200
    finally:
        server.stop()


def _cycles(exposition: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == "tas_descheduler_cycles_total"
    )


def _samples(exposition: str) -> dict[str, float]:
    """Every sample of the exposition, summed over its labels."""
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            found[sample.name] = found.get(sample.name, 0.0) + sample.value
    return found


def _ready_node(name: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        },
    }


def test_a_running_descheduler_answers_its_probes_on_the_metrics_port(
    tmp_path: Path, kube_emulator: KubeEmulator
) -> None:
    for name in ("node-a", "node-b"):
        kube_emulator.create("nodes", _ready_node(name))
    port = free_port()
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    args = [sys.executable, "-m", "descheduler",
            "--policy-config-file", str(ROOT / "deploy" / "descheduler" / "tas-violations.yaml"),
            "--kubeconfig", str(kube_emulator.write_kubeconfig(tmp_path / "kubeconfig")),
            "--metrics", f"textfile:{metrics_dir}", "--descheduling-interval", "200ms",
            "--listen-metrics", f"127.0.0.1:{port}"]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with Process(args, url, None, tmp_path / "descheduler.log") as process:
        process.start()
        with httpx.Client(base_url=url, timeout=5) as client:

            def cycles_counted() -> float:
                try:
                    return _cycles(client.get("/metrics").text)
                except httpx.TransportError:  # not serving yet
                    return 0.0

            process.eventually(lambda: cycles_counted() >= 2, "two cycles counted", 30)
            assert client.get("/healthz").status_code == 200
            assert client.get("/readyz").status_code == 200
            samples = _samples(client.get("/metrics").text)
            ran = samples["tas_descheduler_cycles_total"]
            for timing in ("duration", "cpu"):
                counted = samples[f"tas_descheduler_cycle_{timing}_seconds_count"]
                assert 2 <= counted <= ran  # observed once per cycle that ran
                assert samples[f"tas_descheduler_cycle_{timing}_seconds_sum"] > 0
        assert process.terminate() == 0, process.output()
