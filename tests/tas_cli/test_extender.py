"""The extender's command line: flags, refusals, and a real `python -m extender` process.

Covered (the shared argument types are in test_common.py): refusing to start without TLS
files or --insecure-http, with a clear message; a TAS command line without --cacert refusing to
start when TAS's default CA file is missing (never serving TLS without client authentication),
and this project's flags serving TLS without a client CA only with a logged warning;
`tas extender` registers the same options; a real process serving the health demo from policy
files and textfile metrics, ready only after policies and a first refresh, reloading an edited
policy file, and reporting and skipping an invalid file while the valid policies keep working.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tas.adapters.metrics.textfile import write_node_series
from tas_cli import extender as cli
from tas_cli.main import build_parser, main
from tests.certificates import CertificateAuthority
from tests.extender.support import HEALTH_POLICY, args_body, extender_process
from tests.k8s_emulator import KubeEmulator
from tests.processes import free_port
from tests.waiting import eventually


def test_starting_without_tls_or_insecure_http_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["extender", "--policies", str(HEALTH_POLICY), "--metrics", f"textfile:{tmp_path}"])
    assert code == 2
    assert "refusing to serve without TLS" in capsys.readouterr().err


@pytest.fixture(scope="module")
def server_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A server certificate and key, and the CA that signed them."""
    ca = CertificateAuthority(tmp_path_factory.mktemp("pki"), "tas-ca")
    server = ca.issue("tas-extender", server=True)
    return server.cert, server.key, ca.files.cert


