"""The emulator's HTTP side: a threaded server on 127.0.0.1 speaking the Kubernetes REST protocol.

Each request is authenticated and authorized first (`rbac.py`), then routed by the resource
table (`resources.py`) to the store (`store.py`); watches stream newline-delimited JSON events
over a chunked response. Everything a test needs to set up, observe or break lives on
`KubeEmulator` (see the package docstring).
"""

from __future__ import annotations

import copy
import json
import re
import secrets
import socket
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import kubernetes.client
import orjson

from tests.k8s_emulator import admission, custom_metrics
from tests.k8s_emulator.patches import PatchError, field_selector, label_selector
from tests.k8s_emulator.rbac import (
    Access,
    BoundRole,
    RequestAttributes,
    User,
    authorize,
    bound_roles,
    forbidden,
    granted,
    request_attributes,
    unauthorized,
)
from tests.k8s_emulator.resources import BY_KIND, BY_PLURAL, ResourceType, Target, parse_path
from tests.k8s_emulator.store import Admit, ApiError, Object, ObjectStore, StoredEvent

#: The longest a watch stays open when the client asks for no timeout.
MAX_WATCH_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    query: Mapping[str, str]
    content_type: str
    body: Any  # parsed JSON, or None
    status: int
    user: str = ""  # the authenticated user; "" for the test's own (admin) requests

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")


@dataclass(frozen=True, slots=True)
class Denial:
    """A request RBAC or an admission policy refused: who, and the API server's message (which
    names the rest)."""

    user: str
    method: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.method} {self.path}: {self.message}"


@dataclass
class _Failure:
    method: str | None
    path: re.Pattern[str]
    status: int
    remaining: int


