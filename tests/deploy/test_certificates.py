"""scripts/gen-certs.sh: the certificates of the extender's mTLS.

Covered: it makes a CA, a server and two client certificates (kube-scheduler's, and
Prometheus's for the extender's /metrics) that complete a real mTLS handshake with Python's
`ssl`, with private keys kept private; the extender's probes pass mTLS with the extender's own
certificate; it refuses to replace an existing CA or take unsafe names; its CA outlives every
certificate it signs; it names a custom namespace and service; its output directory is ignored
by git.
"""

from __future__ import annotations

import contextlib
import http.server
import shutil
import socket
import ssl
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from tests.deploy.pipeline import ROOT
from tests.deploy.shipped import (
    GEN_CERTS,
    NAMESPACE,
    run,
    tas_containers,
)

needs_openssl = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="openssl is not installed"
)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    out = tmp_path_factory.mktemp("certs") / "out"
    result = run([str(GEN_CERTS), str(out)])
    assert result.returncode == 0, result.stderr
    return out


def _certificate(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_gen_certs_signs_the_server_and_client_certificates_with_its_ca(
    certificates: Path,
) -> None:
    ca = _certificate(certificates / "ca.crt")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    server = _certificate(certificates / "extender.crt")
    client = _certificate(certificates / "client.crt")
    scraper = _certificate(certificates / "scraper.crt")  # Prometheus, for the extender's /metrics
    for leaf in (server, client, scraper):
        leaf.verify_directly_issued_by(ca)
        assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) >= {
        "tas-extender",
        f"tas-extender.{NAMESPACE}",
        f"tas-extender.{NAMESPACE}.svc",
        f"tas-extender.{NAMESPACE}.svc.cluster.local",
        "localhost",
    }
    usage = server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usage
    assert ExtendedKeyUsageOID.CLIENT_AUTH in usage  # the pod's own health probe
    for leaf in (client, scraper):
        client_usage = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(client_usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_gen_certs_keeps_private_keys_private(certificates: Path) -> None:
    for key in ("ca.key", "extender.key", "client.key", "scraper.key"):
        assert (certificates / key).stat().st_mode & 0o077 == 0, key


@contextlib.contextmanager
def mtls_server(certificates: Path) -> Iterator[tuple[int, list[str]]]:
    """A one-connection TLS server on 127.0.0.1 that requires a client certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certificates / "extender.crt", certificates / "extender.key")
    context.load_verify_locations(certificates / "ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)
    peers: list[str] = []

    def serve() -> None:
        with contextlib.suppress(OSError), listener:
            connection, _ = listener.accept()
            with context.wrap_socket(connection, server_side=True) as tls:
                peers.append(str((tls.getpeercert() or {}).get("subject")))
                tls.sendall(b"ok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], peers
    finally:
        thread.join(timeout=10)
        listener.close()


def _client_context(certificates: Path, *, with_client_cert: bool = True) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=certificates / "ca.crt")
    if with_client_cert:
        context.load_cert_chain(certificates / "client.crt", certificates / "client.key")
    return context


def test_kube_scheduler_s_client_certificate_completes_mtls_with_the_extender(
    certificates: Path,
) -> None:
    with mtls_server(certificates) as (port, peers):
        host = f"tas-extender.{NAMESPACE}.svc.cluster.local"
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            _client_context(certificates).wrap_socket(raw, server_hostname=host) as tls,
        ):
            assert tls.recv(2) == b"ok"
    (peer,) = peers
    assert "('commonName', 'tas-kube-scheduler')" in peer


def test_a_client_without_a_certificate_is_refused(certificates: Path) -> None:
    with mtls_server(certificates) as (port, _):
        context = _client_context(certificates, with_client_cert=False)
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            pytest.raises((ssl.SSLError, ConnectionError)),
            context.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            tls.recv(2)


class _HealthHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        healthy = self.path in ("/healthz", "/readyz")
        self.send_response(200 if healthy else 503)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def _probe_script(kind: str) -> list[str]:
    (container,) = [c for name, c in tas_containers() if name == "tas-extender"]
    command: list[str] = container[kind]["exec"]["command"]
    return command


@pytest.mark.parametrize(
    ("kind", "path"), [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")]
)
def test_the_extender_probe_passes_mtls_with_the_extenders_own_certificate(
    kind: str, path: str, certificates: Path, tmp_path: Path
) -> None:
    # The Secret as the pod sees it, and an HTTPS server that demands a client certificate.
    tls_dir = tmp_path / "tls"
    tls_dir.mkdir()
    for source, target in (("extender.crt", "tls.crt"), ("extender.key", "tls.key")):
        shutil.copy(certificates / source, tls_dir / target)
    shutil.copy(certificates / "ca.crt", tls_dir / "ca.crt")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_dir / "tls.crt", tls_dir / "tls.key")
    context.load_verify_locations(tls_dir / "ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED
    server = http.server.HTTPServer(("127.0.0.1", 0), _HealthHandler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        command = [
            part.replace("/etc/tas/tls", str(tls_dir)).replace(":9001", f":{port}")
            for part in _probe_script(kind)
        ]
        assert command[0] == "python"
        assert command[-1] == path
        healthy = run([sys.executable, *command[1:]])
        assert healthy.returncode == 0, healthy.stderr
        broken = run([sys.executable, *command[1:-1], "/broken"])
        assert broken.returncode != 0
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@needs_openssl
def test_gen_certs_refuses_to_replace_an_existing_ca(tmp_path: Path) -> None:
    assert run([str(GEN_CERTS), str(tmp_path)]).returncode == 0
    before = (tmp_path / "ca.crt").read_bytes()
    again = run([str(GEN_CERTS), str(tmp_path)])
    assert again.returncode == 2
    assert "refusing to replace a CA" in again.stderr
    assert (tmp_path / "ca.crt").read_bytes() == before


@needs_openssl
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--namespace", "x;touch INJECTED"], id="shell in namespace"),
        pytest.param(["--namespace", "Upper"], id="not a DNS label"),
        pytest.param(["--service", "a.b"], id="dot in service"),
        pytest.param(["--days", "0"], id="zero days"),
        pytest.param(["--days", "1d"], id="days not a number"),
    ],
)
def test_gen_certs_refuses_unsafe_names(args: list[str], tmp_path: Path) -> None:
    result = run([str(GEN_CERTS), *args, str(tmp_path / "out")], cwd=tmp_path)
    assert result.returncode == 2
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "INJECTED").exists()


def test_gen_certs_ca_outlives_every_certificate_it_signs(certificates: Path) -> None:
    # Leaves are renewed under the same CA; a CA that expired with them would take every
    # client down at once, and its expiry would go unseen behind theirs.
    ca = _certificate(certificates / "ca.crt").not_valid_after_utc
    for leaf in ("extender", "client", "scraper"):
        expires = _certificate(certificates / f"{leaf}.crt").not_valid_after_utc
        assert (ca - expires).days >= 365 * 5, leaf


@needs_openssl
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--ca-days", "365"], id="CA as long as the leaves"),
        pytest.param(["--days", "800", "--ca-days", "700"], id="CA shorter"),
        pytest.param(["--ca-days", "x"], id="not a number"),
    ],
)
def test_gen_certs_refuses_a_ca_that_would_not_outlive_its_certificates(
    args: list[str], tmp_path: Path
) -> None:
    result = run([str(GEN_CERTS), *args, str(tmp_path / "out")])
    assert result.returncode == 2
    assert "ca-days" in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_certificates_directory_is_ignored_by_git() -> None:
    ignored = run(["git", "check-ignore", "-q", "tas-certs/ca.key"], cwd=ROOT)
    assert ignored.returncode == 0


@needs_openssl
def test_gen_certs_names_a_custom_namespace_and_service(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run([str(GEN_CERTS), "--namespace", "tas", "--service", "ext", str(out)])
    assert result.returncode == 0, result.stderr
    server = _certificate(out / "extender.crt")
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "ext.tas.svc.cluster.local" in names.get_values_for_type(x509.DNSName)
