"""Which code a sweep's runs are reused for: a change to a run reuses none of them; a change to
how runs are judged or printed reuses them all (simulator/journal.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import simulator.journal
from simulator.journal import NOT_IN_A_RUN, digest_of_code

ROOT = Path(__file__).resolve().parents[2]

_EVERY_RUN = """
import json, sys
from simulator.contenders import CONTENDERS
from simulator.jobs import REFERENCES, Job, run_job
from simulator.scenario import load_scenario

scenario = load_scenario("scale-out").with_duration(600.0)
for contender in (*CONTENDERS, *REFERENCES):
    run_job(Job(scenario, contender, 1))
print(json.dumps(sorted(sys.modules)))
"""


def _copy_of_the_code(to: Path) -> Path:
    for package in simulator.journal._PACKAGES:
        shutil.copytree(ROOT / package, to / package, ignore=shutil.ignore_patterns("__pycache__"))
    return to


def _mended(root: Path, module: str) -> str:
    with (root / module).open("a", encoding="utf-8") as source:
        source.write("\n# mended\n")
    return digest_of_code(root)


def test_mending_how_runs_are_judged_keeps_the_runs_and_mending_a_run_keeps_none(
    tmp_path: Path,
) -> None:
    root = _copy_of_the_code(tmp_path)
    before = digest_of_code(root)
    assert _mended(root, "simulator/goals.py") == before
    assert _mended(root, "simulator/sweep.py") == before
    assert _mended(root, "simulator/world.py") != before
    after = digest_of_code(root)
    assert _mended(root, "descheduler/plugins/make_room.py") != after


def test_no_run_of_any_contender_or_reference_imports_a_module_the_digest_leaves_out() -> None:
    # A fresh interpreter: what this test session imported must not hide a run's own imports.
    ran = subprocess.run(
        [sys.executable, "-c", _EVERY_RUN], cwd=ROOT, capture_output=True, text=True, check=True
    )
    imported = set(json.loads(ran.stdout.splitlines()[-1]))
    assert "simulator.runner" in imported
    assert "descheduler.cycle" in imported
    assert not {f"simulator.{module}" for module in NOT_IN_A_RUN} & imported


def test_the_modules_left_out_exist_and_an_import_contract_forbids_a_run_to_import_them() -> None:
    for module in NOT_IN_A_RUN:
        assert (ROOT / "simulator" / f"{module}.py").is_file(), module
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = pyproject["tool"]["importlinter"]["contracts"]
    forbidding = [c for c in contracts if c.get("source_modules") == ["simulator.jobs"]]
    assert len(forbidding) == 1
    assert set(forbidding[0]["forbidden_modules"]) == {f"simulator.{m}" for m in NOT_IN_A_RUN}


def test_the_digest_covers_every_package_but_the_command_line_dashboard_and_benchmarks() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    shipped = {pattern.rstrip("*") for pattern in found}
    assert set(simulator.journal._PACKAGES) == shipped - {"tas_cli", "dashboard", "benchmarks"}