class KubeEmulator:
    """A Kubernetes API server emulator for tests; see the package docstring for the API."""

    def __init__(
        self,
        *,
        history_window: int = 1000,
        bookmark_interval: float = 1.0,
        namespace_lifecycle: bool = False,
    ) -> None:
        self.store = ObjectStore(history_window=history_window)
        self.bookmark_interval = bookmark_interval
        #: The NamespaceLifecycle admission plugin: an API client's create in a namespace that
        #: does not exist is refused. Off by default, so tests need not create every namespace.
        self.namespace_lifecycle = namespace_lifecycle
        if namespace_lifecycle:  # the namespaces an API server makes for itself
            for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
                self.create("namespaces", {"metadata": {"name": name}})
        self._custom_metrics: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._failures: list[_Failure] = []
        self._watch_epoch = 0
        #: The token of the test itself: full access, as without a token.
        self.admin_token = secrets.token_hex(16)
        self._tokens: dict[str, tuple[str, str]] = {}
        self._accesses: dict[tuple[str, str], set[Access]] = {}
        self._denials: list[Denial] = []
        #: Watch events sent, per resource (the test API's name): what watchers received.
        self._sent: dict[str, int] = {}
        self._stopping = threading.Event()
        #: Lists of these resources (the test API's names) wait until their gate opens.
        self._list_gates: dict[str, threading.Event] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> KubeEmulator:
        emulator = self

        class Handler(_Handler):
            owner = emulator

        server = _Server(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self.store.condition:
            self.store.condition.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> KubeEmulator:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the emulator first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def configuration(self, *, token: str | None = None) -> kubernetes.client.Configuration:
        """A client configuration; with `token` (see `token_for`) requests are that user's."""
        configuration = kubernetes.client.Configuration(host=self.url)
        configuration.api_key = {"authorization": f"Bearer {token or self.admin_token}"}
        return configuration

    def api_client(self, *, token: str | None = None) -> kubernetes.client.ApiClient:
        return kubernetes.client.ApiClient(self.configuration(token=token))

    def write_kubeconfig(self, path: Path, *, token: str | None = None) -> Path:
        """A kubeconfig file pointing at this emulator, for components run as processes;
        with `token` (see `token_for`) the process acts as that ServiceAccount."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "emulator", "cluster": {"server": self.url}}],
            "users": [{"name": "test", "user": {"token": token or self.admin_token}}],
            "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "test"}}],
            "current-context": "emulator",
        }
        path.write_text(json.dumps(config), encoding="utf-8")
        return path

    # ------------------------------------------------------------ identities and RBAC

    def token_for(self, namespace: str, name: str) -> str:
        """The bearer token of a ServiceAccount (the same one every time). Requests with it
        are RBAC-checked, and refused (401) unless the ServiceAccount object exists."""
        with self._lock:
            for token, account in self._tokens.items():
                if account == (namespace, name):
                    return token
            token = f"sa-{secrets.token_hex(16)}"
            self._tokens[token] = (namespace, name)
            return token

    def accesses(self, namespace: str, name: str) -> set[Access]:
        """Every (verb, group, resource) the ServiceAccount was allowed to call so far."""
        with self._lock:
            return set(self._accesses.get((namespace, name), set()))

    def grants(self, namespace: str, name: str) -> set[Access]:
        """Every (verb, group, resource) the stored roles grant the ServiceAccount, anywhere."""
        return granted(self._roles_of(User.service_account(namespace, name)))

    @property
    def denials(self) -> list[Denial]:
        """Every request RBAC or a ValidatingAdmissionPolicy refused, in order."""
        with self._lock:
            return list(self._denials)

    def _authenticate(self, header: str) -> User | None:
        """The user of a request; None for the test itself (no token, or the admin token)."""
        scheme, _, token = header.partition(" ")
        if not header or (scheme.lower() == "bearer" and token.strip() == self.admin_token):
            return None
        with self._lock:
            account = self._tokens.get(token.strip()) if scheme.lower() == "bearer" else None
        if account is None or self.get("serviceaccounts", account[1], namespace=account[0]) is None:
            raise unauthorized()
        return User.service_account(*account)

    def _roles_of(self, user: User) -> list[BoundRole | str]:
        def role(plural: str, namespace: str | None, name: str) -> Object | None:
            return self.get(plural, name, namespace=namespace)

        return list(
            bound_roles(
                user,
                cluster_bindings=self.objects("clusterrolebindings"),
                namespace_bindings=self.objects("rolebindings"),
                role=role,
            )
        )

    def _authorize(self, user: User, attributes: RequestAttributes, method: str) -> None:
        allowed, reason = authorize(user, attributes, self._roles_of(user))
        account = user.account
        if not allowed:
            error = forbidden(user, attributes, reason)
            with self._lock:
                self._denials.append(Denial(user.name, method, attributes.path, error.message))
            raise error
        if account is not None and attributes.resource_request:
            with self._lock:
                self._accesses.setdefault(account, set()).add(attributes.access)

    def _admission(self, user: User | None, method: str, path: str, target: Target) -> Admit | None:
        """The validating admission of an update (`admission.py`), for a ServiceAccount's
        requests only (the test's own are never refused); a refusal is a `Denial`."""
        if user is None or target.name is None or method not in ("PUT", "PATCH"):
            return None
        update = admission.Update(
            target.resource,
            target.name,
            user,
            namespace=target.namespace or "",
            subresource=target.subresource or "",
        )

        def admit(new: Object, old: Object) -> None:
            try:
                admission.admit_update(
                    policies=self.store.list(BY_PLURAL[admission.POLICIES], None)[0],
                    bindings=self.store.list(BY_PLURAL[admission.BINDINGS], None)[0],
                    update=update,
                    obj=new,
                    old=old,
                )
            except ApiError as error:
                with self._lock:
                    self._denials.append(Denial(user.name, method, path, error.message))
                raise

        return admit

    # ------------------------------------------------------------ objects (test side)

    def _resource(self, plural: str) -> ResourceType:
        return BY_PLURAL[plural]

    def apply(self, documents: Iterable[Mapping[str, Any]]) -> list[Object]:
        """Create every object of a kind this emulator serves (Namespaces, ServiceAccounts,
        RBAC, Deployments, ...) from manifest documents; other kinds are skipped."""
        created = []
        for document in documents:
            resource = BY_KIND.get((str(document.get("apiVersion")), str(document.get("kind"))))
            if resource is not None:
                namespace = (document.get("metadata") or {}).get("namespace")
                created.append(self.store.create(resource, namespace, document))
        return created

    def create(
        self, plural: str, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Object:
        return self.store.create(self._resource(plural), namespace, obj)

    def get(self, plural: str, name: str, *, namespace: str | None = None) -> Object | None:
        try:
            return self.store.get(self._resource(plural), namespace, name)
        except ApiError:
            return None

    def objects(self, plural: str, *, namespace: str | None = None) -> list[Object]:
        return copy.deepcopy(self.store.list(self._resource(plural), namespace)[0])

    def load(self, plural: str, objects: Iterable[Object]) -> int:
        """Store many objects at once, taken as they are (never change them after): the bulk
        path for the scale benchmark (`ObjectStore.load`); watchers list again."""
        return self.store.load(self._resource(plural), objects)

    def merge(
        self,
        plural: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        namespace: str | None = None,
        status: bool = False,
    ) -> Object:
        """Merge-patch an object as another client would (watchers see the change)."""
        return self.store.patch(
            self._resource(plural),
            namespace,
            name,
            "application/merge-patch+json",
            patch,
            subresource="status" if status else None,
        )

    def delete(self, plural: str, name: str, *, namespace: str | None = None) -> None:
        self.store.delete(self._resource(plural), namespace, name)

    def set_custom_metric(self, metric: str, values: Mapping[str, float | str]) -> None:
        """What prometheus-adapter serves for a node metric (node -> value), through the
        custom metrics API (`custom_metrics.py`); replaces what was there."""
        column = {node: str(value) for node, value in values.items()}
        with self._lock:
            self._custom_metrics[metric] = column

    def _custom_metric_values(self) -> dict[str, dict[str, str]]:
        with self._lock:
            return {metric: dict(column) for metric, column in self._custom_metrics.items()}

    @property
    def resource_version(self) -> int:
        return self.store.resource_version

    # ------------------------------------------------------------ observing and breaking

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def writes(self) -> list[RecordedRequest]:
        """Every request that could change something (not GET, not a watch)."""
        return [r for r in self.requests if r.method not in ("GET", "HEAD")]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def set_history_window(self, size: int) -> None:
        """Keep only the last `size` events; older resourceVersions get 410 Gone on watch."""
        self.store.set_history_window(size)

    def compact(self) -> None:
        """Forget all history now, like etcd compaction: every open resume point expires."""
        self.store.compact()

    def fail_next(
        self, path_pattern: str, *, status: int = 500, method: str | None = None, times: int = 1
    ) -> None:
        """Answer the next `times` requests whose path matches with an error `status`."""
        with self._lock:
            self._failures.append(_Failure(method, re.compile(path_pattern), status, times))

    def hold_lists(self, plural: str) -> None:
        """Make every list of `plural` wait, as an API server slow to list it would, until
        `release_lists(plural)` (or the emulator stops)."""
        with self._lock:
            self._list_gates[plural] = threading.Event()

    def release_lists(self, plural: str) -> None:
        with self._lock:
            gate = self._list_gates.pop(plural, None)
        if gate is not None:
            gate.set()

    def _wait_for_list(self, plural: str) -> None:
        with self._lock:
            gate = self._list_gates.get(plural)
        while gate is not None and not gate.wait(0.1) and not self._stopping.is_set():
            pass

    def break_watches(self) -> None:
        """End every open watch stream now (as a restarting API server or proxy would)."""
        with self._lock:
            self._watch_epoch += 1
        with self.store.condition:
            self.store.condition.notify_all()

    # ------------------------------------------------------------ internals

    def sent(self, plural: str) -> int:
        """How many ADDED, MODIFIED and DELETED watch events of `plural` went out, to every
        watcher together, so far."""
        with self._lock:
            return self._sent.get(plural, 0)

    def _count_sent(self, plural: str) -> None:
        with self._lock:
            self._sent[plural] = self._sent.get(plural, 0) + 1

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _injected_failure(self, method: str, path: str) -> int | None:
        with self._lock:
            for failure in self._failures:
                wanted = failure.method in (None, method) and failure.path.search(path)
                if failure.remaining > 0 and wanted:
                    failure.remaining -= 1
                    return failure.status
            return None

    def _epoch(self) -> int:
        with self._lock:
            return self._watch_epoch


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (a component stopped mid-watch) is no emulator error.
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    owner: KubeEmulator
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # A response goes out as several writes (status, headers, body) on a kept-alive
        # connection: with Nagle's algorithm the last one waits for the client's delayed ACK,
        # 40 ms per request (a real API server sends at once). Every list, watch and eviction
        # of every test paid it.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log is `KubeEmulator.requests`

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # ------------------------------------------------------------ dispatch

    def _handle(self, method: str) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        content_type = self.headers.get("Content-Type", "")
        body: Any = None
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        status = 200
        user: User | None = None
        try:
            user = self.owner._authenticate(self.headers.get("Authorization", ""))
            if user is not None:
                attributes = request_attributes(method, split.path, query)
                self.owner._authorize(user, attributes, method)
            if raw:
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError as error:
                    raise ApiError(400, "BadRequest", f"invalid JSON body: {error}") from error
            injected = self.owner._injected_failure(method, split.path)
            if injected is not None:
                reason = _REASONS.get(injected, "InternalError")
                raise ApiError(injected, reason, f"injected failure {injected}")
            if custom_metrics.serves(split.path):
                if method != "GET":
                    raise ApiError(405, "MethodNotAllowed", f"{method} is not supported")
                values = self.owner._custom_metric_values()
                status, answer = 200, custom_metrics.answer(split.path, values)
                who = user.name if user is not None else ""
                self.owner._record(
                    RecordedRequest(method, split.path, query, content_type, body, status, who)
                )
                self._send_json(status, answer)
                return
            target = parse_path(split.path)
            if target is None:
                raise ApiError(404, "NotFound", f"the server could not find {split.path}")
            if method == "GET" and query.get("watch") in ("true", "1"):
                who = user.name if user is not None else ""
                self.owner._record(
                    RecordedRequest(method, split.path, query, content_type, body, 200, who)
                )
                self._watch(target, query)
                return
            admit = self.owner._admission(user, method, split.path, target)
            status, answer = self._route(method, target, query, content_type, body, admit)
        except ApiError as error:
            status, answer = error.code, error.status()
        except Exception as error:  # an emulator bug must show up as a 500, not a hang
            status, answer = 500, ApiError(500, "InternalError", repr(error)).status()
        who = user.name if user is not None else ""
        self.owner._record(
            RecordedRequest(method, split.path, query, content_type, body, status, who)
        )
        self._send_json(status, answer)

    def _route(
        self,
        method: str,
        target: Target,
        query: Mapping[str, str],
        content_type: str,
        body: Any,
        admit: Admit | None = None,
    ) -> tuple[int, Object]:
        store, resource = self.owner.store, target.resource
        if method == "GET" and target.name is None:
            self.owner._wait_for_list(resource.plural)
            return 200, self._list(target, query)
        if target.name is None:
            if method == "POST":
                if not isinstance(body, dict):
                    raise ApiError(400, "BadRequest", "a JSON object body is required")
                # The API drops status on create (nodes keep theirs: kubelets register so).
                keep = resource.plural == "nodes"
                self._admit(resource, target.namespace, body)
                return 201, store.create(resource, target.namespace, body, keep_status=keep)
            raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed on a collection")
        if target.subresource == "eviction":
            if method != "POST" or resource.plural != "pods" or target.namespace is None:
                raise ApiError(405, "MethodNotAllowed", "evictions are POSTed to pods/eviction")
            store.evict(resource, BY_PLURAL["poddisruptionbudgets"], target.namespace, target.name)
            return 201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}
        if method == "GET":
            return 200, store.get(resource, target.namespace, target.name)
        if method == "PUT":
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "a JSON object body is required")
            return 200, store.replace(
                resource,
                target.namespace,
                target.name,
                body,
                subresource=target.subresource,
                admit=admit,
            )
        if method == "PATCH":
            return 200, store.patch(
                resource,
                target.namespace,
                target.name,
                content_type,
                body,
                subresource=target.subresource,
                admit=admit,
            )
        if method == "DELETE":
            store.delete(resource, target.namespace, target.name)
            return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200}
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported")

    def _admit(self, resource: ResourceType, namespace: str | None, body: Object) -> None:
        """NamespaceLifecycle (plugin/pkg/admission/namespace/lifecycle/admission.go): a
        namespaced object is created only in a namespace that exists."""
        if not self.owner.namespace_lifecycle or not resource.namespaced:
            return
        name = namespace or (body.get("metadata") or {}).get("namespace") or "default"
        if self.owner.get("namespaces", name) is None:
            raise ApiError(
                404,
                "NotFound",
                f'namespaces "{name}" not found',
                {"name": name, "kind": "namespaces"},
            )

    # ------------------------------------------------------------ list and watch

    def _predicate(self, query: Mapping[str, str]) -> Any:
        try:
            labels = label_selector(query.get("labelSelector", ""))
            fields = field_selector(query.get("fieldSelector", ""))
        except PatchError as error:
            raise ApiError(400, "BadRequest", str(error)) from error
        return lambda obj: labels((obj.get("metadata") or {}).get("labels") or {}) and fields(obj)

    def _list(self, target: Target, query: Mapping[str, str]) -> Object:
        """A list, paginated when the client asks (`limit`, then `continue`), as the API
        server does; with `resourceVersion=0` the watch cache answers, and ignores `limit`."""
        token = query.get("continue", "")
        if token and query.get("resourceVersion"):
            raise ApiError(
                400, "BadRequest", "specifying resource version is not allowed when using continue"
            )
        try:
            limit = int(query.get("limit") or 0)
        except ValueError as error:
            raise ApiError(400, "BadRequest", f"invalid limit: {error}") from error
        if query.get("resourceVersion") == "0" or (limit <= 0 and not token):
            limit = 2**62
        page = self.owner.store.page(
            target.resource, target.namespace, self._predicate(query), limit=limit, token=token
        )
        metadata: Object = {"resourceVersion": str(page.resource_version)}
        if page.token:
            metadata["continue"] = page.token
            metadata["remainingItemCount"] = page.remaining
        return {
            "apiVersion": target.resource.api_version,
            "kind": target.resource.list_kind,
            "metadata": metadata,
            "items": page.items,
        }

    def _watch(self, target: Target, query: Mapping[str, str]) -> None:
        predicate = self._predicate(query)
        store = self.owner.store
        timeout = float(query.get("timeoutSeconds") or MAX_WATCH_SECONDS)
        deadline = time.monotonic() + min(timeout, MAX_WATCH_SECONDS)
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        epoch = self.owner._epoch()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        # The connection ends with the watch: say so, or a client pools it and its next
        # request meets a closed socket.
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            requested = query.get("resourceVersion", "")
            if requested in ("", "0"):
                items, last = store.list(target.resource, target.namespace, predicate)
                for item in items:
                    self._chunk({"type": "ADDED", "object": item})
            else:
                try:
                    last = int(requested)
                except ValueError:
                    last = -1
            last_sent = time.monotonic()
            while not self.owner._stopping.is_set() and self.owner._epoch() == epoch:
                try:
                    events, current = store.events_since(last)
                except ApiError as error:
                    self._chunk({"type": "ERROR", "object": error.status()})
                    break
                for event in events:
                    out = self._event_for(event, target, predicate)
                    if out is not None:
                        self._chunk(out)
                        self.owner._count_sent(target.resource.key)
                        last_sent = time.monotonic()
                last = current
                now = time.monotonic()
                if now >= deadline:
                    break
                if bookmarks and now - last_sent >= self.owner.bookmark_interval:
                    self._chunk(
                        {
                            "type": "BOOKMARK",
                            "object": {
                                "kind": target.resource.kind,
                                "apiVersion": target.resource.api_version,
                                "metadata": {"resourceVersion": str(last)},
                            },
                        }
                    )
                    last_sent = now
                with store.condition:
                    if store.resource_version == last:
                        store.condition.wait(timeout=min(0.2, max(deadline - now, 0.01)))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass
        self.close_connection = True

    @staticmethod
    def _event_for(event: StoredEvent, target: Target, predicate: Any) -> Object | None:
        if event.resource.key != target.resource.key:
            return None
        namespace = (event.object.get("metadata") or {}).get("namespace")
        if target.namespace is not None and namespace != target.namespace:
            return None
        matches = predicate(event.object)
        matched = event.previous is not None and predicate(event.previous)
        if event.type == "MODIFIED":
            # An object moving out of (into) a selector is DELETED (ADDED) for this watcher.
            if matches and not matched:
                return {"type": "ADDED", "object": event.object}
            if matched and not matches:
                return {"type": "DELETED", "object": event.object}
        return {"type": event.type, "object": event.object} if matches else None

    # ------------------------------------------------------------ output

    def _chunk(self, event: Object) -> None:
        data = _encode(event) + b"\n"
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, answer: Object) -> None:
        data = _encode(answer)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _encode(answer: Object) -> bytes:
    # orjson: a page of 500 realistic pods is 2-3 MB, which the standard library takes ten
    # times longer to write, and the scale benchmark measures the components, not this.
    return orjson.dumps(answer, option=orjson.OPT_NON_STR_KEYS)
