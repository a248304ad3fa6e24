"""TLS for the extender: HTTPS with TLS 1.2 or newer, and mTLS when a CA file is given.

TAS serves HTTPS only and requires client certificates; this project does the same when given
`--cert --key --cacert`. Plain HTTP must be asked for explicitly (`--insecure-http`). HTTPS
without `--cacert` authenticates no client: the command line logs a warning, and a TAS command
line keeps TAS's `--cacert` default (tas_cli.tas_compat), so it still requires client certificates.

Errors:
    TLSConfigError      the flags or files cannot make a server TLS context
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path


class TLSConfigError(ValueError):
    """The TLS flags or files cannot make a server context; the message says which."""


@dataclass(frozen=True, slots=True)
class TLSFiles:
    cert: Path
    key: Path
    #: When set, clients must present a certificate signed by this CA (mTLS).
    cacert: Path | None = None


def tls_files(
    *, cert: Path | None, key: Path | None, cacert: Path | None, insecure_http: bool
) -> TLSFiles | None:
    """Check the flag combination; None means plain HTTP (only with `insecure_http`)."""
    if insecure_http:
        if cert or key or cacert:
            raise TLSConfigError("--insecure-http cannot be combined with --cert/--key/--cacert")
        return None
    if cert is None and key is None:
        raise TLSConfigError(
            "refusing to serve without TLS: give --cert FILE --key FILE (and --cacert FILE to "
            "require client certificates), or --insecure-http for development only"
        )
    if cert is None or key is None:
        raise TLSConfigError("--cert and --key must be given together")
    for flag, path in (("--cert", cert), ("--key", key), ("--cacert", cacert)):
        if path is not None and not path.is_file():
            raise TLSConfigError(f"{flag} {path}: no such file")
    return TLSFiles(cert=cert, key=key, cacert=cacert)


def server_ssl_context(files: TLSFiles) -> ssl.SSLContext:
    """A server context: TLS 1.2 minimum, client certificates required when a CA is given."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(certfile=files.cert, keyfile=files.key)
    except (ssl.SSLError, OSError) as error:
        raise TLSConfigError(
            f"cannot load the certificate {files.cert} with key {files.key}: {error}"
        ) from error
    if files.cacert is not None:
        try:
            context.load_verify_locations(cafile=files.cacert)
        except (ssl.SSLError, OSError) as error:
            raise TLSConfigError(f"cannot load the CA file {files.cacert}: {error}") from error
        context.verify_mode = ssl.CERT_REQUIRED
    return context
