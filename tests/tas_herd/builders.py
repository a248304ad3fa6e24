"""What herd control's tests build: the window, the clock's origin, and pods of one ReplicaSet
bound or started at a given second (shared by `test_placements` and `test_readings`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from tas.cluster.model import Pod, PodCondition
from tests import builders

WINDOW = 60.0
T0 = 1_700_000_000.0


#: Pods of the `web` ReplicaSet linked to policy p, on node-a, asking for a core and a GiB.
make_pod = functools.partial(
    builders.make_pod, node="node-a", cpu=1.0, memory=builders.GiB, owner="web", policy="p"
)


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(T0 + seconds, tz=UTC)


def bound_at(seconds: float) -> Callable[[Pod], Pod]:
    def apply(pod: Pod) -> Pod:
        return replace(pod, conditions=(PodCondition("PodScheduled", "True", "", at(seconds)),))

    return apply


def started_at(seconds: float) -> Callable[[Pod], Pod]:
    def apply(pod: Pod) -> Pod:
        return replace(pod, start_time=at(seconds))

    return apply
