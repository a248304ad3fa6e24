"""One process's life, as every command runs it: the stop, the addresses it serves, its lead.

- **the end** (`Lifetime`): SIGTERM/SIGINT set one stop event; background threads and
  cleanups are stopped within one shutdown budget, so a pod exits long before Kubernetes'
  30 s SIGKILL and a leader's Lease is released on the way out;
- **the addresses** (`Listener`, `check_listeners`, `bind`): every address that cannot be
  served named at once, each with how to pick another;
- **the lead** (`elect_leader`): the Lease election, for the rest of a `Lifetime`.

Startup problems are `SetupError`s: the command prints one line and exits 2, never a traceback
(`tas_cli.subcommand`).
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any, TypeVar

log = logging.getLogger("tas")

S = TypeVar("S")


class SetupError(Exception):
    """A startup problem the user can fix: printed as one line, exit code 2."""


@dataclass(frozen=True)
class Listener:
    """An address a command will serve on: what for, and how to pick another (`bind`'s)."""

    address: tuple[str, int]
    what: str
    if_taken: str = ""


def check_listeners(listeners: Sequence[Listener]) -> None:
    """Raise one `SetupError` naming every address of `listeners` that cannot be bound now (a
    port taken, a host not this machine's, one address given twice), so a user fixes them all
    at once instead of meeting them one run at a time. One problem reads as `bind`'s line.
    The servers still bind through `bind`: a port taken after this check is reported there."""
    problems: list[str] = []
    seen: dict[tuple[str, int], str] = {}
    for listener in listeners:
        host, port = listener.address
        purpose = f" for {listener.what}" if listener.what else ""
        if listener.address in seen:
            problems.append(f"{host}:{port}{purpose}: already given for {seen[listener.address]}")
            continue
        seen[listener.address] = listener.what
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            # As the servers bind: a port whose last connections linger in TIME_WAIT is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as error:
                problem = f"{host}:{port}{purpose}: {error.strerror or error}"
                if listener.if_taken and error.errno == errno.EADDRINUSE:
                    problem += f". {listener.if_taken}"
                problems.append(problem)
    if len(problems) == 1:
        raise SetupError(f"cannot listen on {problems[0]}")
    if problems:
        lines = "\n".join(f"  {problem}" for problem in problems)
        raise SetupError(f"cannot listen on {len(problems)} addresses:\n{lines}")


def bind(
    address: tuple[str, int],
    server: Callable[[str, int], S],
    *,
    what: str = "",
    if_taken: str = "",
) -> S:
    """`server(host, port)`, a server that binds its address as it is built. One that cannot
    (the port is taken, the host is not this machine's) is a `SetupError` naming the address
    (and `what` it was for, where a command serves more than one), followed by `if_taken`
    where the port is in use (how to pick another): one line and exit 2, never a traceback."""
    host, port = address
    try:
        return server(host, port)
    except OSError as error:
        purpose = f" for {what}" if what else ""
        message = f"cannot listen on {host}:{port}{purpose}: {error.strerror or error}"
        if if_taken and error.errno == errno.EADDRINUSE:
            message += f". {if_taken}"
        raise SetupError(message) from error


def elect_leader(
    api_client: Any, *, name: str, namespace: str, life: Lifetime
) -> Callable[[], bool]:
    """Take part in the election on the Lease `namespace/name` for the rest of `life`; what
    tells whether this process leads now. The identity is the pod's name (`POD_NAME`)."""
    from tas.adapters.cluster.leader import LeaderElector

    identity = os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
    elector = LeaderElector(api_client, name=name, namespace=namespace, identity=identity)
    # Started (so joined) first: the elector releases the Lease as it stops, so a standby
    # takes over at its next try instead of waiting the lease duration out.
    life.in_background(elector.run, life.stop, name="leader")
    return lambda: elector.is_leader


Cleanup = Callable[[float], object]


class Lifetime:
    """One process's life: a stop event, the signals that set it, and an orderly end.

    Background threads are joined first, in the order they were started (the leader
    elector's thread first: it releases the Lease as it ends), then cleanups run, last
    registered first, each given what is left of `shutdown_seconds`. Threads are daemons, so
    one still blocked on the network when the budget runs out is left to the process exit,
    no worse than the SIGKILL that would follow.
    """

    def __init__(self, name: str, *, shutdown_seconds: float) -> None:
        self.name = name
        self.stop = threading.Event()
        self._shutdown_seconds = shutdown_seconds
        self._threads: list[threading.Thread] = []
        self._cleanups: list[Cleanup] = []
        self._previous_handlers: dict[int, Any] = {}

    def catch_signals(self, *, also: Callable[[], None] | None = None) -> None:
        """SIGTERM and SIGINT set the stop event (and call `also`); restored on close."""
        if threading.current_thread() is not threading.main_thread():
            return  # embedded in a test or another program: the caller owns the signals

        def request_stop(signum: int, frame: FrameType | None) -> None:
            self.stop.set()
            if also is not None:
                also()

        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous_handlers[signum] = signal.signal(signum, request_stop)

    def in_background(
        self, target: Callable[..., object], *args: object, name: str
    ) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread

    def on_close(self, cleanup: Cleanup) -> None:
        """Run `cleanup(seconds_left)` at the end."""
        self._cleanups.append(cleanup)

    def close(self) -> None:
        self.stop.set()
        deadline = time.monotonic() + self._shutdown_seconds

        def remaining() -> float:
            return max(0.0, deadline - time.monotonic())

        for thread in self._threads:
            thread.join(remaining())
            if thread.is_alive():
                log.warning("%s: thread %s did not finish in time", self.name, thread.name)
        for cleanup in reversed(self._cleanups):
            try:
                cleanup(remaining())
            except Exception:  # one failing cleanup must not skip the others
                log.exception("%s: a cleanup failed during shutdown", self.name)
        for signum, handler in self._previous_handlers.items():
            signal.signal(signum, handler)
        log.info("%s stopped", self.name)

    def __enter__(self) -> Lifetime:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
