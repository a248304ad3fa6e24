"""docker-compose.yml: the demo's Compose file.

There is no Docker engine here, so what a user relies on is checked directly: it is a valid
Compose file (the `compose-spec` parser; `docker compose config` too where the plugin exists),
local files exist, ports bind 127.0.0.1, images are pinned, the extender and controller read the
shipped policies and Prometheus, and (when real binaries are present) node-exporter and
Prometheus serve the demo metrics per node with the shipped configuration.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from compose_spec import PyCompose

from tests.deploy.pipeline import DEPLOY, ROOT
from tests.deploy.shipped import (
    IMAGE,
    SET_HEALTH,
    compose_file,
    run,
)
from tests.processes import free_port


def test_docker_compose_files_exist_ports_are_local_and_images_pinned() -> None:
    services = compose_file()["services"]
    assert {"prometheus", "node-exporter", "extender", "controller"} <= set(services)
    for name, service in services.items():
        image = service.get("image", "")
        assert ":" in image, name
        assert not image.endswith(":latest"), name
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)
        for volume in service.get("volumes", []):
            source = str(volume).split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), (name, source)
        if "build" in service:
            assert (ROOT / service["build"] / "Dockerfile").exists()
            assert service["image"] == IMAGE
    textfile = services["node-exporter"]
    assert "./deploy/compose/metrics:/textfile:ro" in textfile["volumes"]
    assert "--collector.textfile.directory=/textfile" in textfile["command"]


def test_the_compose_extender_reads_the_shipped_policies_and_prometheus() -> None:
    services = compose_file()["services"]
    for name in ("extender", "controller"):
        command = services[name]["command"]
        policies = command[command.index("--policies") + 1]
        assert f"./deploy/policies:{policies}:ro" in services[name]["volumes"]
        assert command[command.index("--metrics") + 1] == "prometheus:http://prometheus:9090"
    request = json.loads((DEPLOY / "compose" / "filter-request.json").read_text())
    assert {f"{n}.prom" for n in request["NodeNames"]} == {
        p.name for p in (DEPLOY / "compose" / "metrics").glob("*.prom")
    }


def interpolate(text: str) -> str:
    """Compose's `${VAR}` / `${VAR:-default}` substitution, from an empty environment."""
    return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}", lambda m: m[1] or "", text)


def test_docker_compose_yml_is_a_valid_compose_file() -> None:
    text = interpolate((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    assert "${" not in text
    compose = PyCompose.from_yaml(text.replace("~/", "/home/user/"))
    assert set(compose.service_names()) == set(compose_file()["services"])


def test_the_compose_validity_check_catches_a_misspelt_key() -> None:
    text = interpolate((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match="read_onyl"):
        PyCompose.from_yaml(text.replace("~/", "/home/user/").replace("read_only:", "read_onyl:"))


def _docker_compose_works() -> bool:
    if shutil.which("docker") is None:
        return False
    return run(["docker", "compose", "version"]).returncode == 0


@pytest.mark.skipif(
    not _docker_compose_works(), reason="the docker compose plugin is not installed here"
)
def test_docker_compose_accepts_the_file() -> None:
    result = run(["docker", "compose", "--file", str(ROOT / "docker-compose.yml"), "config", "-q"])
    assert result.returncode == 0, result.stderr


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=2) as response:
        body: bytes = response.read()
        return body.decode()


def _wait_for(check: Any, *, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = check()
        except (OSError, ValueError, KeyError, AssertionError) as error:
            last = error
        else:
            if result:
                return result
        time.sleep(0.2)
    raise AssertionError(f"timed out; last error: {last!r}")


@contextlib.contextmanager
def running(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as output:
        process = subprocess.Popen(args, stdout=output, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _binary(*names: str) -> str | None:
    return next((found for name in names if (found := shutil.which(name))), None)


@pytest.mark.integration
def test_the_compose_metrics_reach_prometheus_labelled_by_node(tmp_path: Path) -> None:
    exporter = _binary("prometheus-node-exporter", "node_exporter")
    prometheus = _binary("prometheus")
    if exporter is None or prometheus is None:
        pytest.skip("prometheus and node-exporter are not installed (scripts/ensure-debs.sh)")
    metrics = tmp_path / "metrics"
    shutil.copytree(DEPLOY / "compose" / "metrics", metrics)
    result = run([str(SET_HEALTH), "--local", str(metrics), "node-c", "2"])
    assert result.returncode == 0, result.stderr
    exporter_port, prometheus_port = free_port(), free_port()
    config = yaml.safe_load((DEPLOY / "compose" / "prometheus.yml").read_text())
    config["global"]["scrape_interval"] = "1s"
    (job,) = config["scrape_configs"]
    job["static_configs"] = [{"targets": [f"127.0.0.1:{exporter_port}"]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    exporter_args = [
        exporter,
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={metrics}",
        f"--web.listen-address=127.0.0.1:{exporter_port}",
    ]
    prometheus_args = [
        prometheus,
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'data'}",
        f"--web.listen-address=127.0.0.1:{prometheus_port}",
    ]
    with (
        running(exporter_args, tmp_path / "exporter.log"),
        running(prometheus_args, tmp_path / "prometheus.log"),
    ):
        query = urllib.parse.quote("node_health_metric")
        url = f"http://127.0.0.1:{prometheus_port}/api/v1/query?query={query}"

        def three_nodes() -> dict[str, str]:
            results = json.loads(_get(url))["data"]["result"]
            values = {r["metric"]["instance"]: r["value"][1] for r in results}
            return values if len(values) == 3 else {}

        assert _wait_for(three_nodes) == {"node-a": "0", "node-b": "1", "node-c": "2"}
