"""`tas` loads only the command it runs, and a command that needs an extra says which.

Covered: a real `tas extender` process, serving and answering a filter request, never loads
numpy, matplotlib, selenium or the dashboard (what a cluster pod carries is the base install);
`tas --help` imports no command's module, yet lists every command with its help line (as with
every module loaded), and which commands need which extra; a command whose extra is missing
(its modules blocked as if not installed) exits 2 with one line naming the extra and how to
install it from the clone (the project is on no package index), and no traceback, while the
cluster's commands still run; `tas_cli.main.EXTRAS` names the modules pyproject.toml's extras
install.

A process's modules are read by a small runner (`RUNNER`) that records `sorted(sys.modules)`
at exit, after `tas_cli.main.main` has run with the given arguments.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement

from tas.adapters.metrics.textfile import write_node_series
from tas_cli.main import COMMANDS, EXTRAS, build_parser
from tests.extender.support import HEALTH_POLICY, args_body
from tests.processes import ROOT, Process, free_port

#: `python -c RUNNER MODULES_FILE BLOCKED ARGS...`: runs `tas ARGS` with the comma-separated
#: BLOCKED modules unimportable (None in sys.modules is Python's own "not installed": import
#: raises ImportError and importlib.util.find_spec answers None), and writes the modules loaded
#: at exit, after SIGTERM too (the command turns it into a clean exit).
RUNNER = """
import atexit, sys
from pathlib import Path
out, blocked, args = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
for name in filter(None, blocked.split(",")):
    sys.modules[name] = None
atexit.register(lambda: out.write_text("\\n".join(sorted(sys.modules)), encoding="utf-8"))
from tas_cli.main import main
sys.exit(main(args))
"""

#: What the simulator, the in-memory world and the tests bring, and a cluster pod must not.
NOT_IN_A_CLUSTER = (
    "numpy",
    "matplotlib",
    "selenium",
    "tas_dashboard",
    "tas_simulator",
    "tas_inmemory",
)


def _runner(modules: Path, *args: str, blocked: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-c", RUNNER, str(modules), ",".join(blocked), *args]


def _loaded(modules: Path) -> set[str]:
    return set(modules.read_text(encoding="utf-8").split())


def _top_level(names: set[str]) -> set[str]:
    return {name.partition(".")[0] for name in names}


def test_a_serving_extender_never_loads_the_simulator_s_or_the_dashboard_s_modules(
    tmp_path: Path,
) -> None:
    metrics = tmp_path / "metrics"
    for node, value in {"A": 0, "B": 1, "C": 0}.items():
        write_node_series(metrics, node, {"node_health_metric": value})
    port = free_port()
    modules = tmp_path / "modules.txt"
    args = _runner(modules, "extender", "--policies", str(HEALTH_POLICY),
                   "--metrics", f"textfile:{metrics}", "--listen", f"127.0.0.1:{port}",
                   "--insecure-http", "--sync-period", "200ms")  # fmt: skip
    with Process(args, f"http://127.0.0.1:{port}", "/readyz", tmp_path / "extender.log") as p:
        p.start()
        answer = httpx.post(
            f"{p.url}/scheduler/filter", json=args_body(names=["A", "B", "C"]), timeout=10
        )
        assert answer.json()["NodeNames"] == ["A", "C"]
        assert p.terminate() == 0, p.output()
    loaded = _loaded(modules)
    # The list is a serving extender's: the application and its server were loaded.
    assert {"extender.app", "fastapi", "uvicorn"} <= loaded
    assert _top_level(loaded).isdisjoint(NOT_IN_A_CLUSTER), sorted(
        _top_level(loaded) & set(NOT_IN_A_CLUSTER)
    )


def test_tas_help_imports_no_command_s_module_and_lists_every_command(tmp_path: Path) -> None:
    modules = tmp_path / "modules.txt"
    done = subprocess.run(
        _runner(modules, "--help"), cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    loaded = _loaded(modules)
    assert loaded.isdisjoint(command.module for command in COMMANDS.values())
    assert _top_level(loaded).isdisjoint(
        ("extender", "policy_controller", "descheduler", *NOT_IN_A_CLUSTER)
    )
    for name in COMMANDS:
        assert f"\n    {name} " in done.stdout or f"\n    {name}\n" in done.stdout, name
    said = " ".join(done.stdout.split())
    assert "tas run needs [demo]; tas simulate and tas sweep need [sim]" in said
    assert "make deps (or .venv/bin/pip install -e '.[EXTRA]')" in said
    assert "telemetry-aware-scheduling[" not in said


def test_the_help_lines_of_the_lazy_parser_are_the_ones_the_modules_register() -> None:
    # `tas --help` from the table (nothing imported) reads exactly as with every module loaded.
    assert build_parser(load=()).format_help() == build_parser().format_help()


@pytest.mark.parametrize(
    ("args", "blocked", "extra"),
    [
        pytest.param(["run", "--duration", "1s"], ("numpy",), "demo", id="run without numpy"),
        pytest.param(
            ["run", "--scenario", "psi-skewed"], ("jsonschema",), "demo", id="run, no jsonschema"
        ),
        pytest.param(["simulate", "--all"], ("matplotlib",), "sim", id="simulate"),
        pytest.param(["sweep", "--count", "1"], ("numpy", "matplotlib"), "sim", id="sweep"),
    ],
)
def test_a_command_whose_extra_is_missing_says_which_extra_to_install(
    tmp_path: Path, args: list[str], blocked: tuple[str, ...], extra: str
) -> None:
    done = subprocess.run(
        _runner(tmp_path / "modules.txt", *args, blocked=blocked),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"tas {args[0]}: needs the [{extra}] extra (")
    # What works from a clone: the project is on no package index.
    assert line.endswith(f"from the clone, make deps (or .venv/bin/pip install -e '.[{extra}]')")
    assert "telemetry-aware-scheduling[" not in line
    assert all(name in line for name in blocked)


def test_the_cluster_s_commands_run_without_any_extra(tmp_path: Path) -> None:
    blocked = ("numpy", "matplotlib", "jsonschema", "distributed")
    policy = tmp_path / "policy.yaml"
    policy.write_text(HEALTH_POLICY.read_text(encoding="utf-8"), encoding="utf-8")
    for args in (
        ["validate", str(policy)],
        ["set-health", "node-a", "1", "--dir", str(tmp_path), "--create"],
    ):
        done = subprocess.run(
            _runner(tmp_path / "modules.txt", *args, blocked=blocked),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    for name in ("extender", "controller", "descheduler"):
        done = subprocess.run(
            _runner(tmp_path / "modules.txt", name, "--help", blocked=blocked),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"usage: tas {name}")


def test_the_extras_table_names_what_pyproject_s_extras_install() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    base = {Requirement(text).name for text in project["dependencies"]}
    for extra, modules in EXTRAS.items():
        names = {Requirement(text).name for text in extras[extra]}
        # distributed is for --dask only; tas_simulator.jobs says which extra brings it.
        assert set(modules) == names - {"distributed"}, extra
        assert base.isdisjoint(modules), f"{extra}: already in the base install"
    assert {command.extra for command in COMMANDS.values()} - {None} == set(EXTRAS)
