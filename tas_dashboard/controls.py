"""Control requests, validated at the boundary: bytes in, a typed request or a 4xx with a reason.

Pure (no I/O): the app hands each control endpoint's body here before anything acts on it,
so whatever a browser, a script or a fuzzer sends, the answer is a request the demo can carry
out, or a `ControlError` whose status and message say what was wrong:

- 413: a body over `MAX_BODY_BYTES`;
- 415: a body that is not declared `application/json`;
- 400: not UTF-8, not JSON (NaN and Infinity included), not an object, unknown fields;
- 422: a field of the wrong type or out of range.

Unknown nodes and workloads (404) and conflicts (409) are the demo's to judge
(`tas_inmemory.demo.DemoError`).

Who may use the controls at all is decided here too, from the address the dashboard listens on
(`control_access`): the controls have no authentication, so beyond loopback they are refused
(403, with the reason) unless `--allow-remote-controls` says otherwise.
"""

from __future__ import annotations

import ipaddress
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tas.request_body import RejectedRequestError

MAX_BODY_BYTES = 4096


class ControlError(RejectedRequestError):
    """A control request refused: its status and why (the module docstring lists them)."""


@dataclass(frozen=True, slots=True)
class ControlAccess:
    """Whether the control endpoints act; `notice`: what `tas run` says at start (empty when
    there is nothing to say); `reason`: the 403's message when they do not act."""

    allowed: bool
    notice: str = ""
    reason: str = ""


#: Loopback, where only this machine's users can reach the controls.
LOCAL_ACCESS = ControlAccess(allowed=True)


def is_loopback(host: str) -> bool:
    """Whether `host` (a listen address) is reachable from this machine only. An empty host or
    0.0.0.0/:: is every interface; a name other than localhost is not known to be loopback."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def control_access(host: str, *, allow_remote: bool) -> ControlAccess:
    """The controls' access for a dashboard listening on `host` (`--dashboard HOST:PORT`)."""
    if is_loopback(host):
        return LOCAL_ACCESS
    where = host or "every interface"
    if allow_remote:
        return ControlAccess(
            allowed=True,
            notice=f"Dashboard controls are ON for the network (--allow-remote-controls): "
            f"anyone who reaches {where} can set health, add load and scale, unauthenticated",
        )
    return ControlAccess(
        allowed=False,
        notice=f"Dashboard controls are OFF: it listens on {where}, beyond loopback, and they "
        "have no authentication; the page and the read-only API stay on "
        "(--allow-remote-controls turns the controls on)",
        reason=f"the controls are off: the dashboard listens on {where}, beyond loopback "
        "(start tas run with --allow-remote-controls to allow them from the network)",
    )


@dataclass(frozen=True, slots=True)
class SetHealth:
    value: float


@dataclass(frozen=True, slots=True)
class Scale:
    replicas: int


@dataclass(frozen=True, slots=True)
class AddLoad:
    cores: float


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_object(body: bytes, content_type: str | None) -> Mapping[str, Any]:
    """The JSON object a control request carries."""
    if len(body) > MAX_BODY_BYTES:
        raise ControlError(413, f"the body is over {MAX_BODY_BYTES} bytes")
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise ControlError(415, "send the body as Content-Type: application/json")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ControlError(400, f"the body is not UTF-8: {error.reason}") from error
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except RecursionError as error:
        raise ControlError(400, "the body is nested too deeply") from error
    except ValueError as error:
        raise ControlError(400, f"the body is not JSON: {error}") from error
    if not isinstance(data, dict):
        raise ControlError(400, f"the body must be a JSON object, not {type(data).__name__}")
    return data


def _only(data: Mapping[str, Any], *allowed: str) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ControlError(
            400, f"unknown field {unknown[0]!r}; expected {', '.join(map(repr, allowed))}"
        )


def _number(data: Mapping[str, Any], key: str) -> float:
    if key not in data:
        raise ControlError(422, f"{key!r} is required")
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ControlError(422, f"{key!r} must be a number, not {json.dumps(value)[:40]}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ControlError(422, f"{key!r} must be a finite number")
    return number


def parse_set_health(body: bytes, content_type: str | None) -> SetHealth:
    """`{"value": 2}`: any finite number, as `tas set-health` takes."""
    data = parse_object(body, content_type)
    _only(data, "value")
    return SetHealth(_number(data, "value"))


def parse_scale(body: bytes, content_type: str | None, *, most: int) -> Scale:
    """`{"replicas": 5}`: a whole number 0..`most`."""
    data = parse_object(body, content_type)
    _only(data, "replicas")
    number = _number(data, "replicas")
    if not number.is_integer() or not 0 <= number <= most:
        raise ControlError(422, f"'replicas' must be a whole number 0..{most}, not {number:g}")
    return Scale(int(number))


def parse_add_load(body: bytes, content_type: str | None, *, most: float) -> AddLoad:
    """`{"cores": 2.5}`: more than 0, at most `most`."""
    data = parse_object(body, content_type)
    _only(data, "cores")
    cores = _number(data, "cores")
    if not 0 < cores <= most:
        raise ControlError(422, f"'cores' must be more than 0 and at most {most:g}")
    return AddLoad(cores)
