"""HTTPS and mTLS on a real server, with certificates made in the test, and their rotation.

Covered: HTTPS with a server certificate; TLS 1.2 as the minimum (a TLS 1.1 client is refused);
with a CA file, a client without a certificate or with one from another CA is refused and a
client with a certificate from that CA is served; flag combinations and unusable files are
clear errors.

Rotation (extender.cert_reload), with the files in a directory laid out and updated as the
kubelet writes a Secret volume: a real server serves the new certificate on the next connection
within seconds, without a restart, and its expiry gauge follows; a broken rotation (a key of
another certificate, a half-written certificate, a CA file that is not PEM) keeps the previous
certificate served, logs an error naming the file, and the next good rotation is loaded; a
failed version is not tried again until the files change; files rewritten in place one after
the other load once they match; a new CA file admits its clients (and, as OpenSSL only adds,
still those of the old one); nothing is reloaded while the files stay the same. A real
`python -m extender` process serves a rotated certificate and exports its expiry on /metrics,
and still stops at SIGTERM with exit code 0.
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from cryptography import x509
from prometheus_client import CollectorRegistry

from extender.app import create_app
from extender.cert_reload import CertificateReloader
from extender.self_metrics import CertificateMetrics
from extender.server import ExtenderServer
from extender.settings import ExtenderSettings
from extender.tls import TLSConfigError, TLSFiles, server_ssl_context, tls_files
from tas.metrics.static import StaticMetricView
from tas.policies.store import PolicyStore
from tests.certificates import CertificateAuthority, Issued
from tests.extender.support import HEALTH_POLICY, args_body, health_policies, running_extender
from tests.processes import Process, free_port
from tests.waiting import eventually


@dataclass(frozen=True)
class Pki:
    ca: CertificateAuthority
    server: Issued
    client: Issued
    stranger: Issued


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority(directory, "tas-ca")
    other = CertificateAuthority(directory, "other-ca")
    return Pki(
        ca=ca,
        server=ca.issue("tas-extender", server=True),
        client=ca.issue("kube-scheduler", server=False),
        stranger=other.issue("stranger", server=False),
    )


def client_context(pki: Pki, client: Issued | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca.files.cert))
    if client is not None:
        context.load_cert_chain(client.cert, client.key)
    return context


def server_context(pki: Pki, *, mutual: bool) -> ssl.SSLContext:
    cacert = pki.ca.files.cert if mutual else None
    return server_ssl_context(TLSFiles(pki.server.cert, pki.server.key, cacert))


def test_https_serves_the_verbs_with_the_server_certificate(pki: Pki) -> None:
    with running_extender(
        policies=health_policies(),
        ssl_context=server_context(pki, mutual=False),
        client_verify=client_context(pki),
    ) as extender:
        assert extender.url.startswith("https://127.0.0.1:")
        response = extender.post("filter", args_body(names=["A"]))
    assert response.status_code == 200
    assert response.json()["NodeNames"] == ["A"]


def test_tls_older_than_1_2_is_refused(pki: Pki) -> None:
    old = client_context(pki)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TLS 1.1 is, rightly, deprecated
        old.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        old.maximum_version = ssl.TLSVersion.TLSv1_1
    assert server_context(pki, mutual=False).minimum_version is ssl.TLSVersion.TLSv1_2
    with (
        running_extender(ssl_context=server_context(pki, mutual=False), client_verify=old) as ext,
        pytest.raises(httpx.ConnectError),
    ):
        ext.client.get("/healthz")


def test_mtls_serves_a_client_with_a_certificate_from_the_ca(pki: Pki) -> None:
    with running_extender(
        policies=health_policies(),
        ssl_context=server_context(pki, mutual=True),
        client_verify=client_context(pki, pki.client),
    ) as extender:
        response = extender.post("prioritize", args_body(names=["A", "B"]))
    assert response.status_code == 200


@pytest.mark.parametrize("who", ["no-certificate", "other-ca"])
def test_mtls_refuses_a_client_without_a_certificate_from_the_ca(pki: Pki, who: str) -> None:
    client = None if who == "no-certificate" else pki.stranger
    with (
        running_extender(
            ssl_context=server_context(pki, mutual=True),
            client_verify=client_context(pki, client),
        ) as extender,
        pytest.raises(httpx.TransportError),
    ):
        extender.client.get("/healthz")


def test_serving_without_tls_files_or_insecure_http_is_refused() -> None:
    with pytest.raises(TLSConfigError, match="--insecure-http"):
        tls_files(cert=None, key=None, cacert=None, insecure_http=False)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param({"cert": "server"}, "--cert and --key must be given together", id="no-key"),
        pytest.param({"key": "server"}, "--cert and --key must be given together", id="no-cert"),
        pytest.param(
            {"cert": "missing", "key": "server"}, "--cert .*: no such file", id="missing-cert"
        ),
        pytest.param(
            {"cert": "server", "key": "server", "cacert": "missing"},
            "--cacert .*: no such file",
            id="missing-ca",
        ),
        pytest.param(
            {"cert": "server", "insecure_http": True}, "cannot be combined", id="both-modes"
        ),
    ],
)
def test_bad_tls_flags_are_clear_errors(
    pki: Pki, tmp_path: Path, flags: dict[str, object], message: str
) -> None:
    files = {"server": pki.server.cert, "missing": tmp_path / "nope.pem"}
    arguments: dict[str, object] = {"cert": None, "key": None, "cacert": None}
    arguments["insecure_http"] = False
    for flag, value in flags.items():
        arguments[flag] = files[value] if isinstance(value, str) else value
    with pytest.raises(TLSConfigError, match=message):
        tls_files(**arguments)  # type: ignore[arg-type]


def test_a_key_that_does_not_match_the_certificate_is_a_clear_error(pki: Pki) -> None:
    with pytest.raises(TLSConfigError, match="cannot load the certificate"):
        server_ssl_context(TLSFiles(pki.server.cert, pki.client.key))


# -- rotation ---------------------------------------------------------------------------------


class SecretVolume:
    """A directory written as the kubelet writes a Secret volume (its AtomicWriter): each key is
    a symlink to `..data/<key>`, `..data` a symlink to a timestamped directory, and an update
    writes a new directory, renames a new `..data` link over the old one (atomic), then removes
    the old directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._versions = 0

    def write(self, contents: Mapping[str, bytes]) -> None:
        self._versions += 1
        version = self.root / f"..2026_01_01_00_00_00.{self._versions}"
        version.mkdir()
        for key, data in contents.items():
            (version / key).write_bytes(data)
        data_link = self.root / "..data"
        previous = data_link.resolve() if data_link.is_symlink() else None
        os.symlink(version.name, self.root / "..data_tmp")
        os.replace(self.root / "..data_tmp", data_link)
        for key in contents:
            if not (self.root / key).is_symlink():
                os.symlink(f"..data/{key}", self.root / key)
        if previous is not None:
            for old in previous.iterdir():
                old.unlink()
            previous.rmdir()

    def files(self) -> TLSFiles:
        return TLSFiles(self.root / "tls.crt", self.root / "tls.key", self.root / "ca.crt")


