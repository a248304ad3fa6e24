"""Durations as operators write them: Go's `time.ParseDuration` grammar, plus bare seconds.

Intel TAS and kubernetes-sigs/descheduler are Go programs, so their users write `2s`, `500ms`,
`1m30s` or `1h` in flags and config files; the same spellings must mean the same here, in
every component. A bare number (`30`, `0.5`) is seconds, as this project's own flags have
always accepted. Units: `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`; a number may carry a
fraction (`1.5h`); units combine in any order (`1h30m`, `30m1h`), as Go allows. Negative
durations are refused: no setting here can use one.

Errors:
    DurationError (ValueError)   text that is not such a duration
"""

from __future__ import annotations

import re

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_PART = re.compile(rf"({_NUMBER})(ns|us|µs|μs|ms|s|m|h)")
_WHOLE = re.compile(rf"(?:{_NUMBER}(?:ns|us|µs|μs|ms|s|m|h))+")
_BARE = re.compile(rf"{_NUMBER}")


class DurationError(ValueError):
    """Text that is not a duration like 2s, 500ms, 1m30s or a bare number of seconds."""


def parse_duration(text: str) -> float:
    """Seconds in `text` (see the module docstring); 0 is allowed, negatives are not."""
    stripped = text.strip()
    if stripped.startswith("-"):
        raise DurationError(f"duration {text!r} must not be negative")
    stripped = stripped.removeprefix("+")
    if _BARE.fullmatch(stripped):
        return float(stripped)
    if not _WHOLE.fullmatch(stripped):
        raise DurationError(f"{text!r} is not a duration like 2s, 500ms, 1m30s or 1h")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _PART.findall(stripped))


def format_duration(seconds: float) -> str:
    """The shortest common spelling (`90s` -> `1m30s`), for messages and printed configs."""
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    whole = int(seconds)
    if whole != seconds:
        return f"{seconds:g}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if v]
    return "".join(parts)
