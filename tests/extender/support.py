"""Builders for extender tests: request bodies from the example files, a running server in this
process (`running_extender`) and a real `python -m extender` one (`extender_process`)."""

from __future__ import annotations

import copy
import json
import ssl
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry

from extender.app import create_app
from extender.decisions import DecisionLog
from extender.server import ExtenderServer
from extender.settings import ExtenderSettings
from tas.clock import SYSTEM_CLOCK, Clock
from tas.metrics.static import StaticMetricView
from tas.metrics.view import MetricView
from tas.policies.files import load_policy_path
from tas.policies.model import TASPolicy
from tas.policies.store import PolicyStore
from tas_herd.placements import Estimates
from tas_herd.readings import HerdReadings
from tests.processes import Process

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]
HEALTH_POLICY = ROOT / "deploy" / "policies" / "health-policy.yaml"
DEMO_NAMESPACE = "health-metric-demo"
JSON_HEADERS = {"Content-Type": "application/json"}


def example(name: str) -> dict[str, Any]:
    """`nodes` or `nodenames`: the example ExtenderArgs (demo pod, node-0..node-2)."""
    document: dict[str, Any] = json.loads((DATA / f"extender-filter-{name}.json").read_text())
    return document


def example_node(name: str, template: int = 0) -> dict[str, Any]:
    node: dict[str, Any] = copy.deepcopy(example("nodes")["Nodes"]["items"][template])
    node["metadata"]["name"] = name
    return node


def args_body(
    *,
    names: list[str] | None = None,
    nodes: list[dict[str, Any]] | None = None,
    apply: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """ExtenderArgs for the demo pod with candidates given by name or as Node objects."""
    document = example("nodenames")
    document["NodeNames"] = names
    document["Nodes"] = None if nodes is None else {"metadata": {}, "items": nodes}
    if apply is not None:
        apply(document)
    return document


def health_policies() -> tuple[TASPolicy, ...]:
    return load_policy_path(HEALTH_POLICY).policies


def health_view(values: Mapping[str, float]) -> StaticMetricView:
    return StaticMetricView({"health_metric": dict(values)})


@dataclass
class RunningExtender:
    url: str
    client: httpx.Client
    store: PolicyStore
    decisions: DecisionLog
    registry: CollectorRegistry

    def post(
        self, verb: str, body: Any, *, headers: Mapping[str, str] = JSON_HEADERS
    ) -> httpx.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.client.post(f"/scheduler/{verb}", content=content, headers=dict(headers))


@contextmanager
def running_extender(
    *,
    policies: tuple[TASPolicy, ...] | None = None,
    view: MetricView | None = None,
    settings: ExtenderSettings | None = None,
    ssl_context: ssl.SSLContext | None = None,
    client_verify: ssl.SSLContext | bool = True,
    store: PolicyStore | None = None,
    clock: Clock = SYSTEM_CLOCK,
    estimates: Callable[[], Estimates] | None = None,
    caches_synced: Callable[[], bool] | None = None,
) -> Iterator[RunningExtender]:
    """The real application on a real uvicorn server on a free 127.0.0.1 port (on `store`
    when given, else a new one holding `policies`)."""
    store = store if store is not None else PolicyStore()
    if policies is not None:
        store.replace(policies)
    registry = CollectorRegistry()
    decisions = DecisionLog(50)
    app = create_app(
        store=store,
        metrics=view if view is not None else StaticMetricView(),
        settings=settings or ExtenderSettings(),
        registry=registry,
        decisions=decisions,
        clock=clock,
        herd=HerdReadings(estimates) if estimates is not None else None,
        caches_synced=caches_synced,
    )
    with (
        ExtenderServer(app, ssl_context=ssl_context, log_level="warning") as server,
        httpx.Client(base_url=server.url, verify=client_verify, timeout=30) as client,
    ):
        yield RunningExtender(server.url, client, store, decisions, registry)


def extender_process(
    args: list[str], port: int, log: Path, *, command: Sequence[str] = ("-m", "extender")
) -> Process:
    """`python -m extender ARGS` (or another command), ready once /readyz answers 200."""
    executable = [sys.executable, *command] if command[0] == "-m" else list(command)
    return Process([*executable, *args], f"http://127.0.0.1:{port}", "/readyz", log)
