"""No open controls by accident: beyond loopback the dashboard's controls are refused.

Covered: which listen addresses count as loopback, and what `control_access` decides for each
with and without `--allow-remote-controls` (a table: the decision is a pure function of the two);
a real dashboard configured as reached from the network (served on 127.0.0.1, as every test
server here is, with the access a non-loopback address gets) answers every control with 403
and its reason, acts on none of them, and keeps the page and the read-only API open; with
`--allow-remote-controls` the same controls act; `tas run` reads the flag and builds the
access from its `--dashboard` address.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tas_cli.main import build_parser
from tas_cli.run import RunCommandSettings
from tas_dashboard.controls import LOCAL_ACCESS, control_access, is_loopback
from tests.tas_dashboard.harness import Harness


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        pytest.param("127.0.0.1", True, id="127.0.0.1"),
        pytest.param("127.8.9.10", True, id="all of 127/8"),
        pytest.param("::1", True, id="::1"),
        pytest.param("localhost", True, id="localhost"),
        pytest.param("LocalHost", True, id="localhost in any case"),
        pytest.param("0.0.0.0", False, id="every IPv4 interface"),
        pytest.param("::", False, id="every IPv6 interface"),
        pytest.param("", False, id="empty: every interface"),
        pytest.param("192.168.1.20", False, id="a private address"),
        pytest.param("10.0.0.5", False, id="another private address"),
        pytest.param("fe80::1%eth0", False, id="link-local with a zone"),
        pytest.param("dashboard.example", False, id="a name: not known to be loopback"),
        pytest.param("localhost.example", False, id="a name starting with localhost"),
    ],
)
def test_only_loopback_addresses_count_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("host", "allow_remote", "allowed", "says"),
    [
        pytest.param("127.0.0.1", False, True, "", id="loopback: on, nothing to say"),
        pytest.param("::1", True, True, "", id="loopback with the flag: the same"),
        pytest.param("0.0.0.0", False, False, "controls are OFF", id="network: off"),
        pytest.param("0.0.0.0", True, True, "controls are ON for the network", id="flag: on"),
        pytest.param("192.168.1.20", False, False, "listens on 192.168.1.20", id="an address"),
    ],
)
def test_the_controls_beyond_loopback_need_allow_remote_controls(
    host: str, allow_remote: bool, allowed: bool, says: str
) -> None:
    access = control_access(host, allow_remote=allow_remote)
    assert access.allowed is allowed
    if says:
        assert says in access.notice
    else:
        assert access == LOCAL_ACCESS
        assert not access.notice
    if not allowed:
        assert "--allow-remote-controls" in access.reason
        assert "--allow-remote-controls" in access.notice
        assert "read-only API stay on" in access.notice


CONTROLS = [
    pytest.param("POST", "/api/nodes/node-c/health", {"value": 2}, id="set health"),
    pytest.param("POST", "/api/nodes/node-c/load", {"cores": 2}, id="add load"),
    pytest.param("DELETE", "/api/nodes/node-c/load", None, id="clear load"),
    pytest.param("POST", "/api/workloads/demo-app/scale", {"replicas": 1}, id="scale"),
]


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """A dashboard with the access `tas run --dashboard 0.0.0.0:PORT` gives it (it is served
    on 127.0.0.1 all the same: no test listens beyond loopback)."""
    access = control_access("0.0.0.0", allow_remote=False)
    with Harness(tmp_path_factory.mktemp("remote"), access=access) as running:
        yield running


@pytest.mark.parametrize(("method", "path", "body"), CONTROLS)
def test_a_remote_dashboard_refuses_each_control_with_403_and_acts_on_none(
    remote: Harness, method: str, path: str, body: dict[str, float] | None
) -> None:
    before = remote.client.get("/api/state").json()
    answer = remote.client.request(method, path, json=body)
    assert answer.status_code == 403
    assert "--allow-remote-controls" in answer.json()["error"]
    remote.tick()
    after = remote.client.get("/api/state").json()
    assert [(p["name"], p["node"]) for p in after["pods"]] == [
        (p["name"], p["node"]) for p in before["pods"]
    ]
    assert [n["metrics"]["health_metric"] for n in after["nodes"]] == [
        n["metrics"]["health_metric"] for n in before["nodes"]
    ]
    assert all(entry["kind"] != "control" for entry in remote.recorder.log(after=0, limit=None))


def test_a_remote_dashboard_keeps_the_page_and_the_read_only_api(remote: Harness) -> None:
    assert remote.client.get("/").status_code == 200
    for path in ("/api/state", "/api/nodes", "/api/nodes/node-c", "/api/pods", "/api/policies",
                 "/api/decisions", "/api/history"):  # fmt: skip
        assert remote.client.get(path).status_code == 200, path
    controls = remote.client.get("/api").json()["controls"]
    assert controls["allowed"] is False
    assert "--allow-remote-controls" in controls["reason"]


def test_allow_remote_controls_lets_the_same_controls_act(tmp_path: Path) -> None:
    access = control_access("0.0.0.0", allow_remote=True)
    with Harness(tmp_path, access=access) as running:
        answer = running.client.post("/api/nodes/node-c/health", json={"value": 2})
        assert answer.json() == {"ok": True, "node": "node-c", "value": 2}
        assert running.client.get("/api").json()["controls"] == {"allowed": True, "reason": None}


@pytest.mark.parametrize(
    ("argv", "allowed"),
    [
        pytest.param([], True, id="the default, 127.0.0.1:8080"),
        pytest.param(["--dashboard", "0.0.0.0:8080"], False, id="every interface"),
        pytest.param(["--dashboard", ":8080"], False, id=":PORT is every interface"),
        pytest.param(
            ["--dashboard", "0.0.0.0:8080", "--allow-remote-controls"], True, id="with the flag"
        ),
    ],
)
def test_tas_run_builds_the_access_from_its_dashboard_address_and_the_flag(
    argv: list[str], allowed: bool
) -> None:
    settings = RunCommandSettings.from_args(build_parser(load=["run"]).parse_args(["run", *argv]))
    access = control_access(settings.dashboard[0], allow_remote=settings.allow_remote_controls)
    assert access.allowed is allowed
