"""A dry run's log lines kept out of the logs: the descheduler's records made on a thread
that is explaining are dropped, since a dry cycle's "Evicted pod in dry run mode" lines would
read, in `tas run`'s terminal, as real ones."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator


class _DropThreadRecords(logging.Filter):
    """Drops the descheduler's log records made on the threads explaining: a dry cycle's
    "Evicted pod in dry run mode" lines would read, in `tas run`'s terminal, as real ones."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.thread in self.threads and record.name.startswith("descheduler"))


_DROP = _DropThreadRecords()


@contextlib.contextmanager
def quiet_descheduler_logs() -> Iterator[None]:
    for handler in logging.getLogger().handlers:
        if _DROP not in handler.filters:
            handler.addFilter(_DROP)
    _DROP.threads.add(threading.get_ident())
    try:
        yield
    finally:
        _DROP.threads.discard(threading.get_ident())
