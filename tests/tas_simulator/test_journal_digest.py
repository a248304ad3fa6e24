"""Which runs a sweep's journal reuses (tas_simulator/journal.py): after a change to a run, none;
after a change to how runs are judged or printed, all; and a reused run is the run the code
would give again, to the last bit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import setuptools

import tas_simulator.journal
from tas_simulator.journal import NOT_IN_A_RUN, digest_of_code

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

_EVERY_RUN = """
import json, sys
from tas_simulator.contenders import CONTENDERS
from tas_simulator.jobs import REFERENCES, Job, run_job
from tas_simulator.scenario import load_scenario

scenario = load_scenario("scale-out").with_duration(600.0)
for contender in (*CONTENDERS, *REFERENCES):
    run_job(Job(scenario, contender, 1))
print(json.dumps(sorted(sys.modules)))
"""

# default-0004, seed 1: a burst of pods whose expected CPU differs, on which a sum in a set's
# order once gave a last bit that changed with the interpreter's hash seed.
_ONE_RUN = """
import json
from pathlib import Path
from tas_simulator.family import draw_scenario, load_family
from tas_simulator.jobs import Job, run_job
from tas_simulator.scenario import read_scenario

family = load_family("default")
scenario = read_scenario(draw_scenario(family, 4), base=Path(family.source).parent)
print(json.dumps(run_job(Job(scenario, "ours", scenario.seed)).figures, sort_keys=True))
"""


def _last_line_printed_by(script: str, hash_seed: str | None = None) -> str:
    """What `script` prints last, run in a fresh interpreter (optionally with this hash seed),
    so that nothing this test session imported or hashed hides what a run does on its own."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed} if hash_seed is not None else None
    command = [sys.executable, "-c", script]
    ran = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return ran.stdout.splitlines()[-1]


def _copy_of_the_code(to: Path) -> Path:
    for package in tas_simulator.journal._PACKAGES:
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
    assert _mended(root, "tas_simulator/goals.py") == before
    assert _mended(root, "tas_simulator/sweep.py") == before
    assert _mended(root, "tas_simulator/world.py") != before
    after = digest_of_code(root)
    assert _mended(root, "descheduler/plugins/make_room.py") != after


def test_no_run_of_any_contender_or_reference_imports_a_module_the_digest_leaves_out() -> None:
    imported = set(json.loads(_last_line_printed_by(_EVERY_RUN)))
    assert "tas_simulator.runner" in imported
    assert "descheduler.cycle" in imported
    assert not {f"tas_simulator.{module}" for module in NOT_IN_A_RUN} & imported


def test_the_modules_left_out_exist_and_an_import_contract_forbids_a_run_to_import_them() -> None:
    for module in NOT_IN_A_RUN:
        assert (ROOT / "tas_simulator" / f"{module}.py").is_file(), module
    contracts = PYPROJECT["tool"]["importlinter"]["contracts"]
    forbidding = [c for c in contracts if c.get("source_modules") == ["tas_simulator.jobs"]]
    assert len(forbidding) == 1
    assert set(forbidding[0]["forbidden_modules"]) == {f"tas_simulator.{m}" for m in NOT_IN_A_RUN}


def test_the_digest_covers_every_package_but_the_command_line_dashboard_and_benchmarks() -> None:
    found = PYPROJECT["tool"]["setuptools"]["packages"]["find"]
    shipped = {
        package.split(".")[0]
        for package in setuptools.find_packages(
            str(ROOT), include=found["include"], exclude=found["exclude"]
        )
    }
    assert set(tas_simulator.journal._PACKAGES) == shipped - {
        "tas_cli",
        "tas_dashboard",
        "benchmarks",
    }


def test_a_run_gives_the_same_figures_to_the_last_bit_whatever_the_hash_seed() -> None:
    # The journal reuses a run for the same code, scenario, contender and seed: that is only
    # right if nothing in a run depends on the order of a set of strings.
    figures = [_last_line_printed_by(_ONE_RUN, hash_seed) for hash_seed in ("1", "2")]
    assert "herd_ratio_by_load" in figures[0]
    assert figures[0] == figures[1]
