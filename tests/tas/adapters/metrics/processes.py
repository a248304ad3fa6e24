"""Real `prometheus-node-exporter` and `prometheus` processes on loopback for integration tests:
a Prometheus that relabels `instance` to the node name (`prometheus`), and one that labels as
kube-prometheus-stack does (`prometheus_labelled_as_kube_prometheus_stack`); `promtool(...)`
runs Prometheus's checker to its end. `RATIOS` are the derived metrics node-exporter's
collectors give every node (`metrics_without_psi()`: less PSI where the kernel has none);
`wait_for(view, done)` refreshes a metric view until its columns are `done`.

Each process (a `tests.processes.Process`) gets a free port, its own files under a test tmp
dir, and is stopped by the test that started it. Missing binaries fail the test with what to
install: `make test` installs them (scripts/ensure-debs.sh), so a skip here would only hide that
the real path went untested.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tas.metrics import RefreshingMetricView
from tas.types import MetricColumns, MetricName
from tests.processes import Process, free_port

NODE_EXPORTER = "prometheus-node-exporter"
PROMETHEUS = "prometheus"
PROMTOOL = "promtool"
#: The derived metrics of every node, from node-exporter's pressure, cpu and meminfo collectors.
RATIOS = [
    MetricName(m)
    for m in (
        "cpu_pressure",
        "memory_pressure",
        "io_pressure",
        "cpu_utilization",
        "memory_utilization",
    )
]


def binary(name: str) -> str:
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if path is None:
        pytest.fail(
            f"{name} is not installed: run scripts/ensure-debs.sh as root "
            f"(or apt-get install prometheus prometheus-node-exporter)"
        )
    return path


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary(PROMTOOL), *args], capture_output=True, text=True, timeout=60, cwd=cwd, check=False
    )


def node_exporter(textfile_dir: Path, log: Path, *, host: str = "127.0.0.1") -> Process:
    """A node-exporter with only what the derived metrics need, plus the textfile collector,
    on `host` (any loopback address: 127.0.0.2 stands for a second node's IP)."""
    port = free_port()
    args = [
        binary(NODE_EXPORTER),
        f"--web.listen-address={host}:{port}",
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={textfile_dir}",
        "--collector.pressure",
        "--collector.cpu",
        "--collector.meminfo",
    ]
    return Process(args, f"http://{host}:{port}", "/metrics", log)


def prometheus(
    targets: dict[str, str], workdir: Path, *, tls: tuple[Path, Path, Path] | None = None
) -> Process:
    """A Prometheus scraping `targets` (node -> host:port) every second, `instance` = node.

    With `tls` (CA file, certificate, key) it serves HTTPS only (`--web.config.file`), with a
    certificate that CA signed."""
    static = "\n".join(
        f"      - targets: ['{address}']\n        labels: {{tas_node: '{node}'}}"
        for node, address in targets.items()
    )
    config = workdir / "prometheus.yml"
    config.write_text(
        f"""\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node
    static_configs:
{static}
    relabel_configs:
      - source_labels: [tas_node]
        target_label: instance
      - regex: tas_node
        action: labeldrop
"""
    )
    return _prometheus_serving(config, workdir, tls=tls)


def prometheus_labelled_as_kube_prometheus_stack(addresses: list[str], workdir: Path) -> Process:
    """A Prometheus scraping node-exporters at `addresses` (host:port) every second, each
    series labelled as kube-prometheus-stack's node-exporter ServiceMonitor labels it: no
    relabeling, so `instance` is the target's `IP:port`; `job` is `node-exporter` (the
    Service's `jobLabel`) and the endpoint's `namespace`, `pod`, `service`, `endpoint` and
    `container` labels; no label names a node."""
    static = "\n".join(
        f"      - targets: ['{address}']\n"
        f"        labels: {{namespace: monitoring, pod: prometheus-node-exporter-{index},"
        " service: prometheus-node-exporter, endpoint: http-metrics,"
        " container: node-exporter}"
        for index, address in enumerate(addresses)
    )
    config = workdir / "prometheus.yml"
    config.write_text(
        f"""\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node-exporter
    static_configs:
{static}
"""
    )
    return _prometheus_serving(config, workdir)


def _prometheus_serving(
    config: Path, workdir: Path, *, tls: tuple[Path, Path, Path] | None = None
) -> Process:
    port = free_port()
    args = [
        binary(PROMETHEUS),
        f"--config.file={config}",
        f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    if tls is None:
        return Process(args, f"http://127.0.0.1:{port}", "/-/ready", workdir / "prometheus.log")
    ca_file, cert_file, key_file = tls
    web = workdir / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {cert_file}\n  key_file: {key_file}\n")
    return Process(
        [*args, f"--web.config.file={web}"],
        f"https://127.0.0.1:{port}",
        "/-/ready",
        workdir / "prometheus.log",
        verify=ssl.create_default_context(cafile=str(ca_file)),
    )


def psi_available() -> bool:
    # The files can exist yet refuse reads when the kernel was booted with psi=0.
    try:
        return Path("/proc/pressure/cpu").read_text().startswith("some")
    except OSError:
        return False


def metrics_without_psi() -> list[MetricName]:
    if psi_available():
        return RATIOS
    return [m for m in RATIOS if not m.endswith("_pressure")]


def wait_for(
    view: RefreshingMetricView,
    done: Callable[[MetricColumns], bool],
    *,
    timeout: float = 30.0,
    pause: float = 0.5,
) -> MetricColumns:
    """Refresh until `done(columns)`; fail with the last columns after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        view.refresh_once()
        columns = view.columns()
        if done(columns):
            return columns
        if time.monotonic() > deadline:
            pytest.fail(f"not reached in {timeout}s; columns: {columns}; failing: {view.failing}")
        time.sleep(pause)
