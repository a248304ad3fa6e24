"""The extender's HTTP application: routes, body limits, error answers, logs and metrics.

The two verbs are plain Starlette endpoints on the FastAPI application: they read raw bytes and
answer raw bytes through the `wire` codec, because request validation by models would copy whole
Node objects. Every client mistake is answered with a 4xx and a JSON `Error` reason. What is
decided, and how it is logged and counted, is `ExtenderService`'s (`extender/service.py`, the
same code the simulator and the benchmarks call): a route decodes, calls it and encodes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping

import orjson
from fastapi import FastAPI
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from extender.decisions import DecisionLog, Verb
from extender.self_metrics import CalibrationCollector, ExtenderMetrics
from extender.service import DecisionReporter, ExtenderService
from extender.settings import ExtenderSettings
from extender.wire import (
    ExtenderArgs,
    WireError,
    decode_args,
    encode_error,
    encode_filter_result,
    encode_priorities,
)
from tas.clock import SYSTEM_CLOCK, Clock
from tas.metrics.view import MetricView
from tas.policies.store import PolicyStore
from tas.request_body import BodyTooLargeError, RejectedRequestError, read_limited
from tas_herd.readings import HerdReadings

_JSON = "application/json"

log = logging.getLogger(__name__)
_DEFAULT_DECISIONS_SHOWN = 20
#: What `GET /` lists: a person who opens the extender's address in a browser (the dashboard
#: links it) learns what it serves instead of meeting a 404.
ENDPOINTS = {
    "POST /scheduler/filter": "kube-scheduler's filter call: ExtenderArgs in, "
    "ExtenderFilterResult out (nodes a policy's dontschedule rules rule out)",
    "POST /scheduler/prioritize": "kube-scheduler's prioritize call: ExtenderArgs in, "
    "HostPriorityList out (scores from scheduleonmetric)",
    "GET /debug/decisions?limit=N": "the last N filter and prioritize decisions with each "
    "node's verdict, score and the values behind them (default 20)",
    "GET /healthz": "liveness: ok",
    "GET /readyz": "readiness: policies loaded, a metric refresh done, the caches listed",
    "GET /metrics": "the extender's own Prometheus metrics",
}


def _error_response(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(encode_error(message), status_code=status, media_type=_JSON, headers=headers)


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == _JSON or (media.startswith("application/") and media.endswith("+json"))


async def _read_body(request: Request, limit: int) -> bytes:
    if not _is_json(request.headers.get("content-type")):
        raise RejectedRequestError(415, "Content-Type must be application/json")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RejectedRequestError(413, f"the body is larger than the limit of {limit} bytes")
    try:
        return await read_limited(request.stream(), limit=limit)
    except BodyTooLargeError as error:
        raise RejectedRequestError(
            413, f"the body is larger than the limit of {error.limit} bytes"
        ) from error


def create_app(
    *,
    store: PolicyStore,
    metrics: MetricView,
    settings: ExtenderSettings,
    registry: CollectorRegistry,
    decisions: DecisionLog | None = None,
    clock: Clock = SYSTEM_CLOCK,
    herd: HerdReadings | None = None,
    caches_synced: Callable[[], bool] | None = None,
) -> FastAPI:
    """Build the extender application around its collaborators (nothing global).

    `herd`, when given, is herd control as the service reads it
    (`tas_herd.readings.herd_readings`); what it has learned is exported on /metrics.
    `caches_synced` tells whether the cluster caches (pods and nodes for the estimates) have
    listed once: /readyz waits for it."""
    app = FastAPI(
        title="Telemetry-aware scheduling extender",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    telemetry = ExtenderMetrics(registry)
    if herd is not None and herd.calibration is not None:
        registry.register(CalibrationCollector(herd.calibration))
    log_book = decisions if decisions is not None else DecisionLog(settings.decision_log_size)
    service = ExtenderService(
        store=store,
        metrics=metrics,
        settings=settings,
        clock=clock,
        herd=herd,
        record=DecisionReporter(log_book, telemetry).record,
    )
    unresolvable = not settings.tas_compat_failed_nodes

    def verb_endpoint(
        verb: Verb, answer: Callable[[ExtenderArgs], bytes]
    ) -> Callable[[Request], Awaitable[Response]]:
        histogram = telemetry.request_seconds.labels(verb.value)

        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            try:
                body = await _read_body(request, settings.max_body_bytes)
                args = decode_args(body)
            except RejectedRequestError as rejected:
                telemetry.rejected_requests.labels(verb.value, str(rejected.status)).inc()
                return _error_response(rejected.status, rejected.message)
            except WireError as error:
                telemetry.rejected_requests.labels(verb.value, "400").inc()
                return _error_response(400, str(error))
            except ClientDisconnect:
                # Nobody is left to read an answer; this only keeps a traceback out of the log.
                telemetry.rejected_requests.labels(verb.value, "disconnected").inc()
                return _error_response(400, "the client disconnected while sending the body")
            try:
                content = answer(args)
            except Exception:
                # A bug, not the request: counted and logged with the pod, and answered with a
                # reason. kube-scheduler (ignorable: true) schedules that pod without us.
                log.exception(
                    "%s for pod %s failed; kube-scheduler goes on without the extender",
                    verb.value,
                    args.pod,
                )
                telemetry.internal_errors.labels(verb.value).inc()
                return _error_response(500, f"the extender failed to {verb.value} this pod")
            histogram.observe(time.perf_counter() - started)
            return Response(content, media_type=_JSON)

        return endpoint

    def answer_filter(args: ExtenderArgs) -> bytes:
        decision = service.filter(args.pod, args.candidates)
        return encode_filter_result(args=args, failed=decision.failed, unresolvable=unresolvable)

    def answer_prioritize(args: ExtenderArgs) -> bytes:
        return encode_priorities(service.prioritize(args.pod, args.candidates).scores)

    app.add_route("/scheduler/filter", verb_endpoint(Verb.FILTER, answer_filter), methods=["POST"])
    app.add_route(
        "/scheduler/prioritize",
        verb_endpoint(Verb.PRIORITIZE, answer_prioritize),
        methods=["POST"],
    )

    async def index(request: Request) -> Response:
        return JSONResponse({"service": "telemetry-aware scheduling extender",
                             "endpoints": ENDPOINTS})  # fmt: skip

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        waiting = []
        if not store.loaded:
            waiting.append("policies not loaded yet")
        if not metrics.ready:
            waiting.append("no metric refresh completed yet")
        if caches_synced is not None and not caches_synced():
            waiting.append("cluster caches not listed yet")
        if waiting:
            return JSONResponse({"ready": False, "waiting": waiting}, status_code=503)
        return JSONResponse({"ready": True})

    async def prometheus(request: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    async def recent_decisions(request: Request) -> Response:
        raw_limit = request.query_params.get("limit", "")
        if raw_limit and not raw_limit.isdigit():
            return _error_response(400, "limit must be a non-negative integer")
        # A decision over 500 nodes renders to ~50 kB: a modest default keeps this cheap.
        limit = int(raw_limit) if raw_limit else _DEFAULT_DECISIONS_SHOWN
        content = orjson.dumps([d.to_json() for d in log_book.recent(limit)])
        return Response(content, media_type=_JSON)

    app.add_route("/", index, methods=["GET"])
    app.add_route("/healthz", healthz, methods=["GET"])
    app.add_route("/readyz", readyz, methods=["GET"])
    app.add_route("/metrics", prometheus, methods=["GET"])
    app.add_route("/debug/decisions", recent_decisions, methods=["GET"])

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, StarletteHTTPException)
        return _error_response(error.status_code, str(error.detail), headers=error.headers)

    app.add_exception_handler(StarletteHTTPException, http_error)
    return app
