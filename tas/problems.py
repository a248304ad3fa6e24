"""The error of an input that cannot be used, with every reason at once.

A file a person wrote (a DeschedulerPolicy, a KubeDescheduler, a scenario, a family) is read to
the end and refused with every problem listed, each with its path, so one run shows all there is
to fix (descheduler `validation.go` reports the same way). Each reader raises its own subclass,
so callers still tell a bad policy from a bad scenario.
"""

from __future__ import annotations

from collections.abc import Sequence


class ProblemsError(Exception):
    """Input that cannot be used; `problems` lists every reason, each with its path."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))
