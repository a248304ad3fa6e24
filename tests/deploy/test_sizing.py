"""The shipped memory requests and limits follow the measured sizing (docs/deploy.md, "Sizing").

Covered: every component in the table has a row; its Deployment's memory limit is at least
1.3x the measured peak at 150,000 pods, and its request at least the measured steady memory
with no pod; the table's request / limit column says what the manifests say.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tas.quantity import parse_quantity
from tests.deploy.pipeline import rendered

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "deploy" / "cluster"
DEPLOYMENTS = {
    "tas extender": "tas-extender",
    "tas controller": "tas-policy-controller",
    "tas descheduler": "tas-descheduler",
}
MiB = 2**20
HEADROOM = 1.3


def _table() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = text[text.index("### Sizing") :]
    section = section[: section.index("\n## ")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].startswith("`tas "):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def _mib(cell: str) -> float:
    found = re.fullmatch(r"([\d.]+) MiB", cell)
    assert found is not None, cell
    return float(found[1])


def _memory(component: str) -> tuple[float, float]:
    (deployment,) = [
        d
        for d in rendered(CLUSTER)
        if d["kind"] == "Deployment" and d["metadata"]["name"] == DEPLOYMENTS[component]
    ]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    resources = container["resources"]
    return (
        parse_quantity(resources["requests"]["memory"]),
        parse_quantity(resources["limits"]["memory"]),
    )


def test_every_component_has_a_row() -> None:
    assert set(_table()) == set(DEPLOYMENTS)


@pytest.mark.parametrize("component", sorted(DEPLOYMENTS))
def test_the_limit_covers_the_measured_peak_with_headroom(component: str) -> None:
    base, _per_10k, peak, _cpu, shipped = _table()[component]
    request, limit = _memory(component)
    assert limit >= HEADROOM * _mib(peak) * MiB
    assert request >= _mib(base) * MiB
    assert shipped == (f"{int(request // MiB)}Mi / {int(limit // MiB)}Mi"), (
        "the table's request / limit column must say what the manifest says"
    )
