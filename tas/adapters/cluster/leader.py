"""Leader election on a coordination.k8s.io/v1 Lease, so two replicas never both write.

The protocol is client-go's `leaderelection`: a candidate takes the Lease when it does not
exist, or when its holder has not renewed it for `lease_duration` as measured on *our* clock
from when we last saw the record change (so clock skew between replicas does not matter);
every write is a PUT carrying the resourceVersion we read, so of two candidates racing, one
gets 409 and stays a follower. The leader renews every `retry_period`; when it has not
renewed for `renew_deadline` (shorter than `lease_duration`) it stops leading *before* anyone
else may take over. On `stop` the leader releases the Lease so a successor need not wait.

Every request is bounded in time: a step's by `retry_period` (a renewal that takes longer is
a failed one; the renew deadline decides what that means); the release, as a whole, by its
own short budget, because it runs while the process is shutting down and Kubernetes kills a
pod that has not exited 30 s after SIGTERM.

`is_leader` is what writers check; `try_acquire_or_renew()` is one step of the loop, which
tests drive with an injected clock.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tas.clock import SYSTEM_CLOCK, Clock
from tas.cluster.interface import ClusterError

log = logging.getLogger(__name__)

_MICRO_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"
#: How long `release()` may take by default: a small part of a pod's 30 s grace period.
RELEASE_TIMEOUT = 1.0


def _body(response: Any) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(response.data)
    return loaded


def _format(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(_MICRO_TIME)


class LeaderElector:
    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Clock = SYSTEM_CLOCK,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        self._api = client.CoordinationV1Api(api_client)
        # Seconds for each request of a step (to connect, and then for each read).
        self._request_timeout = retry_period
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self._lease_duration = lease_duration
        self._renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._clock = clock
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._lock = threading.Lock()
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at: datetime | None = None
        self._renewed_at: datetime | None = None
        self._leading = False

    @property
    def is_leader(self) -> bool:
        """True while we hold the Lease and renewed it within `renew_deadline`."""
        with self._lock:
            return self._leading and self._fresh(self._clock.now())

    def _fresh(self, now: datetime) -> bool:
        return self._renewed_at is not None and now - self._renewed_at < timedelta(
            seconds=self._renew_deadline
        )

    # ------------------------------------------------------------ one step

    def try_acquire_or_renew(self) -> bool:
        """Take or renew the Lease once; True when we hold it afterwards. Never raises."""
        now = self._clock.now()
        try:
            acquired = self._step(now)
        except (ApiException, ClusterError, OSError, urllib3.exceptions.HTTPError) as error:
            log.warning("Lease %s/%s: %s", self.namespace, self.name, error)
            acquired = False
        self._transition(acquired, now)
        return acquired

    def _step(self, now: datetime) -> bool:
        try:
            lease = self._read()
        except ApiException as error:
            if error.status != 404:
                raise
            return self._create(now)
        spec: dict[str, Any] = lease.setdefault("spec", {})
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self._lease_duration)
        held_by_other = holder not in ("", self.identity)
        observed_at = self._observed_at or now
        if held_by_other and now - observed_at < timedelta(seconds=duration):
            return False
        if holder != self.identity:
            spec["acquireTime"] = _format(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=int(self._lease_duration),
            renewTime=_format(now),
        )
        try:
            updated = self._replace(lease)
        except ApiException as error:
            if error.status == 409:
                return False  # another candidate wrote first
            raise
        self._observe(updated, now)
        return True

    def _create(self, now: datetime) -> bool:
        body: Any = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self._lease_duration),
                "acquireTime": _format(now),
                "renewTime": _format(now),
                "leaseTransitions": 0,
            },
        }
        try:
            response = self._api.create_namespaced_lease(
                self.namespace,
                body,
                _preload_content=False,
                _request_timeout=self._request_timeout,
            )
        except ApiException as error:
            if error.status == 409:
                return False
            raise
        self._observe(_body(response), now)
        return True

    def _observe(self, lease: dict[str, Any], now: datetime) -> None:
        spec = lease.get("spec") or {}
        self._observed = (str(spec.get("holderIdentity") or ""), str(spec.get("renewTime") or ""))
        self._observed_at = now
        with self._lock:
            self._renewed_at = now

    def _transition(self, acquired: bool, now: datetime) -> None:
        with self._lock:
            was = self._leading
            # A failed renewal keeps leadership until the renew deadline runs out.
            self._leading = acquired or (was and self._fresh(now))
            leading = self._leading
        if leading and not was:
            log.info("Lease %s/%s: %s is now the leader", self.namespace, self.name, self.identity)
            if self._on_started:
                self._on_started()
        elif was and not leading:
            log.warning("Lease %s/%s: %s lost leadership", self.namespace, self.name, self.identity)
            if self._on_stopped:
                self._on_stopped()

    def _read(self, timeout: float | None = None) -> dict[str, Any]:
        response = self._api.read_namespaced_lease(
            self.name,
            self.namespace,
            _preload_content=False,
            _request_timeout=self._request_timeout if timeout is None else timeout,
        )
        return _body(response)

    def _replace(self, lease: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        body: Any = lease
        response = self._api.replace_namespaced_lease(
            self.name,
            self.namespace,
            body,
            _preload_content=False,
            _request_timeout=self._request_timeout if timeout is None else timeout,
        )
        return _body(response)

    # ------------------------------------------------------------ the loop

    def run(self, stop: threading.Event) -> None:
        """Try every `retry_period` until `stop`; then release the Lease if we hold it."""
        while not stop.is_set():
            self.try_acquire_or_renew()
            stop.wait(self.retry_period)
        self.release()

    def release(self, timeout: float = RELEASE_TIMEOUT) -> None:
        """Give the Lease up now (holder cleared) so a successor need not wait it out.

        Writers see `is_leader` false before the request goes out. Returns within `timeout`
        seconds: a release that has not succeeded by then leaves the Lease to expire after
        `lease_duration`, as if the process had been killed.
        """
        with self._lock:
            was = self._leading
            self._leading = False
        if not was:
            return
        # The requests run in a thread of their own because no request timeout bounds the
        # whole: urllib3 retries a request whose read timed out, each try with a fresh timeout.
        worker = threading.Thread(
            target=self._clear_holder, args=(timeout,), name="lease-release", daemon=True
        )
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            log.warning(
                "Lease %s/%s: no answer to the release within %gs; it will expire instead",
                self.namespace,
                self.name,
                timeout,
            )
        if self._on_stopped:
            self._on_stopped()

    def _clear_holder(self, timeout: float) -> None:
        try:
            lease = self._read(timeout)
            spec = lease.setdefault("spec", {})
            if spec.get("holderIdentity") == self.identity:
                spec.update(holderIdentity="", leaseDurationSeconds=1)
                self._replace(lease, timeout)
                log.info("Lease %s/%s: released by %s", self.namespace, self.name, self.identity)
        except (ApiException, OSError, urllib3.exceptions.HTTPError) as error:
            log.warning("Lease %s/%s: release failed: %s", self.namespace, self.name, error)
