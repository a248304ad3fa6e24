"""The policy store: the current valid policies as one immutable snapshot.

Loaders (files, the cluster watch) replace the whole set at once, so an update fully replaces a
policy (TAS kept removed strategies registered) and a reader always sees one consistent set.
Readers take `snapshot()`, a plain reference read, so the extender's hot path takes no lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from tas.policies.model import PolicyProblem, TASPolicy
from tas.types import MetricName, PolicyKey

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PolicySnapshot:
    """Valid policies by key, the problems of the invalid ones, the warnings (parts of policies
    that are applied but do nothing), and a generation counter."""

    policies: Mapping[PolicyKey, TASPolicy] = field(default_factory=dict)
    problems: tuple[PolicyProblem, ...] = ()
    warnings: tuple[PolicyProblem, ...] = ()
    generation: int = 0
    #: Every metric name some rule of some policy reads.
    metric_names: frozenset[MetricName] = frozenset()

    def get(self, key: PolicyKey) -> TASPolicy | None:
        return self.policies.get(key)


Listener = Callable[[PolicySnapshot], None]


class PolicyStore:
    def __init__(self) -> None:
        self._snapshot = PolicySnapshot()
        self._loaded = False
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []

    @property
    def loaded(self) -> bool:
        """True once a loader has delivered a first complete set (possibly empty)."""
        return self._loaded

    def snapshot(self) -> PolicySnapshot:
        return self._snapshot

    def subscribe(self, listener: Listener) -> None:
        """Call `listener` with every new snapshot (from the loader's thread)."""
        self._listeners.append(listener)

    def replace(
        self,
        policies: Iterable[TASPolicy],
        problems: Iterable[PolicyProblem] = (),
        warnings: Iterable[PolicyProblem] = (),
    ) -> PolicySnapshot:
        """Make `policies` the complete current set. Duplicate keys: the first one wins."""
        by_key: dict[PolicyKey, TASPolicy] = {}
        all_problems = list(problems)
        for policy in policies:
            if policy.key in by_key:
                all_problems.append(
                    PolicyProblem("", str(policy.key), "defined more than once; first one kept")
                )
                continue
            by_key[policy.key] = policy
        names = frozenset(
            rule.metricname
            for policy in by_key.values()
            for strategy in policy.strategies.values()
            for rule in strategy.rules
        )
        with self._lock:
            previous = self._snapshot
            snapshot = PolicySnapshot(
                policies=MappingProxyType(by_key),
                problems=tuple(all_problems),
                warnings=tuple(warnings),
                generation=previous.generation + 1,
                metric_names=names,
            )
            self._snapshot = snapshot
        _log_changes(previous, snapshot)
        for listener in self._listeners:
            listener(snapshot)
        # Loaded once the listeners know: a metric view is told the policies' metrics before
        # anything that waits for `loaded` (a readiness check) reads its readiness.
        self._loaded = True
        return snapshot


def _log_changes(previous: PolicySnapshot, current: PolicySnapshot) -> None:
    for key in current.policies.keys() - previous.policies.keys():
        log.info("Policy %s added", key)
    for key in previous.policies.keys() - current.policies.keys():
        log.info("Policy %s removed", key)
    for key in current.policies.keys() & previous.policies.keys():
        if current.policies[key] != previous.policies[key]:
            log.info("Policy %s updated", key)
    new_problems = set(current.problems) - set(previous.problems)
    for problem in current.problems:
        if problem in new_problems:
            log.error("Invalid policy skipped: %s", problem)
    new_warnings = set(current.warnings) - set(previous.warnings)
    for warning in current.warnings:
        if warning in new_warnings:
            log.warning("Policy applied, but: %s", warning)


def run_every(
    step: Callable[[], object], stop: threading.Event, interval: float, *, failed: str
) -> None:
    """Call `step` every `interval` seconds until `stop` is set; meant for a daemon thread.

    A follower of policies must outlive a bad file or a bad moment of the cluster: a failing
    step is logged (`failed` says what failed) and the next one runs on time.
    """
    while not stop.is_set():
        try:
            step()
        except Exception:
            log.exception("%s", failed)
        stop.wait(interval)
