"""Every component, run as a real process against the API emulator, stops within 2 s.

Kubernetes sends SIGTERM and kills the pod 30 s later; a rollout waits for every old pod, and a
leader that is killed leaves its Lease to expire before a standby may lead. So each component
must exit, with code 0, within `STOP_SECONDS` of SIGTERM or SIGINT, while its watch streams are
open and quiet. The emulator sends no bookmarks here, as a real API server sends about one a
minute: a watch that is only waited for, not aborted, would hold the process for its whole
server-side timeout.

Covered (SIGTERM to `python -m <component>`, SIGINT to `tas <component>`: the same code):
- the policy controller with leader election: exits in time, has released its Lease (holder
  cleared), and a standby candidate leads at its very first try, where before it could not;
  also while its metric fetch hangs on a Prometheus that never answers;
- the descheduler on an interval, after its first cycle; and in the middle of one, blocked on
  a Prometheus that never answers (the cycle is given up, not waited out);
- the run-once descheduler (`--descheduling-interval 0`, the CronJob form): exits within
  `STOP_SECONDS` of the log line that ends its cycle, without a signal;
- the extender following the cluster's TASPolicies, once ready.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from tas.adapters.cluster.leader import LeaderElector
from tests import processes
from tests.builders import health_policy_document
from tests.k8s_emulator import KubeEmulator
from tests.processes import ROOT, free_port

#: The longest a component may take from the signal (or the end of its single cycle) to exit.
STOP_SECONDS = 2.0
#: Generous: two shared cores start several Python processes that import the kubernetes client.
START_SECONDS = 30.0
DESCHEDULER_POLICY = ROOT / "deploy" / "descheduler" / "tas-violations.yaml"
LEASE = "tas-policy-controller"


class Component:
    """A component as a process, its output read line by line as it comes."""

    def __init__(self, command: Sequence[str], *, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            list(command),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        self._lines: list[str] = []
        self._arrived = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._arrived:
                self._lines.append(line)
                self._arrived.notify_all()

    @property
    def output(self) -> str:
        with self._arrived:
            return "".join(self._lines)

    def wait_for_line(self, text: str, timeout: float = START_SECONDS) -> str:
        """The first line containing `text`, once it has come."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                for line in self._lines:
                    if text in line:
                        return line
                assert self._reader.is_alive(), f"exited without {text!r}:\n{self.output}"
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"no line with {text!r} in time:\n{self.output}"
                self._arrived.wait(min(remaining, 0.1))

    def wait_until(self, condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + START_SECONDS
        while not condition():
            assert self.process.poll() is None, f"exited early:\n{self.output}"
            assert time.monotonic() < deadline, f"{what} never happened:\n{self.output}"
            time.sleep(0.05)

    def exit_after(self, signum: signal.Signals) -> tuple[int, float]:
        """Send `signum`; the exit code and the seconds the process took to exit."""
        sent = time.monotonic()
        self.process.send_signal(signum)
        code = self.process.wait(timeout=60)
        return code, time.monotonic() - sent

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self._reader.join(timeout=5)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture
def api() -> Iterator[KubeEmulator]:
    """The API emulator with the health demo: three Ready nodes, C violating, one demo pod."""
    with KubeEmulator(bookmark_interval=3600.0) as emulator:  # quiet watches, as on a cluster
        for name in ("A", "B", "C"):
            emulator.create("nodes", ready_node(name))
        emulator.create("taspolicies", health_policy_document())
        emulator.create(
            "pods",
            {
                "metadata": {
                    "name": "demo-app-1",
                    "namespace": "health-metric-demo",
                    "labels": {"telemetry-policy": "demo-policy"},
                },
                "spec": {"nodeName": "C", "containers": [{"name": "app", "image": "demo"}]},
            },
            namespace="health-metric-demo",
        )
        yield emulator


def ready_node(name: str) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


@pytest.fixture
def metrics(tmp_path: Path) -> Path:
    directory = tmp_path / "metrics"
    directory.mkdir()
    for node, value in {"A": 0, "B": 0, "C": 2}.items():
        (directory / f"{node}.prom").write_text(f"node_health_metric {value}\n", encoding="utf-8")
    return directory


@pytest.fixture
def kubeconfig(tmp_path: Path, api: KubeEmulator) -> Path:
    return api.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def black_hole() -> Iterator[str]:
    """The URL of a server that accepts connections (into its backlog) and never answers."""
    with processes.black_hole() as url:
        yield url


@pytest.fixture
def start() -> Iterator[Callable[..., Component]]:
    started: list[Component] = []

    def start(command: Sequence[str], **options: dict[str, str]) -> Component:
        component = Component(command, **options)
        started.append(component)
        return component

    yield start
    for component in started:
        component.close()


def command(form: str, component: str, *args: str) -> list[str]:
    """`python -m <component> ...` or `tas <component> ...` (as `python -m tas_cli`)."""
    if form == "tas":
        return [sys.executable, "-m", "tas_cli", component, *args]
    return [sys.executable, "-m", component, *args]


def sources(kubeconfig: Path, metrics: Path) -> list[str]:
    return ["--kubeconfig", str(kubeconfig), "--metrics", f"textfile:{metrics}"]


def logged_at(line: str) -> float:
    """The wall-clock time a log line was written (its `%(asctime)s` prefix, local time)."""
    stamp = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
    return stamp.timestamp()


def assert_clean_exit(component: Component, code: int, seconds: float) -> None:
    output = component.output
    assert code == 0, output
    assert seconds < STOP_SECONDS, f"took {seconds:.2f}s to exit:\n{output}"
    assert "Traceback" not in output, output


def node_label(api: KubeEmulator, name: str) -> object:
    node = api.get("nodes", name) or {}
    return (node.get("metadata", {}).get("labels") or {}).get("demo-policy")


def lease_holder(api: KubeEmulator) -> object:
    lease = api.get("leases", LEASE, namespace="default")
    return None if lease is None else lease["spec"].get("holderIdentity")


BY_SIGNAL = [
    pytest.param("python", signal.SIGTERM, id="python-m-sigterm"),
    pytest.param("tas", signal.SIGINT, id="tas-sigint"),
]


@pytest.mark.parametrize(("form", "signum"), BY_SIGNAL)
def test_the_leader_elected_controller_exits_in_time_and_a_standby_leads_at_once(
    api: KubeEmulator,
    kubeconfig: Path,
    metrics: Path,
    start: Callable[..., Component],
    form: str,
    signum: signal.Signals,
) -> None:
    args = [*sources(kubeconfig, metrics), "--sync-period", "200ms",
            "--listen", f"127.0.0.1:{free_port()}",
            "--leader-elect", "--lease-name", LEASE, "--lease-namespace", "default"]  # fmt: skip
    name = "policy_controller" if form == "python" else "controller"
    controller = start(command(form, name, *args), env={"POD_NAME": "controller-a"})
    controller.wait_until(lambda: lease_holder(api) == "controller-a", "leading")
    controller.wait_until(lambda: node_label(api, "C") == "violating", "a first cycle")
    standby = LeaderElector(api.api_client(), name=LEASE, namespace="default", identity="standby")
    assert not standby.try_acquire_or_renew(), "the standby led while the controller did"

    code, seconds = controller.exit_after(signum)

    assert_clean_exit(controller, code, seconds)
    assert lease_holder(api) == "", "the Lease was not released"
    assert standby.try_acquire_or_renew(), "the standby could not take over at once"


def test_the_controller_exits_in_time_and_releases_its_lease_while_a_fetch_hangs(
    api: KubeEmulator, kubeconfig: Path, black_hole: str, start: Callable[..., Component]
) -> None:
    args = ["--kubeconfig", str(kubeconfig), "--metrics", f"prometheus:{black_hole}",
            "--sync-period", "200ms", "--listen", f"127.0.0.1:{free_port()}",
            "--leader-elect", "--lease-name", LEASE, "--lease-namespace", "default"]  # fmt: skip
    controller = start(command("python", "policy_controller", *args))
    controller.wait_until(lambda: bool(lease_holder(api)), "leading")
    time.sleep(0.5)  # the metric fetch waits on the black hole (for 5 s)

    code, seconds = controller.exit_after(signal.SIGTERM)

    assert_clean_exit(controller, code, seconds)
    assert lease_holder(api) == "", "the Lease was not released"


@pytest.mark.parametrize(("form", "signum"), BY_SIGNAL)
def test_the_interval_descheduler_exits_in_time_after_a_cycle(
    kubeconfig: Path,
    metrics: Path,
    start: Callable[..., Component],
    form: str,
    signum: signal.Signals,
) -> None:
    args = [*sources(kubeconfig, metrics), "--policy-config-file", str(DESCHEDULER_POLICY),
            "--descheduling-interval", "1h"]  # fmt: skip
    descheduler = start(command(form, "descheduler", *args))
    descheduler.wait_for_line("Cycle done; the next in")

    code, seconds = descheduler.exit_after(signum)

    assert_clean_exit(descheduler, code, seconds)


def test_the_descheduler_exits_in_time_in_the_middle_of_a_cycle(
    kubeconfig: Path, black_hole: str, start: Callable[..., Component]
) -> None:
    args = ["--kubeconfig", str(kubeconfig), "--metrics", f"prometheus:{black_hole}",
            "--policy-config-file", str(DESCHEDULER_POLICY),
            "--descheduling-interval", "1h"]  # fmt: skip
    descheduler = start(command("python", "descheduler", *args))
    descheduler.wait_for_line("Descheduler starting")
    time.sleep(0.5)  # the cycle's metric fetch waits on the black hole (for 5 s)

    code, seconds = descheduler.exit_after(signal.SIGTERM)

    assert_clean_exit(descheduler, code, seconds)
    assert "Stopped in the middle of a descheduling cycle" in descheduler.output


def test_the_run_once_descheduler_exits_in_time_after_its_cycle(
    kubeconfig: Path, metrics: Path, start: Callable[..., Component]
) -> None:
    args = [*sources(kubeconfig, metrics), "--policy-config-file", str(DESCHEDULER_POLICY),
            "--descheduling-interval", "0"]  # fmt: skip
    descheduler = start(command("python", "descheduler", *args))
    cycle_done = logged_at(descheduler.wait_for_line("Cycle done; ran once"))
    code = descheduler.process.wait(timeout=60)
    # From the time the process logged, not the time the line reached us: a slow reader
    # cannot make the exit look quicker than it was.
    seconds = time.time() - cycle_done

    assert_clean_exit(descheduler, code, seconds)


@pytest.mark.parametrize(("form", "signum"), BY_SIGNAL)
def test_the_extender_exits_in_time_while_following_the_clusters_policies(
    kubeconfig: Path,
    metrics: Path,
    start: Callable[..., Component],
    form: str,
    signum: signal.Signals,
) -> None:
    port = free_port()
    args = [*sources(kubeconfig, metrics), "--listen", f"127.0.0.1:{port}", "--insecure-http",
            "--sync-period", "200ms"]  # fmt: skip
    extender = start(command(form, "extender", *args))
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:

        def ready() -> bool:
            try:
                return client.get("/readyz").status_code == 200
            except httpx.TransportError:
                return False

        extender.wait_until(ready, "readiness")

    code, seconds = extender.exit_after(signum)

    assert_clean_exit(extender, code, seconds)