def test_a_tas_command_line_without_cacert_refuses_to_start_when_tas_s_ca_is_missing(
    tmp_path: Path, server_files: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # TAS's --cacert defaulted to /etc/kubernetes/pki/ca.crt and it always required client
    # certificates; serving TLS to anyone instead would drop that guarantee without a word.
    assert not Path("/etc/kubernetes/pki/ca.crt").exists()
    cert, key, _ = server_files
    argv = ["--syncPeriod=2s", f"--cert={cert}", f"--key={key}", "--v=2",
            "--policies", str(HEALTH_POLICY), "--metrics", f"textfile:{tmp_path}"]  # fmt: skip
    assert main(["extender", *argv]) == 2
    err = capsys.readouterr().err
    assert "--cacert /etc/kubernetes/pki/ca.crt (TAS's default" in err
    assert "pass --cacert FILE" in err


def _started_log(argv: list[str], tmp_path: Path, port: int) -> str:
    """The log of a real extender process until it says it serves (then it is stopped)."""
    args = [*argv, "--listen", f"127.0.0.1:{port}",
            "--policies", str(HEALTH_POLICY), "--metrics", f"textfile:{tmp_path}"]  # fmt: skip
    with extender_process(args, port, tmp_path / "extender.log") as process:
        process.start(ready=lambda: "Extender serving on" in process.output())
    return process.output()


def test_serving_tls_without_a_client_ca_is_logged_as_a_warning(
    tmp_path: Path, server_files: tuple[Path, Path, Path]
) -> None:
    cert, key, _ = server_files
    text = _started_log(["--cert", str(cert), "--key", str(key)], tmp_path, free_port())
    (line,) = [line for line in text.splitlines() if "WITHOUT client authentication" in line]
    assert "WARNING" in line
    assert "--cacert FILE" in line


def test_serving_mtls_logs_no_warning_about_client_authentication(
    tmp_path: Path, server_files: tuple[Path, Path, Path]
) -> None:
    cert, key, ca = server_files
    argv = ["--cert", str(cert), "--key", str(key), "--cacert", str(ca)]
    text = _started_log(argv, tmp_path, free_port())
    assert "Extender serving on https://" in text
    assert "client authentication" not in text


def test_a_bad_metrics_source_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--policies", str(HEALTH_POLICY), "--metrics", "bogus:x", "--insecure-http"]
    assert main(["extender", *argv]) == 2
    assert "--metrics 'bogus:x'" in capsys.readouterr().err


def test_tas_extender_offers_the_same_options() -> None:
    args = build_parser(load=["extender"]).parse_args(
        ["extender", "--policies", "p", "--metrics", "textfile:d", "--insecure-http",
         "--sync-period", "500ms", "--score-mode", "rank", "--tas-compat-failed-nodes"]
    )  # fmt: skip
    assert args.handler is cli.run
    assert args.sync_period == 0.5
    assert args.score_mode == "rank"
    assert args.tas_compat_failed_nodes is True
    assert args.max_body_bytes == 64 * 1024 * 1024


# -- a real process ---------------------------------------------------------------------------


@pytest.fixture
def policy_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "policies"
    directory.mkdir()
    (directory / "health.yaml").write_text(HEALTH_POLICY.read_text())
    return directory


@pytest.fixture
def served(tmp_path: Path, policy_dir: Path) -> Iterator[tuple[httpx.Client, Path]]:
    metrics_dir = tmp_path / "metrics"
    for node, value in {"A": 0, "B": 1, "C": 0}.items():
        write_node_series(metrics_dir, node, {"node_health_metric": value})
    port = free_port()
    args = ["--policies", str(policy_dir), "--metrics", f"textfile:{metrics_dir}",
            "--listen", f"127.0.0.1:{port}", "--insecure-http",
            "--sync-period", "200ms"]  # fmt: skip
    with extender_process(args, port, tmp_path / "extender.log") as process:
        process.start()
        with httpx.Client(base_url=process.url, timeout=10) as client:
            yield client, process.log


def _filter(client: httpx.Client) -> dict[str, object]:
    response = client.post("/scheduler/filter", json=args_body(names=["A", "B", "C"]))
    assert response.status_code == 200
    result: dict[str, object] = response.json()
    return result


def _logged(log: Path, text: str) -> None:
    """Return once the extender's log holds `text`; fail with the log's tail after 10 s."""
    eventually(
        lambda: text in log.read_text(),
        10,
        what=f"{text!r} in the log",
        poll=0.1,
        state=lambda: log.read_text()[-4000:],
    )


def test_the_process_serves_the_health_demo_and_logs_like_tas(
    served: tuple[httpx.Client, Path],
) -> None:
    client, log = served
    assert _filter(client)["NodeNames"] == ["A", "C"]
    text = log.read_text()
    assert "Serving plain HTTP (--insecure-http): for development only" in text
    _logged(log, "Filtered nodes available for demo-policy: A C")
    assert "B violating demo-policy: health_metric Equals 1 (value 1)" in log.read_text()


def test_an_edited_policy_file_is_reloaded_and_an_invalid_one_is_skipped(
    served: tuple[httpx.Client, Path], policy_dir: Path
) -> None:
    client, log = served
    edited = HEALTH_POLICY.read_text().replace("target: 1", "target: 0")
    (policy_dir / "health.yaml").write_text(edited)
    # Now A and C (value 0) violate, and B (value 1) no longer does.
    eventually(lambda: _filter(client)["NodeNames"] == ["B"], 10, what="the edit applied", poll=0.1)
    (policy_dir / "broken.yaml").write_text("kind: TASPolicy\nmetadata: {name: broken}\n")
    _logged(log, "Invalid policy skipped")
    assert "broken.yaml" in log.read_text()
    assert _filter(client)["NodeNames"] == ["B"]


def test_without_policies_flag_the_extender_follows_the_clusters_taspolicies(
    tmp_path: Path, kube_emulator: KubeEmulator
) -> None:
    document = yaml.safe_load(HEALTH_POLICY.read_text())
    namespace = document["metadata"]["namespace"]
    kube_emulator.create("taspolicies", document, namespace=namespace)
    metrics_dir = tmp_path / "metrics"
    for node, value in {"A": 0, "B": 1, "C": 0}.items():
        write_node_series(metrics_dir, node, {"node_health_metric": value})
    port = free_port()
    args = ["--kubeconfig", str(kube_emulator.write_kubeconfig(tmp_path / "kubeconfig")),
            "--metrics", f"textfile:{metrics_dir}", "--listen", f"127.0.0.1:{port}",
            "--insecure-http", "--sync-period", "200ms"]  # fmt: skip
    with extender_process(args, port, tmp_path / "extender.log") as process:
        process.start()
        with httpx.Client(base_url=process.url, timeout=10) as client:
            assert _filter(client)["NodeNames"] == ["A", "C"]
            # An update in the cluster takes effect: now value 0 violates, value 1 does not.
            rules = document["spec"]["strategies"]["dontschedule"]["rules"]
            rules[0]["target"] = 0
            kube_emulator.merge(
                "taspolicies",
                "demo-policy",
                {"spec": {"strategies": {"dontschedule": {"rules": rules}}}},
                namespace=namespace,
            )
            process.eventually(
                lambda: _filter(client)["NodeNames"] == ["B"], "the cluster's edit applied", 10
            )
            # Only policies, pods and nodes for recent placements, and (no Prometheus here) the
            # pods' usage from the resource metrics API: its RBAC allows nothing else, and
            # never a kubelet through the node proxy.
            paths = {r.path for r in kube_emulator.requests}
            allowed = {
                "/apis/telemetry.intel.com/v1alpha1/taspolicies",
                "/api/v1/pods",
                "/api/v1/nodes",
                "/apis/metrics.k8s.io/v1beta1/pods",
            }
            assert paths <= allowed, paths


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["tas", "extender"], id="tas extender"),
        pytest.param([sys.executable, "-m", "extender"], id="python -m extender"),
    ],
)
def test_an_intel_tas_command_line_starts_with_a_deprecation_notice_per_flag(
    tmp_path: Path, policy_dir: Path, command: list[str]
) -> None:
    metrics_dir = tmp_path / "metrics"
    for node, value in {"A": 0, "B": 1, "C": 0}.items():
        write_node_series(metrics_dir, node, {"node_health_metric": value})
    port = free_port()
    executable = [str(Path(sys.executable).parent / "tas"), *command[1:]]
    tas_flags = ["--unsafe", f"--port={port}", "--syncPeriod=2s", "--v=2"]
    args = [*tas_flags, "--policies", str(policy_dir), "--metrics", f"textfile:{metrics_dir}"]
    started = executable if command[0] == "tas" else command
    with extender_process(args, port, tmp_path / "tas.log", command=started) as process:
        process.start()
        with httpx.Client(base_url=process.url, timeout=10) as client:
            assert _filter(client)["NodeNames"] == ["A", "C"]
        assert process.terminate() == 0
    text = process.output()
    for old, new in [
        ("--unsafe", "--insecure-http"),
        (f"--port={port}", f"--listen 0.0.0.0:{port}"),
        ("--syncPeriod=2s", "--sync-period 2s"),
        ("--v=2", "--log-level info"),
    ]:
        notices = [line for line in text.splitlines() if "WARNING" in line and old in line]
        assert len(notices) == 1, f"one notice for {old}: {text}"
        assert new in notices[0]


def test_a_tas_flag_with_a_bad_value_is_an_argument_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["extender", "--port=http", "--metrics", "textfile:/m"])
    assert exited.value.code == 2
    assert "--port" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("share", "kept"),
    [
        pytest.param([], ["A", "B", "C"], id="default: every node violating fails open"),
        pytest.param(["--max-violating-node-share", "1"], [], id="share 1: never fails open"),
    ],
)
def test_the_breaker_share_flag_reaches_the_extender(
    tmp_path: Path, policy_dir: Path, share: list[str], kept: list[str]
) -> None:
    metrics_dir = tmp_path / "metrics"
    for node in "ABC":
        write_node_series(metrics_dir, node, {"node_health_metric": 2})
    port = free_port()
    args = ["--policies", str(policy_dir), "--metrics", f"textfile:{metrics_dir}",
            "--listen", f"127.0.0.1:{port}", "--insecure-http", *share]  # fmt: skip
    with extender_process(args, port, tmp_path / "extender.log") as process:
        process.start()
        with httpx.Client(base_url=process.url, timeout=10) as client:
            assert _filter(client)["NodeNames"] == kept
