"""Reading a certificate's serial and validity without `cryptography` (extender.certificate).

Covered: the serial, notBefore and notAfter that `cryptography` reads, for EC and RSA keys
(short and long DER lengths), UTCTime dates on both sides of 2000 and GeneralizedTime from 2050
on, a v1 certificate (no version field), a large serial; the first certificate of a chain file,
text around the PEM block; no PEM block, bad base64, truncated DER and a wrong structure are
`CertificateFormatError`s.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes
from cryptography.x509.oid import NameOID

from extender.certificate import CertificateFormatError, read_certificate, read_der

UTC = datetime.UTC


def _ec() -> CertificateIssuerPrivateKeyTypes:
    return ec.generate_private_key(ec.SECP256R1())


def _rsa() -> CertificateIssuerPrivateKeyTypes:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def make_certificate(
    *,
    not_before: datetime.datetime = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
    not_after: datetime.datetime = datetime.datetime(2025, 6, 7, 8, 9, 10, tzinfo=UTC),
    serial: int = 0x1234_5678_9ABC,
    key: Callable[[], CertificateIssuerPrivateKeyTypes] = _ec,
    version: x509.Version = x509.Version.v3,
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tas-extender")])
    private = key()
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(serial)
        .not_valid_before(not_before)
        .not_valid_after(not_after)
    )
    if version is x509.Version.v1:
        # cryptography writes v3; a v1 certificate has no [0] version field at all.
        builder._version = x509.Version.v1  # type: ignore[attr-defined]
    return builder.sign(private, hashes.SHA256())


def pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


@pytest.mark.parametrize(
    "apply",
    [
        pytest.param({}, id="EC key, UTCTime"),
        pytest.param({"key": _rsa}, id="RSA key (long DER lengths)"),
        pytest.param(
            {"not_after": datetime.datetime(2051, 2, 3, 4, 5, 6, tzinfo=UTC)},
            id="GeneralizedTime from 2050",
        ),
        pytest.param(
            {"not_before": datetime.datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC)},
            id="UTCTime before 2000",
        ),
        pytest.param({"serial": 2**159 - 1}, id="a 20-byte serial"),
        pytest.param({"version": x509.Version.v1}, id="v1, no version field"),
    ],
)
def test_serial_and_validity_are_those_cryptography_reads(apply: dict[str, object]) -> None:
    certificate = make_certificate(**apply)  # type: ignore[arg-type]
    info = read_certificate(pem(certificate))
    assert info.serial == certificate.serial_number
    assert info.not_before == certificate.not_valid_before_utc.timestamp()
    assert info.not_after == certificate.not_valid_after_utc.timestamp()
    assert read_der(certificate.public_bytes(serialization.Encoding.DER)) == info


def test_the_first_certificate_of_a_chain_is_read_and_text_around_it_ignored() -> None:
    served = make_certificate(serial=1)
    issuer = make_certificate(serial=2)
    text = b"subject=CN = tas-extender\n" + pem(served) + b"comment\n" + pem(issuer)
    assert read_certificate(text).serial == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"", "no -----BEGIN CERTIFICATE-----", id="empty"),
        pytest.param(
            b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            "no -----BEGIN CERTIFICATE-----",
            id="a key file",
        ),
        pytest.param(
            b"-----BEGIN CERTIFICATE-----\nMII=A\n-----END CERTIFICATE-----\n",
            "not base64",
            id="bad base64",
        ),
    ],
)
def test_what_is_no_pem_certificate_is_a_format_error(content: bytes, message: str) -> None:
    with pytest.raises(CertificateFormatError, match=message):
        read_certificate(content)


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        pytest.param(lambda der: der[:40], "truncated", id="truncated"),
        pytest.param(lambda der: b"\x31" + der[1:], "Certificate: tag 0x31", id="not a SEQUENCE"),
        pytest.param(lambda der: der[:1], "truncated at byte 0", id="one byte"),
        pytest.param(lambda der: b"\x30\x85" + der[2:], "bad length", id="5-byte length"),
    ],
)
def test_der_that_is_not_a_certificate_is_a_format_error(
    cut: Callable[[bytes], bytes], message: str
) -> None:
    der = make_certificate().public_bytes(serialization.Encoding.DER)
    with pytest.raises(CertificateFormatError, match=message):
        read_der(cut(der))
