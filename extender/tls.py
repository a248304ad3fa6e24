"""TLS for the extender: HTTPS with TLS 1.2 or newer, and mTLS when a CA file is given.

TAS serves HTTPS only and requires client certificates; this project does the same when given
`--cert --key --cacert`, and with `--client-cert-names` it accepts filter and prioritize only
from the named client certificates (kube-scheduler's), not from any the CA signed
(`ClientNameGuard`). Plain HTTP must be asked for explicitly (`--insecure-http`). HTTPS
without `--cacert` authenticates no client: the command line logs a warning, and a TAS command
line keeps TAS's `--cacert` default (tas.tas_flags), so it still requires client certificates.

Errors:
    TLSConfigError      the flags or files cannot make a server TLS context
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge


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


# ------------------------------------------------------------ client certificate names
#
# With --cacert every certificate the CA signed passes the handshake: kube-scheduler's, and the
# Prometheus scraper's too. Python's ssl module offers no hook into the handshake, so the name
# is checked per request: `extender.server` puts the peer certificate's name and
# expiry into the ASGI scope (the ASGI TLS extension's `client_cert_name`), and
# `ClientNameGuard` refuses the scheduling verbs (403) to any other name, and records the
# expiry of every client certificate it sees, so an expiring kube-scheduler certificate is
# alerted on before kube-scheduler is locked out (and skips the extender, `ignorable: true`).

#: The paths only kube-scheduler calls: the extender verbs.
SCHEDULING_PATHS = frozenset({"/scheduler/filter", "/scheduler/prioritize"})


def client_certificate(transport: asyncio.BaseTransport) -> dict[str, Any] | None:
    """The ASGI TLS extension entries for a connection's verified peer certificate:
    `client_cert_name` (its subject's commonName, "" when it has none) and
    `client_cert_not_after` (Unix seconds); None without a peer certificate."""
    peer = transport.get_extra_info("peercert")
    if not peer:
        return None
    names = [value for rdn in peer.get("subject", ()) for key, value in rdn if key == "commonName"]
    not_after = peer.get("notAfter")
    return {
        "client_cert_name": names[0] if names else "",
        "client_cert_not_after": ssl.cert_time_to_seconds(not_after) if not_after else None,
    }


ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


class ClientNameGuard:
    """ASGI middleware: the scheduling verbs only from a client certificate whose name is in
    `allowed` (when `enforce`); other paths (probes, /metrics) from any certificate the CA
    signed. Each client certificate's expiry is a gauge by name (`tas_extender_client_
    certificate_expiry_timestamp_seconds`), for the alert, enforced or not."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed: Collection[str],
        registry: CollectorRegistry,
        enforce: bool = True,
        paths: Collection[str] = SCHEDULING_PATHS,
    ) -> None:
        self.app = app
        self.enforce = enforce
        self.allowed = frozenset(allowed)
        self.paths = frozenset(paths)
        self.expiry = Gauge(
            "tas_extender_client_certificate_expiry_timestamp_seconds",
            "When each client certificate the extender has seen expires (its notAfter, Unix "
            "seconds), by its subject's common name: kube-scheduler's, Prometheus's scraper's.",
            ["name"],
            registry=registry,
        )
        self.refused = Counter(
            "tas_extender_client_name_refusals_total",
            "Scheduling requests refused because the client certificate's name is not one "
            "--client-cert-names allows.",
            registry=registry,
        )

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        tls = (scope.get("extensions") or {}).get("tls") or {}
        name = tls.get("client_cert_name")
        if name is not None and tls.get("client_cert_not_after") is not None:
            self.expiry.labels(name).set(tls["client_cert_not_after"])
        if self.enforce and scope.get("path") in self.paths and name not in self.allowed:
            self.refused.inc()
            shown = "no client certificate" if name is None else f"client certificate {name!r}"
            body = json.dumps(
                {"error": f"{shown} may not call {scope.get('path')}: the extender accepts "
                 f"scheduling requests only from {', '.join(sorted(self.allowed))}"}
            ).encode()  # fmt: skip
            await send(
                {
                    "type": "http.response.start",
                    "status": 403,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)
