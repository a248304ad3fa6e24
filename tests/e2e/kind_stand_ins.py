"""Stand-ins for kind, docker and kubectl, so scripts/e2e-kind.sh runs against the API emulator.

`StandIns` serves them over HTTP on 127.0.0.1, inside the test's process; the `kind`, `docker`
and `kubectl` that `install` puts first on PATH are three-line `python -S` clients that send
their arguments, working directory and $KUBECONFIG there and print the answer (a Python start
with this module's imports costs half a second, and the script makes some fifty calls). Every
call is recorded (`StandIns.calls`) before it runs. Objects go to the emulator over its REST
API, so what the API server refuses (a namespaced object before its namespace, a kind nobody
serves, a JSON patch whose `test` fails) is refused here too, with kubectl's message and exit
code. What each tool does:

- kind: `get clusters` lists none; `create cluster --name N --config F --kubeconfig K` checks
  every `extraMounts` hostPath exists, registers the nodes N-control-plane, N-worker, N-worker2
  (kind's names for one control plane and two workers), writes kubeadm's kube-scheduler static
  Pod with the strategic-merge patches of the directory the InitConfiguration names (read
  through the mount that carries it), and writes K pointing at the emulator; `load
  docker-image IMAGE` is refused unless `docker build -t IMAGE` ran first; `delete cluster`.
- docker: `info`; `build -t IMAGE DIR`; `exec NODE COMMAND...` runs COMMAND here, with every
  absolute path argument moved under `<state>/nodes/NODE` (the node's filesystem); a node
  that is not registered is "No such container".
- kubectl (server and token from $KUBECONFIG): `apply -f FILE...` and `apply -k DIR` (rendered
  by tests/deploy/kustomize.py), `create secret generic`, `get ... -o jsonpath=` (the subset of
  kubectl's JSONPath the script uses), `rollout status` (a Deployment's available replicas for
  its current generation, a DaemonSet's ready pods), `wait --for=condition=Established crd/X`,
  `patch --type json`, `logs -l app.kubernetes.io/name=X` (prints `<state>/logs/X.log`),
  and `exec deploy/tas-prometheus -- wget -qO- URL`, answered from the emulator and the nodes'
  textfiles as Prometheus would answer the script's two queries.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import re
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import yaml

from tests.deploy.kustomize import render, strategic_merge
from tests.k8s_emulator.resources import BY_KIND, BY_PLURAL, ResourceType

#: kubeadm's kube-scheduler static Pod, as far as the script reads it (kubernetes, cmd/kubeadm/
#: app/phases/controlplane/manifests.go: `command`, no `args`; host network, ClusterFirst DNS).
KUBE_SCHEDULER = {
    "metadata": {
        "name": "kube-scheduler",
        "namespace": "kube-system",
        "labels": {"component": "kube-scheduler", "tier": "control-plane"},
    },
    "spec": {
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirst",
        "containers": [
            {
                "name": "kube-scheduler",
                "command": [
                    "kube-scheduler",
                    "--kubeconfig=/etc/kubernetes/scheduler.conf",
                    "--leader-elect=true",
                ],
                "volumeMounts": [
                    {"name": "kubeconfig", "mountPath": "/etc/kubernetes/scheduler.conf"}
                ],
            }
        ],
        "volumes": [{"name": "kubeconfig", "hostPath": {"path": "/etc/kubernetes/scheduler.conf"}}],
    },
    "status": {"phase": "Running"},
}


class ToolError(Exception):
    """The tool's error: printed to stderr, exit code 1."""


@dataclass
class Call:
    """One run of a tool: where it runs, what it prints, and the cluster it reaches."""

    stand_ins: StandIns
    cwd: Path
    kubeconfig: str
    out: io.StringIO = field(default_factory=io.StringIO)
    err: io.StringIO = field(default_factory=io.StringIO)
    clients: list[Api] = field(default_factory=list)

    @property
    def state(self) -> Path:
        return self.stand_ins.state

    def path(self, name: str) -> Path:
        """A path argument, relative to the tool's working directory."""
        return self.cwd / name

    def api(self, kubeconfig: str = "") -> Api:
        """The cluster of `kubeconfig`, by default $KUBECONFIG (closed when the call ends)."""
        api = Api(self.path(kubeconfig or self.kubeconfig))
        self.clients.append(api)
        return api

    def print(self, text: str) -> None:
        self.out.write(text + "\n")


