"""What an owning controller does when one of its pods is evicted: it makes a new one.

A ReplicaSet (and anything else that owns pods by template) creates a pending pod with a fresh
name; a StatefulSet recreates the same name; a DaemonSet's pod comes back bound to its node,
since its node is the point. A pod without a controller stays gone. This is the part of the
workload controllers the closed loop needs: an evicted pod returns and is placed again. The new
pod comes from the owner's template, so it carries none of the labels the policy controller
put on the old one (`violate=<policy>`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime

from tas.cluster.model import Pod
from tas.vocabulary import POD_VIOLATION_LABEL


def replacement_for(
    pod: Pod,
    *,
    new_suffix: Callable[[], str],
    name_taken: Callable[[str], bool],
    new_uid: Callable[[], str],
    now: datetime,
) -> Pod | None:
    """The pod the evicted `pod`'s controller creates in its place (None without one)."""
    owner = pod.controller
    if owner is None:
        return None
    if owner.kind == "StatefulSet":
        name = pod.name
    else:
        name = f"{owner.name}-{new_suffix()}"
        while name_taken(name):
            name = f"{owner.name}-{new_suffix()}"
    daemon = owner.kind == "DaemonSet"
    labels = {k: v for k, v in pod.labels.items() if k != POD_VIOLATION_LABEL}
    return dataclasses.replace(
        pod,
        labels=labels,
        name=name,
        uid=new_uid(),
        node_name=pod.node_name if daemon else None,
        phase="Running" if daemon else "Pending",
        container_restarts=0,
        init_container_restarts=0,
        creation_timestamp=now,
        start_time=None,
        deletion_timestamp=None,
        resource_version="",
    )
