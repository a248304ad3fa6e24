"""HTTPS and mTLS on a real server, with certificates made in the test.

Covered: HTTPS with a server certificate; TLS 1.2 as the minimum (a TLS 1.1 client is refused);
with a CA file, a client without a certificate or with one from another CA is refused and a
client with a certificate from that CA is served; flag combinations and unusable files are
clear errors.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import warnings
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from extender.tls import TLSConfigError, TLSFiles, server_ssl_context, tls_files
from tests.extender.support import args_body, health_policies, running_extender


@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(
    directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> Issued:
    cert_path = directory / f"{stem}.crt"
    key_path = directory / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return Issued(cert_path, key_path)


class CertificateAuthority:
    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )
        self.files = _write(directory, name, self.cert, self.key)

    def issue(self, name: str, *, server: bool) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            )
        return _write(self.directory, name, builder.sign(self.key, hashes.SHA256()), key)


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
