"""Which metrics a view fetches: the ones the policies name, plus any a component adds.

A metric view fetches only what it is told to (one query per metric, not every series in
Prometheus), so it must hear about every policy change. This is the one way it hears: a store
subscription, set at once for the policies already loaded.
"""

from __future__ import annotations

from collections.abc import Iterable

from tas.metrics.view import MetricView
from tas.policies.store import PolicySnapshot, PolicyStore
from tas.types import MetricName


def want_policy_metrics(
    store: PolicyStore, view: MetricView, *, extra: Iterable[MetricName] = ()
) -> None:
    """Keep `view` fetching every metric the store's policies name, and `extra`."""
    also = frozenset(extra)

    def update(snapshot: PolicySnapshot) -> None:
        view.set_wanted(snapshot.metric_names | also)

    store.subscribe(update)
    update(store.snapshot())
