"""The dashboard's HTTP application: the page, its static assets, the JSON API and its stream.

Everything the page shows comes from the JSON API under `/api/` (docs/dashboard.md), which
scripts and tests read too; `/api/stream` pushes the same data as server-sent events, so the
page updates without reloading. Controls are POSTs whose bodies are validated by
`tas_dashboard.controls` before the demo acts (`tas_inmemory.demo.DemoWorld`); every mistake is a
4xx
with `{"error": reason}`, never a 500. A dashboard listening beyond loopback refuses its controls
(403) unless told otherwise (`tas_dashboard.controls.control_access`); reading stays open.

Built by `create_dashboard_app(...)` around its collaborators; served by the same uvicorn
wrapper as the extender (`extender.server.ExtenderServer`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tas.clock import SYSTEM_CLOCK, Clock
from tas.cluster.model import Pod
from tas.request_body import BodyTooLargeError, read_limited
from tas_dashboard.controls import (
    LOCAL_ACCESS,
    MAX_BODY_BYTES,
    ControlAccess,
    ControlError,
    parse_add_load,
    parse_scale,
    parse_set_health,
)
from tas_dashboard.recorder import KINDS, Recorder
from tas_explain.explanation import NodeExplanation, PodExplanation, UnknownObjectError
from tas_explain.explanation import to_json as explanation_json
from tas_inmemory.demo import MAX_LOAD_CORES, MAX_REPLICAS, DemoError

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
#: How often a stream checks for news, and sends a comment to keep proxies from closing it.
STREAM_POLL_SECONDS = 0.2
STREAM_KEEPALIVE_SECONDS = 15.0
#: How many log entries a new stream (or /api/decisions without a limit) starts with.
DEFAULT_LOG_ENTRIES = 300
_JSON = "application/json"

ENDPOINTS = {
    "GET /api/state": "everything the page shows now: nodes, pods, policies, workloads, "
    "descheduler, the scenario (with --scenario)",
    "GET /api/nodes": "every node: metric values, labels, taints, pods, load-aware class",
    "GET /api/nodes/{node}": "one node",
    "GET /api/pods": "every pod: node, phase, policy, violate label, CPU used",
    "GET /api/policies": "every policy: rules, status, labelled nodes",
    "GET /api/decisions?after=ID&limit=N&kind=K": "the decision log, oldest first",
    "GET /api/history?after=TIME": "one point per sync period, for the charts",
    "GET /api/stream": "server-sent events: `update` with state, new log entries, new points",
    "GET /api/explain/pod/{namespace}/{name}": "why the pod runs where it does, and whether "
    "the descheduler would move it now (docs/explain.md)",
    "GET /api/explain/node/{node}": "the node's metrics with their age, every policy's "
    "verdict, labels, taints, recent evictions",
    "POST /api/nodes/{node}/health": '{"value": 2}: set the node\'s health_metric',
    "POST /api/nodes/{node}/load": '{"cores": 3}: pin a stress pod burning CPU to the node',
    "DELETE /api/nodes/{node}/load": "remove the node's stress pods",
    "POST /api/workloads/{name}/scale": '{"replicas": 6}: scale a workload (demo-app, web, ...)',
}


class Explaining(Protocol):
    """What answers `/api/explain/...` (`tas_explain.facts.Explainer` over `tas run`'s parts).
    Each raises `tas_explain.explanation.UnknownObjectError` for a name it does not know."""

    def explain_pod(self, namespace: str, name: str) -> PodExplanation: ...

    def explain_node(self, name: str) -> NodeExplanation: ...


class Controls(Protocol):
    """What the page's buttons act on (`tas_inmemory.demo.DemoWorld`, or a scenario's world).
    Each raises `DemoError` (with an HTTP status) for what it cannot do."""

    def set_health(self, node: str, value: float) -> None: ...

    def add_load(self, node: str, cores: float) -> Pod: ...

    def clear_load(self, node: str) -> list[str]: ...

    def scale(self, name: str, replicas: int) -> int: ...


def _json(data: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type=_JSON)


def _error(status: int, message: str) -> Response:
    return _json({"error": message}, status)


async def _body(request: Request) -> bytes:
    """The request body, refused once it grows past what any control needs."""
    try:
        return await read_limited(request.stream(), limit=MAX_BODY_BYTES)
    except BodyTooLargeError as error:
        raise ControlError(413, str(error)) from error


def create_dashboard_app(
    *,
    recorder: Recorder,
    world: Controls,
    stop: threading.Event,
    static_dir: Path = STATIC,
    clock: Clock = SYSTEM_CLOCK,
    access: ControlAccess = LOCAL_ACCESS,
    explainer: Explaining | None = None,
) -> Starlette:
    """The application (nothing global: every collaborator is given). `access`: whether the
    control endpoints act, from the address it is served on (`control_access`); `tas_explain`
    answers `/api/explain/...` (404 without one)."""

    async def page(request: Request) -> Response:
        return FileResponse(static_dir / "index.html", headers={"Cache-Control": "no-cache"})

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    async def api_index(request: Request) -> Response:
        controls = {"allowed": access.allowed, "reason": access.reason or None}
        return _json({"endpoints": ENDPOINTS, "docs": "docs/dashboard.md", "controls": controls})

    async def state(request: Request) -> Response:
        return _json(recorder.state())

    async def nodes(request: Request) -> Response:
        return _json(recorder.state()["nodes"])

    async def node(request: Request) -> Response:
        name = request.path_params["node"]
        for entry in recorder.state()["nodes"]:
            if entry["name"] == name:
                return _json(entry)
        return _error(404, f"no node named {name!r}")

    async def pods(request: Request) -> Response:
        return _json(recorder.state()["pods"])

    async def policies(request: Request) -> Response:
        return _json(recorder.state()["policies"])

    async def decisions(request: Request) -> Response:
        params = request.query_params
        after, limit = params.get("after", "0"), params.get("limit", str(DEFAULT_LOG_ENTRIES))
        if not after.isdigit() or not limit.isdigit():
            return _error(400, "after and limit must be whole numbers >= 0")
        kinds = set(params.getlist("kind")) or None
        unknown = sorted((kinds or set()) - set(KINDS))
        if unknown:
            # A typo must not read as "nothing of that kind happened".
            return _error(400, f"unknown kind {unknown[0]!r}; the kinds are {', '.join(KINDS)}")
        return _json(recorder.log(after=int(after), limit=int(limit), kinds=kinds))

    async def history(request: Request) -> Response:
        unknown = sorted(set(request.query_params) - {"after"})
        if unknown:
            message = f"unknown parameter {unknown[0]!r}: /api/history takes after=TIME only"
            if "kind" in unknown:
                message += f" (kind= is the decision log's: {', '.join(KINDS)})"
            return _error(400, message)
        raw = request.query_params.get("after")
        try:
            after = float(raw) if raw is not None else None
        except ValueError:
            return _error(400, "after must be a time in seconds since the epoch")
        return _json(recorder.history(after=after))

    async def stream(request: Request) -> Response:
        raw = request.query_params.get("after", "")
        cursor = int(raw) if raw.isdigit() else 0

        async def updates() -> AsyncIterator[bytes]:
            nonlocal cursor
            version = -1
            last_point: float | None = None
            quiet_since = time.monotonic()
            yield b"retry: 2000\n\n"
            first = True
            while not stop.is_set():
                current = recorder.version
                if current != version:
                    version = current
                    entries = recorder.log(
                        after=cursor, limit=DEFAULT_LOG_ENTRIES if first else None
                    )
                    points = recorder.history(after=last_point)
                    if entries:
                        cursor = entries[-1]["id"]
                    if points:
                        last_point = points[-1]["time"]
                    payload = {
                        "state": recorder.state(),
                        "decisions": entries,
                        "points": points,
                        "reset": first,
                    }
                    first = False
                    yield b"event: update\nid: %d\ndata: %s\n\n" % (cursor, orjson.dumps(payload))
                    quiet_since = time.monotonic()
                elif time.monotonic() - quiet_since > STREAM_KEEPALIVE_SECONDS:
                    yield b": keep-alive\n\n"
                    quiet_since = time.monotonic()
                await asyncio.sleep(STREAM_POLL_SECONDS)

        return StreamingResponse(
            updates(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def explained(build: Callable[[Explaining], object]) -> Response:
        if explainer is None:
            return _error(404, "explanations are not served here")
        try:  # in a thread: a dry descheduling cycle takes a while on a big cluster
            found = await asyncio.to_thread(build, explainer)
        except UnknownObjectError as error:
            return _json({"error": str(error), "near": list(error.near)}, 404)
        return _json(explanation_json(found))

    async def explain_pod(request: Request) -> Response:
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        return await explained(lambda e: e.explain_pod(namespace, name))

    async def explain_node(request: Request) -> Response:
        name = request.path_params["node"]
        return await explained(lambda e: e.explain_node(name))

    def control(
        act: Callable[[Request, bytes], Awaitable[tuple[dict[str, Any], str]]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            if not access.allowed:  # before the body is read: nothing of it is acted on
                return _error(403, access.reason)
            try:
                body = await _body(request)
                result, summary = await act(request, body)
            except ControlError as error:
                return _error(error.status, error.message)
            except DemoError as error:
                return _error(error.status, str(error))
            recorder.note(
                "control", summary, source="dashboard", time=clock.now().timestamp(), **result
            )
            return _json({"ok": True, **result})

        return endpoint

    async def set_health(request: Request, body: bytes) -> tuple[dict[str, Any], str]:
        name = request.path_params["node"]
        wanted = parse_set_health(body, request.headers.get("content-type"))
        await asyncio.to_thread(world.set_health, name, wanted.value)
        summary = f"set {name} health_metric to {wanted.value:g}"
        return {"node": name, "value": wanted.value}, summary

    async def add_load(request: Request, body: bytes) -> tuple[dict[str, Any], str]:
        name = request.path_params["node"]
        wanted = parse_add_load(body, request.headers.get("content-type"), most=MAX_LOAD_CORES)
        pod = await asyncio.to_thread(world.add_load, name, wanted.cores)
        summary = f"added {wanted.cores:g} cores of load on {name} ({pod.namespace}/{pod.name})"
        return {"node": name, "cores": wanted.cores, "pod": f"{pod.namespace}/{pod.name}"}, summary

    async def clear_load(request: Request, body: bytes) -> tuple[dict[str, Any], str]:
        name = request.path_params["node"]
        removed = await asyncio.to_thread(world.clear_load, name)
        summary = f"cleared the load on {name} ({len(removed)} pods)"
        return {"node": name, "removed": removed}, summary

    async def scale(request: Request, body: bytes) -> tuple[dict[str, Any], str]:
        name = request.path_params["name"]
        wanted = parse_scale(body, request.headers.get("content-type"), most=MAX_REPLICAS)
        before = await asyncio.to_thread(world.scale, name, wanted.replicas)
        summary = f"scaled {name} from {before} to {wanted.replicas} replicas"
        return {"workload": name, "replicas": wanted.replicas, "before": before}, summary

    routes = [
        Route("/", page, methods=["GET"]),
        Route("/favicon.ico", favicon, methods=["GET"]),
        Route("/api", api_index, methods=["GET"]),
        Route("/api/", api_index, methods=["GET"]),
        Route("/api/state", state, methods=["GET"]),
        Route("/api/nodes", nodes, methods=["GET"]),
        Route("/api/nodes/{node}", node, methods=["GET"]),
        Route("/api/pods", pods, methods=["GET"]),
        Route("/api/policies", policies, methods=["GET"]),
        Route("/api/decisions", decisions, methods=["GET"]),
        Route("/api/history", history, methods=["GET"]),
        Route("/api/stream", stream, methods=["GET"]),
        Route("/api/explain/pod/{namespace}/{name}", explain_pod, methods=["GET"]),
        Route("/api/explain/node/{node}", explain_node, methods=["GET"]),
        Route("/api/nodes/{node}/health", control(set_health), methods=["POST"]),
        Route("/api/nodes/{node}/load", control(add_load), methods=["POST"]),
        Route("/api/nodes/{node}/load", control(clear_load), methods=["DELETE"]),
        Route("/api/workloads/{name}/scale", control(scale), methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=static_dir), name="static"),
    ]

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        return _error(error.status_code, str(error.detail))

    async def server_error(request: Request, error: Exception) -> Response:
        log.exception("Dashboard request %s %s failed", request.method, request.url.path)
        return _error(500, "internal error (logged)")

    return Starlette(
        routes=routes,
        exception_handlers={HTTPException: http_error, Exception: server_error},
    )
