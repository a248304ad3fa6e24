"""Intel TAS's command-line flags, translated to this project's: a pure function.

TAS users move here with Deployments whose command lines say `--syncPeriod=2s --v=2
--cert=... --port=9001`. TAS is one Go binary that serves the extender and runs the policy
controller; its flags come from Go's `flag` package (its own seven) and from klog (`--v` and
the log-file flags). `translate_tas_flags` rewrites such a command line for `tas extender` or
`tas controller` and says, once per TAS flag, what the new spelling is (or why the flag is
ignored), so an old manifest starts and its log tells the user what to change.

Go's `flag` grammar is followed exactly: `-flag` and `--flag` are the same; a value flag takes
`-flag=value` or the next argument (whatever it looks like); a boolean flag is `-flag`, or
`-flag=<bool>` with the spellings of Go's `strconv.ParseBool` (it never takes the next
argument); names are case-sensitive (`--kubeConfig` is TAS's, `--kubeconfig` is ours); `--`
ends the flags. Everything that is not a TAS flag passes through unchanged, in order, so new
and old flags can be mixed; the result is for the component's own argument parser, which
still reports unknown flags and bad values of its own.

The mapping (docs/upgrade-from-tas.md explains each):

| TAS flag | extender | controller |
|---|---|---|
| `--kubeConfig F` | `--kubeconfig F` | `--kubeconfig F` |
| `--port N` | `--listen 0.0.0.0:N` | ignored (the controller serves no extender) |
| `--cert`, `--key`, `--cacert` | kept; dropped with `--unsafe`; `--cacert` TAS default | ignored |
| `--unsafe` | `--insecure-http` | ignored |
| `--syncPeriod D` | `--sync-period D` | `--sync-period D` |
| `--v N` | `--log-level debug` for N >= 4, else `--log-level info` | same |
| klog's `--logtostderr`, `--log_dir`, ... | ignored (logs always go to standard error) | same |

TAS always read node metrics from the custom metrics API and had no flag for it, so when a
command line uses TAS flags but names no `--metrics`, `--metrics custom-metrics` is added.

TAS's extender always required client certificates, verified against `--cacert`, whose default
was `/etc/kubernetes/pki/ca.crt` (`cmd/main.go`'s flag defaults; `extender/scheduler.go`,
`configureSecureServer`, sets `tls.RequireAndVerifyClientCert`). So when an extender command line
uses TAS flags, serves TLS (`--cert`/`--key`, no `--unsafe`) and names no `--cacert`, TAS's
default is added: the mTLS guarantee TAS gave is kept, never silently dropped. The extender
refuses to start when that file does not exist, naming the flag to pass.

Errors:
    TasFlagError (ValueError)   a TAS flag TAS itself would have refused (no value, a value
                                that is not a port, duration, level or boolean), or a TAS flag
                                given together with the new flag that replaces it
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tas.durations import DurationError, parse_duration

Component = Literal["extender", "controller"]

#: klog's verbosity at which TAS logs its debugging detail (its V(4) lines).
DEBUG_VERBOSITY = 4
#: `--port N` listens on every interface, as TAS's `":" + port` did.
LISTEN_HOST = "0.0.0.0"
#: The metric source TAS always used.
TAS_METRIC_SOURCE = "custom-metrics"
#: TAS's `--cacert` default: the kubeadm cluster CA, which client certificates must chain to.
TAS_DEFAULT_CACERT = "/etc/kubernetes/pki/ca.crt"

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_LEVEL = re.compile(r"[+-]?[0-9]+")
_PORT = re.compile(r"[0-9]{1,5}")


class TasFlagError(ValueError):
    """A TAS flag that TAS would have refused too, or one that clashes with its new flag."""


@dataclass(frozen=True)
class _Use:
    """One TAS flag as the user wrote it (its `tokens`), quoted back in the notices."""

    name: str
    value: str | None  # None: a boolean flag given without `=value`
    tokens: tuple[str, ...]  # the arguments as given: `-flag value` or `-flag[=value]`

    @property
    def spelling(self) -> str:
        return " ".join(self.tokens)


@dataclass(frozen=True)
class _Outcome:
    args: tuple[str, ...]
    notice: str | None


_Rule = Callable[[_Use, Component, bool], _Outcome]


def _renamed(new_flag: str, check: Callable[[_Use], str] | None = None) -> _Rule:
    def rule(use: _Use, component: Component, unsafe: bool) -> _Outcome:
        value = check(use) if check is not None else _value(use)
        return _Outcome(
            (f"{new_flag}={value}",),
            f"TAS flag {use.spelling} is deprecated: use {new_flag} {value}",
        )

    return rule


def _ignored(reason: str) -> _Rule:
    def rule(use: _Use, component: Component, unsafe: bool) -> _Outcome:
        return _Outcome((), f"TAS flag {use.spelling} is ignored: {reason}")

    return rule


def _value(use: _Use) -> str:
    if use.value is None:  # only value flags reach here; the parser guarantees a value
        raise TasFlagError(f"flag needs an argument: {use.spelling}")
    return use.value


def _duration(use: _Use) -> str:
    value = _value(use)
    try:
        parse_duration(value)
    except DurationError as error:
        raise TasFlagError(f"{use.spelling}: {error}") from error
    return value


def _port(use: _Use, component: Component, unsafe: bool) -> _Outcome:
    if component == "controller":
        return _ignored(
            "the extender's port; the controller's probes and metrics use --listen HOST:PORT"
        )(use, component, unsafe)
    value = _value(use)
    if not _PORT.fullmatch(value) or int(value) > 65535:
        raise TasFlagError(f"{use.spelling}: {value!r} is not a port number")
    listen = f"{LISTEN_HOST}:{int(value)}"
    return _Outcome(
        (f"--listen={listen}",), f"TAS flag {use.spelling} is deprecated: use --listen {listen}"
    )


def _tls_file(use: _Use, component: Component, unsafe: bool) -> _Outcome:
    flag = f"--{use.name}"
    if component == "controller":
        return _ignored("TLS is the extender's; the controller serves no HTTPS")(
            use, component, unsafe
        )
    if unsafe:
        return _ignored("--unsafe serves plain HTTP, so TAS ignored it too")(use, component, unsafe)
    value = _value(use)
    if use.tokens[0].startswith("--"):
        return _Outcome(use.tokens, None)  # this project's own flag, as written
    return _Outcome((f"{flag}={value}",), f"TAS flag {use.spelling}: use {flag}")


def _unsafe(use: _Use, component: Component, unsafe: bool) -> _Outcome:
    if component == "controller":
        return _ignored("plain HTTP is the extender's choice")(use, component, unsafe)
    if not _bool(use):
        return _ignored("false is TAS's default (HTTPS)")(use, component, unsafe)
    return _Outcome(
        ("--insecure-http",), f"TAS flag {use.spelling} is deprecated: use --insecure-http"
    )


def _verbosity(use: _Use, component: Component, unsafe: bool) -> _Outcome:
    value = _value(use)
    if not _LEVEL.fullmatch(value):
        raise TasFlagError(f"{use.spelling}: {value!r} is not a klog verbosity (a number)")
    level = "debug" if int(value) >= DEBUG_VERBOSITY else "info"
    return _Outcome(
        (f"--log-level={level}",),
        f"TAS flag {use.spelling} is deprecated: use --log-level {level} "
        f"(klog verbosity {DEBUG_VERBOSITY} and above is debug, below it info)",
    )


def _bool(use: _Use) -> bool:
    if use.value is None or use.value in _TRUE:
        return True
    if use.value in _FALSE:
        return False
    raise TasFlagError(f"{use.spelling}: invalid boolean value {use.value!r}")


_STDERR = "logs always go to standard error (collect them from the container runtime)"

#: Every flag of TAS's `cmd/main.go` and of klog v2's InitFlags: name -> (boolean?, rule).
_FLAGS: dict[str, tuple[bool, _Rule]] = {
    "kubeConfig": (False, _renamed("--kubeconfig")),
    "port": (False, _port),
    "cert": (False, _tls_file),
    "key": (False, _tls_file),
    "cacert": (False, _tls_file),
    "unsafe": (True, _unsafe),
    "syncPeriod": (False, _renamed("--sync-period", _duration)),
    "v": (False, _verbosity),
    "vmodule": (False, _ignored("per-file verbosity does not exist here; use --log-level")),
    "log_backtrace_at": (False, _ignored("stack traces on a log line do not exist here")),
    "log_dir": (False, _ignored(_STDERR)),
    "log_file": (False, _ignored(_STDERR)),
    "log_file_max_size": (False, _ignored(_STDERR)),
    "stderrthreshold": (False, _ignored(_STDERR)),
    "logtostderr": (True, _ignored(_STDERR)),
    "alsologtostderr": (True, _ignored(_STDERR)),
    "one_output": (True, _ignored(_STDERR)),
    "skip_log_headers": (True, _ignored(_STDERR)),
    "add_dir_header": (True, _ignored("the log line format is fixed")),
    "skip_headers": (True, _ignored("the log line format is fixed")),
}

#: Every TAS flag name translated here (docs/upgrade-from-tas.md lists each).
TAS_FLAG_NAMES: frozenset[str] = frozenset(_FLAGS)

#: TAS flags that are this project's too, with the same meaning, when spelled with two dashes.
_OURS_TOO = frozenset({"--cert", "--key", "--cacert"})

#: The new flag each TAS flag becomes: giving both is ambiguous, so it is an error.
_REPLACED_BY: dict[str, str] = {
    "kubeConfig": "--kubeconfig",
    "port": "--listen",
    "syncPeriod": "--sync-period",
    "v": "--log-level",
}


def translate_tas_flags(
    argv: Sequence[str], *, component: Component
) -> tuple[list[str], list[str]]:
    """`argv` (the arguments after `tas <component>`) with TAS's flags rewritten.

    Returns the new argument list and the notices, one per TAS flag used (in the order used;
    a flag given twice is noted once). A command line without TAS flags comes back unchanged
    with no notices.
    """
    uses, positions = _scan(argv)
    _check_clashes(argv, uses)
    unsafe = any(use.name == "unsafe" and _bool(use) for use in uses)
    out: list[str] = []
    notices: list[str] = []
    by_position = dict(zip(positions, uses, strict=True))
    index = 0
    while index < len(argv):
        use = by_position.get(index)
        if use is None:
            out.append(argv[index])
            if argv[index] == "--":
                out.extend(argv[index + 1 :])
                break
            index += 1
            continue
        _, rule = _FLAGS[use.name]
        outcome = rule(use, component, unsafe)
        out.extend(outcome.args)
        if outcome.notice is not None and outcome.notice not in notices:
            notices.append(outcome.notice)
        index += len(use.tokens)
    if not notices:
        return out, notices  # not a TAS command line: no TAS defaults
    # TAS's defaults go before a `--`, where they are still flags.
    end = out.index("--") if "--" in out else len(out)
    added: list[str] = []
    if not _has_flag(argv, "--metrics"):
        added.append(f"--metrics={TAS_METRIC_SOURCE}")
        notices.append(
            f"TAS read node metrics from the custom metrics API: --metrics {TAS_METRIC_SOURCE} "
            "added (give --metrics prometheus:URL to read Prometheus directly)"
        )
    if _keeps_tas_client_authentication(argv, uses, component=component, unsafe=unsafe):
        added.append(f"--cacert={TAS_DEFAULT_CACERT}")
        notices.append(
            f"TAS required client certificates signed by its --cacert default "
            f"{TAS_DEFAULT_CACERT}: --cacert {TAS_DEFAULT_CACERT} added (give --cacert FILE, "
            "the CA of kube-scheduler's client certificate)"
        )
    out[end:end] = added
    return out, notices


def _keeps_tas_client_authentication(
    argv: Sequence[str], uses: list[_Use], *, component: Component, unsafe: bool
) -> bool:
    """Whether TAS's `--cacert` default must be added: an extender serving TLS without one."""
    if component != "extender" or unsafe or _has_flag(argv, "--insecure-http"):
        return False
    names = {use.name for use in uses}  # `--cert` and `-cert` alike
    return bool(names & {"cert", "key"}) and "cacert" not in names