class StandIns(contextlib.AbstractContextManager["StandIns"]):
    """The stand-ins' server; `install(bin_dir)` writes the three clients."""

    def __init__(self, state: Path, *, emulator_url: str, emulator_token: str) -> None:
        self.state, self.emulator_url, self.emulator_token = state, emulator_url, emulator_token
        self.calls: list[list[str]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                answer = json.dumps(owner.run(**request)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> StandIns:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def install(self, bin_dir: Path) -> None:
        host, port = self._server.server_address[:2]
        url = f"http://{host!s}:{port}/"
        client = (
            "import json, os, sys, urllib.request; "
            "request = {'tool': sys.argv[1], 'args': sys.argv[2:], 'cwd': os.getcwd(), "
            "'kubeconfig': os.environ.get('KUBECONFIG', '')}; "
            f"answer = json.load(urllib.request.urlopen({url!r}, json.dumps(request).encode(), "
            "timeout=600)); "
            "sys.stdout.write(answer['stdout']); sys.stderr.write(answer['stderr']); "
            "sys.exit(answer['code'])"
        )
        bin_dir.mkdir(parents=True, exist_ok=True)
        for tool in ("kind", "docker", "kubectl"):
            wrapper = bin_dir / tool
            wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S -c "{client}" {tool} "$@"\n')
            wrapper.chmod(0o755)

    def run(self, tool: str, args: list[str], cwd: str, kubeconfig: str) -> dict[str, Any]:
        with self._lock:
            self.calls.append([tool, *args])
        call = Call(self, Path(cwd), kubeconfig)
        code = 0
        try:
            {"kind": kind, "docker": docker, "kubectl": kubectl}[tool](call, list(args))
        except ToolError as error:
            call.err.write(f"{error}\n")
            code = 1
        except Exception:  # a stand-in's own bug: shown in the script's output, never a hang
            call.err.write(traceback.format_exc())
            code = 2
        finally:
            for api in call.clients:
                api.client.close()
        return {"code": code, "stdout": call.out.getvalue(), "stderr": call.err.getvalue()}


def option(args: list[str], *names: str) -> str | None:
    """The value of `--name value` or `--name=value` (removed from args), or None."""
    for index, arg in enumerate(args):
        for name in names:
            if arg == name and index + 1 < len(args):
                value = args[index + 1]
                del args[index : index + 2]
                return value
            if arg.startswith(f"{name}="):
                del args[index]
                return arg.partition("=")[2]
    return None


# --------------------------------------------------------------------------- the API


def path_of(resource: ResourceType, namespace: str | None, name: str | None = None) -> str:
    where = f"/namespaces/{namespace}" if resource.namespaced and namespace else ""
    return f"{resource.prefix}{where}/{resource.plural}" + (f"/{name}" if name else "")


class Api:
    """The emulator, reached as kubectl reaches a cluster: through a kubeconfig."""

    def __init__(self, kubeconfig: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
        server = config["clusters"][0]["cluster"]["server"]
        token = config["users"][0]["user"]["token"]
        self.client = httpx.Client(
            base_url=server, headers={"Authorization": f"Bearer {token}"}, timeout=10
        )

    def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        answer = self.client.request(method, path, **kwargs)
        return answer.status_code, answer.json()


def server_error(body: Any, doing: str = "") -> ToolError:
    reason, message = body.get("reason", "Unknown"), body.get("message", "")
    return ToolError(f"Error from server ({reason}): {doing}{message}")


# --------------------------------------------------------------------------- kind


def kind(call: Call, args: list[str]) -> None:
    if args[:2] == ["get", "clusters"]:
        return
    if args[:2] == ["load", "docker-image"]:
        image = args[2]
        built = [c for c in call.stand_ins.calls if c[:3] == ["docker", "build", "-t"]]
        if not any(c[3] == image for c in built):
            raise ToolError(f'ERROR: image: "{image}" not present locally')
        return
    if args[:2] == ["delete", "cluster"]:
        return
    if args[:2] != ["create", "cluster"]:
        raise ToolError(f"kind stand-in: unsupported: {args}")
    rest = args[2:]
    name = option(rest, "--name") or "kind"
    config_file = call.path(option(rest, "--config") or "")
    config = yaml.safe_load(config_file.read_text(encoding="utf-8"))
    kubeconfig_name = option(rest, "--kubeconfig") or ""
    kubeconfig = call.path(kubeconfig_name)
    mounts: dict[str, Path] = {}
    for node in config["nodes"]:
        for mount in node.get("extraMounts", []):
            host = call.path(mount["hostPath"])
            if not host.is_dir():
                raise ToolError(f"ERROR: failed to create cluster: mount source {host} missing")
            mounts[mount["containerPath"]] = host
    server, token = call.stand_ins.emulator_url, call.stand_ins.emulator_token
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": name, "cluster": {"server": server}}],
                "users": [{"name": name, "user": {"token": token}}],
                "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
                "current-context": name,
            }
        ),
        encoding="utf-8",
    )
    api = call.api(kubeconfig_name)
    roles = [node["role"] for node in config["nodes"]]
    names = [f"{name}-control-plane"] + [
        f"{name}-worker{index if index > 1 else ''}"
        for index in range(1, roles.count("worker") + 1)
    ]
    for node_name in names:
        worker = not node_name.endswith("-control-plane")
        labels = {"kubernetes.io/hostname": node_name}
        if not worker:
            labels["node-role.kubernetes.io/control-plane"] = ""
        node = {"metadata": {"name": node_name, "labels": labels}}
        api.call("POST", "/api/v1/nodes", json=node)
    pod = strategic_merge(KUBE_SCHEDULER, {"metadata": {"name": f"kube-scheduler-{names[0]}"}})
    for patch in _kubeadm_patches(config, mounts):
        pod = strategic_merge(pod, patch)
    pod["spec"]["nodeName"] = names[0]
    status, body = api.call("POST", "/api/v1/namespaces/kube-system/pods", json=pod)
    if status >= 300:
        raise server_error(body)


