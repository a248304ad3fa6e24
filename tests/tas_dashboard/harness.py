"""The dashboard on a real uvicorn server, around the demo world, with a loop driven by hand.

`Harness.tick()` does what one sync period of `tas run` does, minus the extender and the
descheduler (tests that need them run `tas run` itself): the workload model writes the
textfiles, the real textfile metric view reads them, the scheduler model places pending pods,
and the recorder takes note. Tests can hand `tick` a descheduler cycle report of their own.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx

from descheduler.cycle import CycleReport
from extender.decisions import DecisionLog
from extender.server import ExtenderServer
from tas.adapters.metrics import open_metric_view
from tas.policies.files import load_policy_path
from tas.policies.store import PolicyStore
from tas_dashboard.app import create_dashboard_app
from tas_dashboard.controls import LOCAL_ACCESS, ControlAccess
from tas_dashboard.recorder import SHOWN_METRICS, Recorder, ServedDemand, Tick
from tas_inmemory.demo import DemoWorld, build_demo_cluster, profile_of, write_start_metrics
from tas_inmemory.live_telemetry import LiveTelemetry
from tas_inmemory.scheduler import InMemoryScheduler

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "deploy" / "health-metric-demo" / "health-policy.yaml"


class Harness:
    def __init__(
        self,
        directory: Path,
        *,
        access: ControlAccess = LOCAL_ACCESS,
        served: ServedDemand | None = None,
    ) -> None:
        """`served`: LoadAware's bar for a move off a node that serves its demand, as the
        recorder is told it (`tas run` reads it from its descheduler); None: no LoadAware."""
        self.metrics = directory / "metrics"
        write_start_metrics(self.metrics)
        self.cluster = build_demo_cluster()
        self.world = DemoWorld(self.cluster, self.metrics)
        self.store = PolicyStore()
        self.store.replace(load_policy_path(POLICY).policies)
        self.view = open_metric_view(f"textfile:{self.metrics}")
        self.view.set_wanted(SHOWN_METRICS)
        self.telemetry = LiveTelemetry(
            self.cluster, self.metrics, profile_of=profile_of, started=time.time()
        )
        self.scheduler = InMemoryScheduler(self.cluster, extender=None)
        self.decisions = DecisionLog()
        self.recorder = Recorder(
            cluster=self.cluster,
            policies=self.store,
            decisions=self.decisions,
            workloads=self.world.workloads,
            metric_times=self.view,
            served=served,
            info={"mode": "Automatic", "deschedulingInterval": 2.0, "extender": "-"},
        )
        self.stop = threading.Event()
        app = create_dashboard_app(
            recorder=self.recorder, world=self.world, stop=self.stop, access=access
        )
        self.server = ExtenderServer(app, port=0, log_level="warning")
        self.url = self.server.url
        self.client = httpx.Client(base_url=self.url, timeout=10)

    def tick(self, cycle: CycleReport | None = None) -> None:
        now = time.time()
        step = self.telemetry.step(now)
        self.view.refresh_once()
        placements = self.scheduler.schedule_pending()
        self.recorder.observe(
            Tick(
                now=now,
                columns=self.view.columns(),
                telemetry=step,
                placements=placements,
                cycle=cycle,
            )
        )

    def __enter__(self) -> Harness:
        self.server.start()
        self.tick()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop.set()
        self.client.close()
        self.server.stop(5)