def _scan(argv: Sequence[str]) -> tuple[list[_Use], list[int]]:
    """The TAS flags in `argv` and the index each starts at, by Go's `flag` rules."""
    uses: list[_Use] = []
    positions: list[int] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            break
        parsed = _tas_flag(token)
        if parsed is None:
            index += 1
            continue
        name, value = parsed
        boolean, _ = _FLAGS[name]
        consumed = 1
        if value is None and not boolean:
            if index + 1 >= len(argv):
                if token in _OURS_TOO:
                    break  # this project's flag: its own parser reports the missing value
                raise TasFlagError(f"flag needs an argument: {token}")
            value = argv[index + 1]  # Go takes the next argument, whatever it looks like
            consumed = 2
        uses.append(_Use(name, value, tuple(argv[index : index + consumed])))
        positions.append(index)
        index += consumed
    return uses, positions


def _tas_flag(token: str) -> tuple[str, str | None] | None:
    """(name, value or None) when `token` is `-name[=value]` or `--name[=value]` of TAS."""
    if not token.startswith("-") or token in ("-", "--"):
        return None
    body = token[2:] if token.startswith("--") else token[1:]
    name, equals, value = body.partition("=")
    if name not in _FLAGS:
        return None
    return name, (value if equals else None)


def _has_flag(argv: Sequence[str], flag: str) -> bool:
    for token in argv:
        if token == "--":
            return False
        if token == flag or token.startswith(f"{flag}="):
            return True
    return False


def _check_clashes(argv: Sequence[str], uses: list[_Use]) -> None:
    for use in uses:
        new_flag = _REPLACED_BY.get(use.name)
        if new_flag is not None and _has_flag(argv, new_flag):
            raise TasFlagError(
                f"{use.spelling} (TAS's spelling) and {new_flag} are both given: keep {new_flag}"
            )
