"""The served certificate, reloaded into the live SSL context when its files change.

cert-manager renews the Secret before it expires; the kubelet writes the new files into a new
directory of the Secret volume and swaps the volume's `..data` symlink to it, so the paths the
extender was given stay the same and resolve to new files. `check()` notices that (the resolved
path, inode, size and modification time of each file) and loads the new files into the same
`ssl.SSLContext` the server listens with: every handshake from then on presents the new
certificate, without a restart and without dropping a connection. Connections already open
keep the certificate they started with.

- **Polling**, every `RELOAD_SECONDS`: the standard library has no file watching, and a watch on
  the file itself would miss the swap of a symlink two levels up. A check is three `stat` calls.
- **On the server's event loop** (`watch` is a coroutine `ExtenderServer` runs there):
  `SSLContext.load_cert_chain` releases the GIL while OpenSSL replaces the context's certificate,
  and the loop copies that certificate into a new SSL object for every connection. From another
  thread the two would race inside OpenSSL; on the loop they never overlap. A reload reads three
  small files, a millisecond of the loop's time.
- **A broken pair never reaches the live context.** New files (a key that does not match, a file
  half written, a CA file that is not PEM) are first loaded into a scratch context. If that
  fails the extender keeps serving what it had, logs an error naming the files, counts the
  failure, and tries again at the next change. Loading them straight into the live context
  would not be undone by the failure: OpenSSL drops the old key when a new certificate does
  not match it, and every later handshake would fail.
- **One version of the Secret**: the files are read by their resolved paths (the kubelet's
  timestamped directory, which it never changes), so the certificate and key loaded together
  were written together.
- **A CA file adds**: OpenSSL can add CA certificates to a context but not remove them, so a
  new CA file is trusted alongside the old one (what a CA rollover needs) and a CA taken out
  of the file stays trusted until the extender restarts.

The served certificate's notAfter goes to `CertificateMetrics` (the expiry alert).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from extender.certificate import CertificateFormatError, CertificateInfo, read_certificate
from extender.self_metrics import CertificateMetrics
from extender.tls import TLSConfigError, TLSFiles, load_tls_files, server_ssl_context

log = logging.getLogger("extender")

#: How often the files are looked at. The kubelet itself takes up to a minute or two to
#: update a Secret volume; a few seconds more do not matter, and a check is cheap.
RELOAD_SECONDS = 5.0

#: One file's identity: (device, inode, size, mtime in ns), None when it cannot be read.
_Stamp = tuple[int, int, int, int] | None


@dataclass(frozen=True, slots=True)
class _Version:
    """The files as found by one check: their resolved paths and identities."""

    read: TLSFiles
    stamps: tuple[_Stamp, ...]


def _stamp(path: Path) -> _Stamp:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _find_version(files: TLSFiles) -> _Version:
    read = TLSFiles(
        cert=files.cert.resolve(),
        key=files.key.resolve(),
        cacert=files.cacert.resolve() if files.cacert is not None else None,
    )
    paths = (read.cert, read.key) + ((read.cacert,) if read.cacert is not None else ())
    return _Version(read=read, stamps=tuple(_stamp(p) for p in paths))


def _describe(certificate: CertificateInfo) -> str:
    expires = datetime.datetime.fromtimestamp(certificate.not_after, datetime.UTC)
    return f"serial {certificate.serial:x}, valid until {expires:%Y-%m-%d %H:%M:%S} UTC"


class CertificateReloader:
    """The server's SSL context (`context`), reloaded from `files` when they change.

    Built from the files as they are now (a `TLSConfigError` when they cannot serve, as at any
    start). `check()` is one look at the files; `watch()` looks every `period` seconds until
    cancelled. Both must run on the thread that serves connections (module docstring).
    """

    def __init__(
        self,
        files: TLSFiles,
        *,
        metrics: CertificateMetrics | None = None,
        period: float = RELOAD_SECONDS,
    ) -> None:
        if not period > 0:
            raise ValueError(f"the reload period must be positive, not {period!r}")
        self.files = files
        self.period = period
        self._metrics = metrics
        version = _find_version(files)
        self.context = server_ssl_context(files, read=version.read)
        self.certificate = self._read_certificate(files, version.read)
        #: The version last tried: a failed one is not tried again until the files change.
        self._tried: _Version | None = version
        if metrics is not None:
            metrics.served(self.certificate, reloaded=False)
        self._record_ca(version.read)

    def check(self) -> bool:
        """Load the files into the context if they changed since the last check; True when
        a new certificate is served from now on."""
        version = _find_version(self.files)
        if version == self._tried:
            return False
        self._tried = version
        try:
            # A scratch context first: a pair that does not load never touches the live one.
            server_ssl_context(self.files, read=version.read)
            certificate = self._read_certificate(self.files, version.read)
        except TLSConfigError as error:
            log.error(
                "The certificate files changed but do not load, still serving the previous "
                "certificate (%s); trying again when they change: %s",
                _describe(self.certificate),
                error,
            )
            if self._metrics is not None:
                self._metrics.reload_failed()
            return False
        try:
            load_tls_files(self.context, self.files, read=version.read)
        except TLSConfigError as error:
            # Changed again since the trial just now (that version's directory removed):
            # load whatever is there at the next check, whether or not it changes again.
            self._tried = None
            log.error("Reloading the certificate failed; trying again: %s", error)
            if self._metrics is not None:
                self._metrics.reload_failed()
            return False
        self.certificate = certificate
        log.info("Serving the renewed certificate %s (%s)", self.files.cert, _describe(certificate))
        if self._metrics is not None:
            self._metrics.served(certificate, reloaded=True)
        self._record_ca(version.read)
        return True

    def _record_ca(self, read: TLSFiles) -> None:
        """The CA's expiry for its alert (the context has loaded it, so it parses)."""
        if self._metrics is None or read.cacert is None:
            return
        try:
            self._metrics.trusted(read_certificate(read.cacert.read_bytes()))
        except (OSError, CertificateFormatError) as error:
            log.warning("Cannot read the expiry of the CA %s: %s", self.files.cacert, error)

    async def watch(self) -> None:
        """`check()` every `period` seconds, until cancelled (when the server stops)."""
        while True:
            await asyncio.sleep(self.period)
            try:
                self.check()
            except Exception:  # a bug here must not end reloading, nor the server
                log.exception("Checking the certificate files failed")

    @staticmethod
    def _read_certificate(files: TLSFiles, read: TLSFiles) -> CertificateInfo:
        try:
            return read_certificate(read.cert.read_bytes())
        except (OSError, CertificateFormatError) as error:
            raise TLSConfigError(f"cannot read the certificate {files.cert}: {error}") from error
