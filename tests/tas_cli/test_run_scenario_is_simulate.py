"""`tas run --scenario` is `tas simulate`'s run, shown live: the page's end table equals the
simulator's for the same scenario and seed.

`tas run --scenario health-demo --speed 300` (a real process: the extender behind real HTTP,
the dashboard, the loop in real time) runs to the scenario's end; its `/api/state` then holds
the table. The simulator runs `ours` on the same scenario and seed in-process
(`tas_simulator.runner.run_contender`), and its table (`tas_simulator.report.table`) must be the
same
text: the same world, metric pipeline, step order, per-pod usage and seeded choices, whatever
the wall clock did. It fails if either side's loop differs in any decision that changes a
figure.
"""

from __future__ import annotations

from pathlib import Path

from tas_simulator.contenders import Contender, resolve
from tas_simulator.report import table
from tas_simulator.runner import run_contender
from tas_simulator.scenario import load_scenario
from tas_simulator.seeds import SeededFigures, SeededResult
from tests.demo_process import DemoProcess
from tests.processes import Process, free_port, tas_command

SCENARIO = "health-demo"
SEED = 3


def simulated_table() -> str:
    scenario = load_scenario(SCENARIO)
    ours = resolve("ours", scenario.contenders.get("ours"))
    assert isinstance(ours, Contender)
    result = run_contender(scenario, ours, seed=SEED)
    figures = SeededFigures("ours", {SEED: result.figures})
    return table(SeededResult(scenario=scenario, seeds=[SEED], contenders={"ours": figures}))


def test_the_pages_end_table_is_tas_simulates_for_the_same_seed(tmp_path: Path) -> None:
    dashboard_port, extender_port = free_port(), free_port()
    dashboard = f"http://127.0.0.1:{dashboard_port}"
    server = Process(
        tas_command(
            "run", "--scenario", SCENARIO, "--speed", "300", "--seed", str(SEED),
            "--dir", str(tmp_path), "--listen", f"127.0.0.1:{extender_port}",
            "--dashboard", f"127.0.0.1:{dashboard_port}", "--duration", "120",
        ),
        dashboard,
        "/api/state",
        tmp_path / "tas-run.log",
    )  # fmt: skip
    with server:
        server.start(timeout=60)
        demo = DemoProcess(
            server, dashboard=dashboard, extender=f"http://127.0.0.1:{extender_port}",
            metrics=tmp_path / "metrics",
        )  # fmt: skip
        summary = demo.wait_for(
            "the scenario's end",
            lambda: (demo.get("/api/state")["scenario"] or {}).get("summary"),
            timeout=100,
        )
    assert summary == simulated_table()
