"""The upgrade guide and the troubleshooting guide say what the code does.

Covered: docs/upgrade-from-tas.md names every TAS flag the translator handles and the new flag
of each; docs/troubleshooting.md has the four problems (extender not called, metric not found,
pods not evicted, certificate errors), each with symptoms, checks and a fix, and every log line
it quotes is one the code (or kube-scheduler, Prometheus, curl) really writes: the project's
own are found in the source, so a reworded message fails here until the guide follows.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tas_cli.tas_compat import TAS_FLAG_NAMES

ROOT = Path(__file__).resolve().parents[2]
UPGRADE = ROOT / "docs" / "upgrade-from-tas.md"
TROUBLESHOOTING = ROOT / "docs" / "troubleshooting.md"
SOURCES = ("extender", "policy_controller", "descheduler", "tas", "tas_cli")

#: Fragments of this project's log lines that the troubleshooting guide quotes.
OUR_LOG_LINES = [
    "Filtered nodes available for",
    "every node %s (%s)",
    "fetch of %s failed",
    "works again",
    "Evicted pod in dry run mode",
    "Not evicting %s/%s (%s)",
    "is cooling down",
    "no other Ready node would accept it (nodeFit)",
    "Circuit breaker open",
    "treating it as a broken metric pipeline and",
    "Cycle skipped",
    "fewer than two Ready nodes in scope",
    "refused (PodDisruptionBudget)",
    "refusing to serve without TLS",
    "cannot load the certificate",
]


def _source_text() -> str:
    return "\n".join(
        path.read_text(encoding="utf-8")
        for package in SOURCES
        for path in sorted((ROOT / package).rglob("*.py"))
    )


@pytest.mark.parametrize("name", sorted(TAS_FLAG_NAMES))
def test_the_upgrade_guide_maps_every_tas_flag(name: str) -> None:
    text = UPGRADE.read_text(encoding="utf-8")
    assert f"`--{name}" in text or f"--{name}`" in text or f"--{name}," in text, name


@pytest.mark.parametrize(
    "new_flag", ["--kubeconfig", "--listen", "--insecure-http", "--sync-period", "--log-level"]
)
def test_the_upgrade_guide_names_each_replacement(new_flag: str) -> None:
    assert new_flag in UPGRADE.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "problem",
    [
        "The extender is not called",
        "A metric is not found",
        "Pods are not evicted",
        "Certificate errors",
    ],
)
def test_the_troubleshooting_guide_covers_each_problem_with_symptoms_checks_and_a_fix(
    problem: str,
) -> None:
    text = TROUBLESHOOTING.read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.MULTILINE)
    (section,) = [s for s in sections if s.startswith(problem)]
    assert "**Symptoms.**" in section
    assert "**Check" in section
    assert "**Fix.**" in section or "Test the handshake" in section


@pytest.mark.parametrize("fragment", OUR_LOG_LINES)
def test_every_log_line_the_guide_quotes_is_written_by_the_code(fragment: str) -> None:
    assert fragment in _source_text(), f"no longer in the code: {fragment!r}"
    # The guide quotes it with the values filled in.
    words = [w for w in re.split(r"%[sdg]|\(|\)", fragment) if w.strip()]
    text = TROUBLESHOOTING.read_text(encoding="utf-8")
    assert all(w.strip() in text for w in words), fragment


@pytest.mark.parametrize(
    "metric",
    sorted(set(re.findall(r"\b(tas_[a-z_]+)", TROUBLESHOOTING.read_text(encoding="utf-8")))),
)
def test_every_metric_the_guide_names_exists(metric: str) -> None:
    from tests.deploy.promql import exported_metric_names

    assert metric in exported_metric_names()
