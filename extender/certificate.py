"""What the extender reports of the certificate it serves: its serial number and validity.

The standard library loads certificates into an `ssl.SSLContext` but tells nothing of a server
certificate's dates (`SSLContext.get_ca_certs` lists CA certificates only, and
`ssl._ssl._test_decode_cert` is a private test helper), and `cryptography` is a test
dependency only. So this module reads the few DER fields it needs itself: a certificate is a
SEQUENCE whose first element, `tbsCertificate`, holds in order an optional `[0]` version, the
serial number (INTEGER), the signature algorithm, the issuer and the validity (two times: UTCTime
or GeneralizedTime, RFC 5280 section 4.1). Only the lengths of the fields in between are read,
never their contents.

Errors:
    CertificateFormatError      not a PEM certificate, or DER that does not hold those fields
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from dataclasses import dataclass

_PEM = re.compile(
    rb"-----BEGIN CERTIFICATE-----\s*(?P<body>[A-Za-z0-9+/=\s]+?)\s*-----END CERTIFICATE-----"
)

_SEQUENCE = 0x30
_INTEGER = 0x02
_VERSION = 0xA0  # [0] EXPLICIT, constructed
_UTC_TIME = 0x17
_GENERALIZED_TIME = 0x18


class CertificateFormatError(ValueError):
    """The bytes are not a certificate this module can read; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class CertificateInfo:
    serial: int
    #: notBefore and notAfter, as Unix seconds.
    not_before: float
    not_after: float


def read_certificate(pem: bytes) -> CertificateInfo:
    """The serial and validity of the first certificate in `pem` (a certificate file, whose
    first certificate is the one served; text around the PEM blocks is ignored)."""
    match = _PEM.search(pem)
    if match is None:
        raise CertificateFormatError("no -----BEGIN CERTIFICATE----- block")
    try:
        der = base64.b64decode(b"".join(match["body"].split()), validate=True)
    except binascii.Error as error:
        raise CertificateFormatError(f"the PEM block is not base64: {error}") from error
    return read_der(der)


def read_der(der: bytes) -> CertificateInfo:
    """The serial and validity of a DER-encoded certificate."""
    tag, start, end = _element(der, 0, len(der))
    _expect(tag, _SEQUENCE, "Certificate")
    tag, start, end = _element(der, start, end)
    _expect(tag, _SEQUENCE, "tbsCertificate")
    tag, field_start, field_end = _element(der, start, end)
    if tag == _VERSION:
        tag, field_start, field_end = _element(der, field_end, end)
    _expect(tag, _INTEGER, "serialNumber")
    serial = int.from_bytes(der[field_start:field_end], "big", signed=True)
    for name in ("signature", "issuer"):
        tag, _, field_end = _element(der, field_end, end)
        _expect(tag, _SEQUENCE, name)
    tag, start, end = _element(der, field_end, end)
    _expect(tag, _SEQUENCE, "validity")
    not_before, start = _time(der, start, end, "notBefore")
    not_after, _ = _time(der, start, end, "notAfter")
    return CertificateInfo(serial=serial, not_before=not_before, not_after=not_after)


def _element(der: bytes, offset: int, limit: int) -> tuple[int, int, int]:
    """(tag, content start, content end) of the DER element at `offset`, within `limit`."""
    if offset + 2 > limit:
        raise CertificateFormatError(f"truncated at byte {offset}")
    tag, length = der[offset], der[offset + 1]
    start = offset + 2
    if length & 0x80:
        count = length & 0x7F
        if not 1 <= count <= 4 or start + count > limit:
            raise CertificateFormatError(f"bad length at byte {offset}")
        length = int.from_bytes(der[start : start + count], "big")
        start += count
    end = start + length
    if end > limit:
        raise CertificateFormatError(f"truncated at byte {offset}: {length} bytes announced")
    return tag, start, end


def _expect(tag: int, wanted: int, name: str) -> None:
    if tag != wanted:
        raise CertificateFormatError(f"{name}: tag 0x{tag:02x}, expected 0x{wanted:02x}")


def _time(der: bytes, offset: int, limit: int, name: str) -> tuple[float, int]:
    """A validity time as Unix seconds, and where the next element starts."""
    tag, start, end = _element(der, offset, limit)
    text = der[start:end].decode("ascii", errors="replace")
    # RFC 5280: UTCTime YYMMDDHHMMSSZ with YY >= 50 meaning 19YY; GeneralizedTime from 2050 on.
    if tag == _UTC_TIME and re.fullmatch(r"\d{12}Z", text):
        century = "19" if int(text[:2]) >= 50 else "20"
        text = century + text
    elif tag != _GENERALIZED_TIME or not re.fullmatch(r"\d{14}Z", text):
        raise CertificateFormatError(f"{name}: not a UTCTime or GeneralizedTime ({text!r})")
    try:
        moment = datetime.datetime.strptime(text, "%Y%m%d%H%M%SZ").replace(tzinfo=datetime.UTC)
    except ValueError as error:
        raise CertificateFormatError(f"{name}: {text!r} is no date: {error}") from error
    return moment.timestamp(), end