@dataclass(frozen=True)
class Rotation:
    """Server certificates of one CA, in the order they are rotated in."""

    ca: CertificateAuthority
    first: Issued
    second: Issued
    third: Issued
    client: Issued

    def contents(self, server: Issued, *, ca: bytes | None = None) -> dict[str, bytes]:
        return {
            "tls.crt": server.cert.read_bytes(),
            "tls.key": server.key.read_bytes(),
            "ca.crt": ca if ca is not None else self.ca.files.cert.read_bytes(),
        }


@pytest.fixture(scope="module")
def rotation(tmp_path_factory: pytest.TempPathFactory) -> Rotation:
    ca = CertificateAuthority(tmp_path_factory.mktemp("rotation-pki"), "rotation-ca")
    servers = [ca.issue(f"tas-extender-{n}", server=True) for n in (1, 2, 3)]
    return Rotation(ca, *servers, client=ca.issue("scheduler", server=False))


def serial_of(certificate: Path) -> int:
    return x509.load_pem_x509_certificate(certificate.read_bytes()).serial_number


def not_after_of(certificate: Path) -> float:
    return x509.load_pem_x509_certificate(certificate.read_bytes()).not_valid_after_utc.timestamp()


def served_serial(url: str, context: ssl.SSLContext) -> int:
    """The serial of the certificate the server presents on a new connection."""
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    with (
        socket.create_connection((parts.hostname, parts.port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=parts.hostname) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def rotation_client(rotation: Rotation, client: Issued | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(rotation.ca.files.cert))
    chosen = client or rotation.client
    context.load_cert_chain(chosen.cert, chosen.key)
    return context


@dataclass
class Reloading:
    server: ExtenderServer
    reloader: CertificateReloader
    registry: CollectorRegistry

    def reloads(self, result: str) -> float | None:
        return self.registry.get_sample_value(
            "tas_extender_certificate_reloads_total", {"result": result}
        )

    @property
    def expiry(self) -> float | None:
        return self.registry.get_sample_value("tas_extender_certificate_expiry_timestamp_seconds")


@contextmanager
def reloading_server(files: TLSFiles, *, period: float = 0.05) -> Iterator[Reloading]:
    """The real application on a real server whose certificate `files` are watched."""
    registry = CollectorRegistry()
    reloader = CertificateReloader(files, metrics=CertificateMetrics(registry), period=period)
    app = create_app(
        store=PolicyStore(),
        metrics=StaticMetricView(),
        settings=ExtenderSettings(),
        registry=registry,
    )
    with ExtenderServer(
        app, ssl_context=reloader.context, log_level="warning", background=[reloader.watch]
    ) as server:
        yield Reloading(server, reloader, registry)


def test_a_rotated_secret_volume_is_served_on_the_next_connection_without_a_restart(
    rotation: Rotation, tmp_path: Path
) -> None:
    volume = SecretVolume(tmp_path / "tls")
    volume.write(rotation.contents(rotation.first))
    client = rotation_client(rotation)
    with reloading_server(volume.files()) as running:
        url = running.server.url
        assert served_serial(url, client) == serial_of(rotation.first.cert)
        assert running.expiry == not_after_of(rotation.first.cert)
        with httpx.Client(base_url=url, verify=client) as kept_alive:
            assert kept_alive.get("/healthz").status_code == 200
            volume.write(rotation.contents(rotation.second))
            eventually(lambda: served_serial(url, client) == serial_of(rotation.second.cert))
            # An open connection keeps working; mTLS still holds for new ones.
            assert kept_alive.get("/healthz").status_code == 200
        with httpx.Client(base_url=url, verify=client) as fresh:
            assert fresh.get("/healthz").status_code == 200
        assert running.expiry == not_after_of(rotation.second.cert)
        assert running.reloads("loaded") == 1
        assert running.reloads("failed") == 0


def _mismatched_key(rotation: Rotation) -> dict[str, bytes]:
    return {**rotation.contents(rotation.second), "tls.key": rotation.first.key.read_bytes()}


def _half_written(rotation: Rotation) -> dict[str, bytes]:
    contents = rotation.contents(rotation.second)
    return {**contents, "tls.crt": contents["tls.crt"][: len(contents["tls.crt"]) // 2]}


def _ca_not_pem(rotation: Rotation) -> dict[str, bytes]:
    return rotation.contents(rotation.second, ca=b"not a certificate\n")


@pytest.mark.parametrize(
    ("broken", "named"),
    [
        pytest.param(_mismatched_key, "tls.crt with key", id="a key of another certificate"),
        pytest.param(_half_written, "tls.crt", id="a half-written certificate"),
        pytest.param(_ca_not_pem, "the CA file", id="a CA file that is not PEM"),
    ],
)
def test_a_broken_rotation_keeps_the_previous_certificate_served_and_is_logged(
    rotation: Rotation,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    broken: Callable[[Rotation], dict[str, bytes]],
    named: str,
) -> None:
    volume = SecretVolume(tmp_path / "tls")
    volume.write(rotation.contents(rotation.first))
    client = rotation_client(rotation)
    with (
        caplog.at_level(logging.ERROR, logger="extender"),
        reloading_server(volume.files()) as running,
    ):
        url = running.server.url
        volume.write(broken(rotation))
        eventually(lambda: running.reloads("failed") == 1)
        assert served_serial(url, client) == serial_of(rotation.first.cert)
        with httpx.Client(base_url=url, verify=client) as fresh:
            assert fresh.get("/healthz").status_code == 200
        assert running.expiry == not_after_of(rotation.first.cert)
        (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
        message = record.getMessage()
        assert "still serving the previous certificate" in message
        assert f"{named}" in message
        assert str(volume.root) in message  # the path as configured, not the version directory
        # The next good rotation is loaded.
        volume.write(rotation.contents(rotation.third))
        eventually(lambda: served_serial(url, client) == serial_of(rotation.third.cert))
        assert running.expiry == not_after_of(rotation.third.cert)


def test_a_version_that_failed_is_not_tried_again_until_the_files_change(
    rotation: Rotation, tmp_path: Path
) -> None:
    volume = SecretVolume(tmp_path / "tls")
    volume.write(rotation.contents(rotation.first))
    registry = CollectorRegistry()
    reloader = CertificateReloader(volume.files(), metrics=CertificateMetrics(registry))
    volume.write(_mismatched_key(rotation))
    assert [reloader.check() for _ in range(3)] == [False, False, False]
    failed = {"result": "failed"}
    assert registry.get_sample_value("tas_extender_certificate_reloads_total", failed) == 1
    assert reloader.certificate.serial == serial_of(rotation.first.cert)
    volume.write(rotation.contents(rotation.second))
    assert reloader.check() is True
    assert reloader.certificate.serial == serial_of(rotation.second.cert)


def test_files_rewritten_in_place_one_after_the_other_load_once_they_match(
    rotation: Rotation, tmp_path: Path
) -> None:
    # Not a Secret volume: plain files, the certificate copied over first, then the key.
    cert, key, ca = tmp_path / "server.crt", tmp_path / "server.key", tmp_path / "ca.crt"
    cert.write_bytes(rotation.first.cert.read_bytes())
    key.write_bytes(rotation.first.key.read_bytes())
    ca.write_bytes(rotation.ca.files.cert.read_bytes())
    reloader = CertificateReloader(TLSFiles(cert, key, ca))
    assert reloader.check() is False  # nothing changed
    cert.write_bytes(rotation.second.cert.read_bytes())
    assert reloader.check() is False  # the old key does not match the new certificate
    key.write_bytes(rotation.second.key.read_bytes())
    assert reloader.check() is True
    assert reloader.certificate.serial == serial_of(rotation.second.cert)


def test_a_new_ca_file_admits_its_clients_and_still_those_of_the_old_ca(
    rotation: Rotation, tmp_path: Path
) -> None:
    successor = CertificateAuthority(tmp_path, "successor-ca")
    newcomer = successor.issue("new-scheduler", server=False)
    volume = SecretVolume(tmp_path / "tls")
    volume.write(rotation.contents(rotation.first))
    with reloading_server(volume.files()) as running:
        with (
            httpx.Client(
                base_url=running.server.url, verify=rotation_client(rotation, newcomer)
            ) as refused,
            pytest.raises(httpx.TransportError),
        ):
            refused.get("/healthz")
        volume.write(rotation.contents(rotation.first, ca=successor.files.cert.read_bytes()))
        eventually(lambda: running.reloads("loaded") == 1)
        for client in (newcomer, rotation.client):
            verify = rotation_client(rotation, client)
            with httpx.Client(base_url=running.server.url, verify=verify) as admitted:
                assert admitted.get("/healthz").status_code == 200


def test_a_process_serves_a_rotated_certificate_and_exports_its_expiry(
    rotation: Rotation, tmp_path: Path
) -> None:
    volume = SecretVolume(tmp_path / "tls")
    volume.write(rotation.contents(rotation.first))
    files = volume.files()
    assert files.cacert is not None
    port = free_port()
    client = rotation_client(rotation)
    args = [sys.executable, "-m", "extender", "--cert", str(files.cert), "--key", str(files.key),
            "--cacert", str(files.cacert), "--listen", f"127.0.0.1:{port}",
            "--policies", str(HEALTH_POLICY), "--metrics", f"textfile:{tmp_path}"]  # fmt: skip
    url = f"https://127.0.0.1:{port}"

    def expiry() -> float:
        text = httpx.get(f"{url}/metrics", verify=client).text
        (line,) = [
            line
            for line in text.splitlines()
            if line.startswith("tas_extender_certificate_expiry_timestamp_seconds ")
        ]
        return float(line.split()[1])

    with Process(args, url, "/readyz", tmp_path / "extender.log", verify=client) as process:
        process.start()
        assert served_serial(url, client) == serial_of(rotation.first.cert)
        assert expiry() == not_after_of(rotation.first.cert)
        volume.write(rotation.contents(rotation.second))
        # Checked every RELOAD_SECONDS (5 s).
        eventually(lambda: served_serial(url, client) == serial_of(rotation.second.cert), 10)
        assert expiry() == not_after_of(rotation.second.cert)
        assert "Serving the renewed certificate" in process.output()
        assert process.terminate() == 0, process.output()