def _kubeadm_patches(config: dict[str, Any], mounts: dict[str, Path]) -> Iterator[Any]:
    """kubeadm's `patches.directory` for kube-scheduler: files `kube-scheduler+strategic.*`."""
    for node in config["nodes"]:
        for text in node.get("kubeadmConfigPatches", []):
            patch = yaml.safe_load(text)
            directory = (patch.get("patches") or {}).get("directory")
            if patch.get("kind") != "InitConfiguration" or not directory:
                continue
            host = mounts.get(directory)
            if host is None:
                raise ToolError(f"kubeadm: [patches] could not list patches from {directory}")
            for path in sorted(host.glob("kube-scheduler+strategic.*")):
                yield yaml.safe_load(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- docker


def docker(call: Call, args: list[str]) -> None:
    if args[:1] in (["info"], ["build"]):
        return
    if args[:1] != ["exec"]:
        raise ToolError(f"docker stand-in: unsupported: {args}")
    node, *command = args[1:]
    registered = call.api().call("GET", f"/api/v1/nodes/{node}")[0]
    if registered != 200:
        raise ToolError(f"Error response from daemon: No such container: {node}")
    root = call.state / "nodes" / node
    moved = [f"{root}{arg}" if arg.startswith("/") else arg for arg in command]
    result = subprocess.run(moved, cwd=call.cwd, capture_output=True, text=True, check=False)
    call.out.write(result.stdout)
    call.err.write(result.stderr)
    if result.returncode:
        raise ToolError(f"docker exec: exit code {result.returncode}")


# --------------------------------------------------------------------------- kubectl


def kubectl(call: Call, args: list[str]) -> None:
    namespace = option(args, "-n", "--namespace")
    verb, rest = args[0], args[1:]
    if verb == "apply":
        apply(call, rest, namespace)
    elif verb == "create" and rest[:2] == ["secret", "generic"]:
        create_secret(call, rest[2:], namespace or "default")
    elif verb == "get":
        get(call, rest, namespace or "default")
    elif verb == "rollout" and rest[:1] == ["status"]:
        rollout_status(call, rest[1:], namespace or "default")
    elif verb == "wait":
        wait_established(call, rest)
    elif verb == "patch":
        patch(call, rest, namespace or "default")
    elif verb == "logs":
        logs(call, rest, namespace or "default")
    elif verb == "exec":
        prometheus_query(call, rest, namespace or "default")
    else:
        raise ToolError(f"kubectl stand-in: unsupported: {args}")


def apply(call: Call, args: list[str], namespace: str | None) -> None:
    api = call.api()
    documents: list[tuple[str, dict[str, Any]]] = []
    while (directory := option(args, "-k")) is not None:
        documents += [(directory, d) for d in render(call.path(directory))]
    while (file := option(args, "-f")) is not None:
        text = call.path(file).read_text(encoding="utf-8")
        documents += [(file, d) for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    errors = []
    for source, document in documents:
        version, kind_ = document["apiVersion"], document["kind"]
        name = document["metadata"]["name"]
        resource = BY_KIND.get((version, kind_))
        where = document["metadata"].get("namespace") or namespace or "default"
        if resource is None:
            errors.append(
                f'error: resource mapping not found for name: "{name}" namespace: "{where}" '
                f'from "{source}": no matches for kind "{kind_}" in version "{version}"'
            )
            continue
        collection = path_of(resource, where)
        status, body = api.call("POST", collection, json=document)
        if status == 409:  # there already: replace it, as apply updates
            _, current = api.call("GET", f"{collection}/{name}")
            document["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            status, body = api.call("PUT", f"{collection}/{name}", json=document)
        if status >= 300:
            errors.append(str(server_error(body, f'error when creating "{source}": ')))
            continue
        group = resource.api_version.rpartition("/")[0]
        call.print(f"{kind_.lower()}{'.' + group if group else ''}/{name} configured")
    if errors:
        raise ToolError("\n".join(errors))


def create_secret(call: Call, args: list[str], namespace: str) -> None:
    api = call.api()
    name, data = args[0], {}
    while (source := option(args, "--from-file")) is not None:
        key, _, path = source.partition("=")
        data[key] = base64.b64encode(call.path(path).read_bytes()).decode()
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": data}
    status, body = api.call("POST", f"/api/v1/namespaces/{namespace}/secrets", json=secret)
    if status >= 300:
        raise server_error(body)
    call.print(f"secret/{name} created")


_SINGULAR = {"pod": "pods", "node": "nodes"}


def get(call: Call, args: list[str], namespace: str) -> None:
    api = call.api()
    selector = option(args, "-l", "--selector")
    fields = option(args, "--field-selector")
    output = option(args, "-o", "--output") or ""
    if not output.startswith("jsonpath="):
        raise ToolError(f"kubectl stand-in: only -o jsonpath=, not {output!r}")
    plural = _SINGULAR.get(args[0], args[0])
    resource = BY_PLURAL[plural]
    params = {k: v for k, v in {"labelSelector": selector, "fieldSelector": fields}.items() if v}
    if len(args) > 1:
        status, found = api.call("GET", path_of(resource, namespace, args[1]))
    else:
        status, found = api.call("GET", path_of(resource, namespace), params=params)
    if status >= 300:
        raise server_error(found)
    call.out.write(jsonpath(output.removeprefix("jsonpath="), found))


def jsonpath(template: str, data: Any) -> str:
    """kubectl's JSONPath output for the templates the script uses: fields, `[n]`, `[*]`,
    `{range}...{end}` and string literals; missing keys print nothing, as in `kubectl get`."""
    tokens = re.findall(r"\{((?:\"(?:[^\"\\]|\\.)*\"|[^}])*)\}|([^{]+)", template)
    out, _ = _run(tokens, 0, [data])
    return out


def _run(tokens: list[tuple[str, str]], at: int, scopes: list[Any]) -> tuple[str, int]:
    out = ""
    while at < len(tokens):
        expression, text = tokens[at]
        at += 1
        if text:
            out += text * len(scopes)
        elif expression.startswith("range "):
            items = [v for scope in scopes for v in _select(expression[6:], scope)]
            body = ""
            end = at
            for item in items:
                body_text, end = _run(tokens, at, [item])
                body += body_text
            if not items:  # skip to the matching end
                _, end = _run(tokens, at, [])
            out, at = out + body, end
        elif expression == "end":
            return out, at
        elif expression.startswith('"'):
            out += json.loads(expression) * len(scopes)
        else:
            values = [v for scope in scopes for v in _select(expression, scope)]
            out += " ".join(v if isinstance(v, str) else json.dumps(v) for v in values)
    return out, at


def _select(path: str, data: Any) -> list[Any]:
    values = [data]
    for step in re.findall(r"\.([^.\[]+)|\[(\*|\d+)\]", path):
        key, index = step
        found = []
        for value in values:
            if key and isinstance(value, dict) and key in value:
                found.append(value[key])
            elif index == "*" and isinstance(value, list):
                found.extend(value)
            elif index.isdigit() and isinstance(value, list) and int(index) < len(value):
                found.append(value[int(index)])
        values = found
    return values


def _seconds(text: str | None, default: float) -> float:
    return float(text.removesuffix("s")) if text else default


def rollout_status(call: Call, args: list[str], namespace: str) -> None:
    api = call.api()
    timeout = _seconds(option(args, "--timeout"), 30)
    kind_, _, name = args[0].partition("/")
    resource = BY_PLURAL[kind_.removesuffix("s") + "s"]
    deadline = time.monotonic() + timeout
    while True:
        status, found = api.call("GET", path_of(resource, namespace, name))
        if status >= 300:
            raise server_error(found)
        if _rolled_out(found):
            call.print(f'{kind_} "{name}" successfully rolled out')
            return
        if time.monotonic() > deadline:
            raise ToolError("error: timed out waiting for the condition")
        time.sleep(0.1)


def _rolled_out(found: dict[str, Any]) -> bool:
    status = found.get("status") or {}
    if found["kind"] == "DaemonSet":
        return 0 < status.get("desiredNumberScheduled", 0) <= status.get("numberReady", 0)
    current = status.get("observedGeneration", 0) >= found["metadata"].get("generation", 1)
    wanted = (found.get("spec") or {}).get("replicas", 1)
    return bool(current and status.get("availableReplicas", 0) >= wanted)


def wait_established(call: Call, args: list[str]) -> None:
    api = call.api()
    condition = option(args, "--for")
    timeout = _seconds(option(args, "--timeout"), 30)
    if condition != "condition=Established" or not args[0].startswith("crd/"):
        raise ToolError(f"kubectl stand-in: unsupported wait: {condition} {args}")
    name = args[0].removeprefix("crd/")
    resource = BY_PLURAL["customresourcedefinitions"]
    deadline = time.monotonic() + timeout
    while True:
        status, found = api.call("GET", path_of(resource, None, name))
        if status >= 300:
            raise server_error(found)
        conditions = (found.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            call.print(f"customresourcedefinition.apiextensions.k8s.io/{name} condition met")
            return
        if time.monotonic() > deadline:
            raise ToolError("error: timed out waiting for the condition")
        time.sleep(0.1)


def patch(call: Call, args: list[str], namespace: str) -> None:
    api = call.api()
    kind_, name = args[0], args[1]
    if option(args, "--type") != "json":
        raise ToolError("kubectl stand-in: only --type json patches")
    operations = json.loads(option(args, "-p", "--patch") or "[]")
    resource = BY_PLURAL[kind_.removesuffix("s") + "s"]
    status, body = api.call(
        "PATCH",
        path_of(resource, namespace, name),
        content=json.dumps(operations),
        headers={"Content-Type": "application/json-patch+json"},
    )
    if status >= 300:
        raise server_error(body)
    call.print(f"{kind_}.apps/{name} patched")


def logs(call: Call, args: list[str], namespace: str) -> None:
    api = call.api()
    selector = option(args, "-l", "--selector") or ""
    option(args, "--tail")
    key, _, value = selector.partition("=")
    params = {"labelSelector": selector}
    _, found = api.call("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments", params=params)
    log = call.state / "logs" / f"{value}.log"
    if key != "app.kubernetes.io/name" or not found.get("items") or not log.exists():
        call.err.write(f"No resources found in {namespace} namespace.\n")
        return
    call.out.write(log.read_text(encoding="utf-8"))


#: A Prometheus job of deploy/metrics-pipeline (the standalone profile's): the workload its
#: targets are the pods of.
JOBS = {
    "node-exporter": ("daemonsets", "tas-monitoring", "tas-node-exporter"),
    "tas-extender": ("deployments", "telemetry-aware-scheduling", "tas-extender"),
    "tas-policy-controller": ("deployments", "telemetry-aware-scheduling", "tas-policy-controller"),
    "tas-descheduler": ("deployments", "telemetry-aware-scheduling", "tas-descheduler"),
}


def prometheus_query(call: Call, args: list[str], namespace: str) -> None:
    """`exec deploy/tas-prometheus -- wget -qO- URL`: `up{job="J"}==1` has a value when J's
    workload is rolled out, `node_health_metric{instance="N"}` when node N has the textfile."""
    api = call.api()
    target, command = args[0], args[args.index("--") + 1 :]
    status, found = api.call(
        "GET", path_of(BY_PLURAL["deployments"], namespace, target.removeprefix("deploy/"))
    )
    if status >= 300:
        raise server_error(found)
    query = parse_qs(urlsplit(command[-1]).query)["query"][0]
    results = []
    if job := re.fullmatch(r'up\{job="([^"]+)"\}==1', query):
        plural, where, name = JOBS[job.group(1)]
        _, workload = api.call("GET", path_of(BY_PLURAL[plural], where, name))
        if workload.get("kind") and _rolled_out(workload):
            results.append({"metric": {"job": job.group(1)}, "value": [time.time(), "1"]})
    elif node := re.fullmatch(r'node_health_metric\{instance="([^"]+)"\}', query):
        textfile = call.state / "nodes" / node.group(1) / "tmp" / "node-metrics" / "text.prom"
        if textfile.exists():
            value = textfile.read_text(encoding="utf-8").split()[-1]
            results.append({"metric": {"instance": node.group(1)}, "value": [time.time(), value]})
    call.print(
        json.dumps({"status": "success", "data": {"resultType": "vector", "result": results}})
    )
