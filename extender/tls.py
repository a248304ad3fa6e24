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


def server_ssl_context(files: TLSFiles, *, read: TLSFiles | None = None) -> ssl.SSLContext:
    """A server context: TLS 1.2 minimum, client certificates required when a CA is given.

    `read`, when given, is where the files are read (their resolved paths, see
    `load_tls_files`)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    load_tls_files(context, files, read=read)
    if files.cacert is not None:
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def load_tls_files(
    context: ssl.SSLContext, files: TLSFiles, *, read: TLSFiles | None = None
) -> None:
    """Load the certificate chain, its key and the CA file into `context`: from then on every
    new handshake uses them. Read from `read` when given (the same files by their resolved
    paths, so that all come from one version of a Secret volume); errors name `files`.

    A failed load may leave `context` half changed (OpenSSL drops the old key when a new
    certificate does not match it): try new files on a scratch context first.
    """
    source = read or files
    try:
        context.load_cert_chain(certfile=source.cert, keyfile=source.key)
    except (ssl.SSLError, OSError) as error:
        raise TLSConfigError(
            f"cannot load the certificate {files.cert} with key {files.key}: {error}"
        ) from error
    if source.cacert is not None:
        try:
            context.load_verify_locations(cafile=source.cacert)
        except (ssl.SSLError, OSError) as error:
            raise TLSConfigError(f"cannot load the CA file {files.cacert}: {error}") from error
