"""Running one upstream test-table row through the real command line against the API emulator.

A `Case` is a row of one of kubernetes-sigs/descheduler's plugin tables
(`pkg/framework/plugins/*/*_test.go`), written down as data: the nodes, pods and other objects
(as the API serves them), the plugin's arguments and the DefaultEvictor's, and what upstream
expects evicted. `replay` stores the objects in a fresh `KubeEmulator`, writes the
DeschedulerPolicy upstream's test would build, runs `tas descheduler --mode Automatic
--descheduling-interval 0` in this process (`tas_cli.main.main`), and returns the pods the
Eviction API was asked to evict.

Two settings differ from upstream's defaults here, so each case states them: this project's
`nodeFit` is on by default (a case sets the DefaultEvictor's `nodeFit` as its upstream row
does), and the descheduler skips a cycle on fewer than two Ready nodes, as upstream's does (a
row written for a lone node gets a second one, `spare_node`, that no pod can move to). A row
whose outcome differs on purpose says why in `why` and configures the difference explicitly.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from descheduler.framework import ExtensionPoint
from descheduler.plugins.registry import default_registry
from tas_cli.main import main
from tests.descheduler.upstream.objects import as_of_now
from tests.k8s_emulator import KubeEmulator

Json = dict[str, Any]


@dataclass(frozen=True)
class Case:
    name: str
    plugin: str
    nodes: Sequence[Json]
    pods: Sequence[Json]
    args: Mapping[str, Any] = field(default_factory=dict)
    #: The DefaultEvictor's arguments (upstream's tests build it with nodeFit false unless
    #: the row says otherwise).
    evictor: Mapping[str, Any] = field(default_factory=lambda: {"nodeFit": False})
    #: Top-level DeschedulerPolicy fields (the eviction limits, say).
    policy: Mapping[str, Any] = field(default_factory=dict)
    #: How many pods upstream expects evicted.
    evicted: int | None = None
    #: Which pods upstream expects evicted, where its row names them.
    evicted_pods: Collection[str] | None = None
    #: Other objects, by the emulator's resource name: ("poddisruptionbudgets", {...}).
    objects: Sequence[tuple[str, Json]] = ()
    #: A Prometheus answering every query with these values per node (`instance` label).
    prometheus: Mapping[str, float] | None = None
    #: Why this row is configured differently from upstream's, if it is.
    why: str = ""
    #: Add an empty Ready node (the row has a single one).
    spare_node: bool = False
    #: The command's exit code: 2 where this project refuses the policy upstream accepts.
    exit_code: int = 0

    @property
    def point(self) -> ExtensionPoint:
        plugin = default_registry().get(self.plugin)
        assert plugin is not None, self.plugin
        if ExtensionPoint.BALANCE in plugin.points:
            return ExtensionPoint.BALANCE
        return ExtensionPoint.DESCHEDULE


def policy_document(case: Case, *, prometheus_url: str | None = None) -> Json:
    document: Json = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        **case.policy,
        "profiles": [
            {
                "name": "upstream",
                "pluginConfig": [
                    {"name": "DefaultEvictor", "args": dict(case.evictor)},
                    {"name": case.plugin, "args": dict(case.args)},
                ],
                "plugins": {
                    "filter": {"enabled": ["DefaultEvictor"]},
                    str(case.point): {"enabled": [case.plugin]},
                },
            }
        ],
    }
    if prometheus_url is not None:
        document["metricsProviders"] = [
            {"source": "Prometheus", "prometheus": {"url": prometheus_url}}
        ]
    return document


class _Prometheus(BaseHTTPRequestHandler):
    values: Mapping[str, float] = {}
    queries: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        split = urlsplit(self.path)
        self.queries.append(parse_qs(split.query).get("query", [""])[0])
        body = {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [
                    {
                        "metric": {"__name__": "q", "instance": node},
                        "value": [1728991761.711, str(value)],
                    }
                    for node, value in self.values.items()
                ],
            },
        }
        payload = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@contextmanager
def prometheus_serving(values: Mapping[str, float]) -> Iterator[tuple[str, list[str]]]:
    """A Prometheus HTTP API answering every instant query with `values` (node -> value)."""
    queries: list[str] = []
    handler = type("Handler", (_Prometheus,), {"values": dict(values), "queries": queries})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host!s}:{port}", queries
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Outcome:
    code: int
    evicted: list[str]
    log: str

    def explain(self, case: Case) -> str:
        return (
            f"{case.name}: evicted {self.evicted}, exit {self.code}; upstream expects "
            f"{case.evicted_pods if case.evicted_pods is not None else case.evicted}\n{self.log}"
        )


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


def store(api: KubeEmulator, case: Case) -> None:
    nodes = list(case.nodes)
    if case.spare_node:
        nodes.append(_spare())
    for node in nodes:
        api.create("nodes", node)
    for kind, obj in case.objects:
        obj = as_of_now(obj)
        api.create(kind, obj, namespace=(obj.get("metadata") or {}).get("namespace"))
    for pod in case.pods:
        api.create("pods", as_of_now(pod), namespace=pod["metadata"].get("namespace", "default"))


def _spare() -> Json:
    # Ready, so the cycle runs; unschedulable and tainted, so no pod could move to it.
    return {
        "metadata": {"name": "spare-node", "labels": {}},
        "spec": {
            "unschedulable": True,
            "taints": [{"key": "upstream.test/spare", "effect": "NoSchedule"}],
        },
        "status": {
            "allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def run_cli(api: KubeEmulator, policy: Json, tmp: Path, *extra: str) -> tuple[int, str]:
    """`tas descheduler` once, in Automatic mode, on the emulator; its exit code and log."""
    kubeconfig = api.write_kubeconfig(tmp / "kubeconfig")
    policy_file = tmp / "policy.yaml"
    policy_file.write_text(yaml.safe_dump(policy), encoding="utf-8")
    collect = _Collect()
    root = logging.getLogger()
    level = root.level
    root.addHandler(collect)
    root.setLevel(logging.INFO)
    try:
        code = main(
            [
                "descheduler",
                "--kubeconfig",
                str(kubeconfig),
                "--policy-config-file",
                str(policy_file),
                "--mode",
                "Automatic",
                "--descheduling-interval",
                "0",
                "--log-level",
                "info",
                *extra,
            ]
        )
    finally:
        root.removeHandler(collect)
        root.setLevel(level)
    return code, "\n".join(collect.lines)


def evictions(api: KubeEmulator) -> list[str]:
    return [
        r.path.split("/")[-2]
        for r in api.requests
        if r.method == "POST" and r.path.endswith("/eviction") and r.status < 300
    ]


def replay(case: Case, tmp: Path) -> Outcome:
    with KubeEmulator() as api:
        store(api, case)
        if case.prometheus is not None:
            with prometheus_serving(case.prometheus) as (url, _):
                code, log = run_cli(api, policy_document(case, prometheus_url=url), tmp)
        else:
            code, log = run_cli(api, policy_document(case), tmp)
        return Outcome(code, evictions(api), log)


def matches(case: Case, outcome: Outcome) -> bool:
    if outcome.code != case.exit_code:
        return False
    if case.evicted is not None and len(outcome.evicted) != case.evicted:
        return False
    return case.evicted_pods is None or sorted(outcome.evicted) == sorted(case.evicted_pods)
