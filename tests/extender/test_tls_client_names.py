"""Client certificates checked by name: with `--client-cert-names`, only kube-scheduler's
certificate may call filter and prioritize, not every certificate the CA signed; and every
client certificate's expiry is exported, for the alert.

On a real uvicorn server with mTLS (certificates made in the test, as in test_tls.py):
- kube-scheduler's certificate (an allowed name) is served filter and prioritize;
- the Prometheus scraper's certificate, signed by the same CA, is refused both with 403 and a
  message naming its certificate and the allowed names, and the refusal is counted; it still
  reads /metrics and the probes;
- `tas_extender_client_certificate_expiry_timestamp_seconds{name}` holds each client
  certificate's notAfter once it has called, also where names are not enforced (the default,
  where the scraper may still call filter);
- `tas_extender_ca_certificate_expiry_timestamp_seconds` holds the --cacert CA's notAfter from
  the moment the extender loads it;
- `--client-cert-names` without `--cacert` is refused at start-up (exit 2): there would be no
  name to check.
"""

from __future__ import annotations

import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from prometheus_client import CollectorRegistry

from extender.app import create_app
from extender.cert_reload import CertificateReloader
from extender.self_metrics import CertificateMetrics
from extender.server import ExtenderServer
from extender.settings import ExtenderSettings
from extender.tls import ClientNameGuard, TLSFiles, server_ssl_context
from tas.metrics.static import StaticMetricView
from tas.policies.store import PolicyStore
from tests.certificates import CertificateAuthority, Issued
from tests.extender.support import HEALTH_POLICY, args_body, health_policies
from tests.processes import tas_command


class Certificates:
    def __init__(self, directory: Path) -> None:
        self.ca = CertificateAuthority(directory, "tas-ca")
        self.server = self.ca.issue("tas-extender", server=True)
        self.scheduler = self.ca.issue("tas-kube-scheduler", server=False)
        self.scraper = self.ca.issue("tas-metrics-scraper", server=False)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return Certificates(tmp_path_factory.mktemp("pki"))


@contextmanager
def extender(
    certs: Certificates, *, allowed: tuple[str, ...], enforce: bool = True
) -> Iterator[tuple[str, CollectorRegistry]]:
    store = PolicyStore()
    store.replace(health_policies())
    registry = CollectorRegistry()
    app = create_app(
        store=store, metrics=StaticMetricView(), settings=ExtenderSettings(), registry=registry
    )
    guarded = ClientNameGuard(app, allowed=allowed, registry=registry, enforce=enforce)
    context = server_ssl_context(TLSFiles(certs.server.cert, certs.server.key, certs.ca.files.cert))
    with ExtenderServer(guarded, ssl_context=context, log_level="warning") as server:
        yield server.url, registry


def client(url: str, certs: Certificates, who: Issued) -> httpx.Client:
    context = ssl.create_default_context(cafile=str(certs.ca.files.cert))
    context.load_cert_chain(who.cert, who.key)
    return httpx.Client(base_url=url, verify=context, timeout=30)


def post(http: httpx.Client, verb: str) -> httpx.Response:
    return http.post(f"/scheduler/{verb}", json=args_body(names=["A", "B"]))


def not_after(issued: Issued) -> float:
    return x509.load_pem_x509_certificate(issued.cert.read_bytes()).not_valid_after_utc.timestamp()


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_only_kube_scheduler_s_certificate_may_call_the_scheduling_verbs(
    certs: Certificates, verb: str
) -> None:
    with extender(certs, allowed=("tas-kube-scheduler",)) as (url, registry):
        with client(url, certs, certs.scheduler) as scheduler:
            assert post(scheduler, verb).status_code == 200
        with client(url, certs, certs.scraper) as scraper:
            refused = post(scraper, verb)
            assert refused.status_code == 403
            assert "'tas-metrics-scraper' may not call" in refused.json()["error"]
            assert "only from tas-kube-scheduler" in refused.json()["error"]
            assert scraper.get("/metrics").status_code == 200
            assert scraper.get("/healthz").status_code == 200
        assert registry.get_sample_value("tas_extender_client_name_refusals_total") == 1


@pytest.mark.parametrize("enforce", [True, False], ids=["names enforced", "any name"])
def test_each_client_certificate_s_expiry_is_exported(certs: Certificates, enforce: bool) -> None:
    with extender(certs, allowed=("tas-kube-scheduler",), enforce=enforce) as (url, registry):
        for who in (certs.scheduler, certs.scraper):
            with client(url, certs, who) as http:
                post(http, "filter")
        name = "tas_extender_client_certificate_expiry_timestamp_seconds"
        for who, cn in (
            (certs.scheduler, "tas-kube-scheduler"),
            (certs.scraper, "tas-metrics-scraper"),
        ):
            assert registry.get_sample_value(name, {"name": cn}) == pytest.approx(not_after(who))
        if not enforce:
            with client(url, certs, certs.scraper) as scraper:
                assert post(scraper, "filter").status_code == 200


def test_the_ca_s_expiry_is_exported_where_the_extender_loads_it(certs: Certificates) -> None:
    registry = CollectorRegistry()
    files = TLSFiles(certs.server.cert, certs.server.key, certs.ca.files.cert)
    CertificateReloader(files, metrics=CertificateMetrics(registry))
    value = registry.get_sample_value("tas_extender_ca_certificate_expiry_timestamp_seconds")
    assert value == pytest.approx(not_after(certs.ca.files))


def test_client_names_without_client_certificates_are_refused_at_start_up(tmp_path: Path) -> None:
    done = subprocess.run(
        tas_command(
            "extender",
            "--insecure-http",
            "--client-cert-names",
            "tas-kube-scheduler",
            "--metrics",
            f"textfile:{tmp_path}",
            "--policies",
            str(HEALTH_POLICY),
            "--listen",
            "127.0.0.1:0",
        ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--client-cert-names needs --cacert" in done.stderr
