"""Leader election on a Lease: two electors against the API emulator, on a manual clock.

Covered:
- the first candidate creates the Lease and leads; the second stays a follower;
- never both leaders, over many steps, with one elector renewing;
- a leader that stops renewing loses `is_leader` at the renew deadline, before the other
  candidate may take over at the lease duration, and the takeover counts a transition;
- a racing write (409) leaves the loser a follower;
- release on stop clears the holder so the successor takes over at once;
- API failures leave the elector a follower (no exception), and a leader keeps leading
  through a failed renewal until the renew deadline;
- bad timing settings are refused;
- the `run` loop leads in a thread and releases on stop.
"""

from __future__ import annotations

import threading
import time

import pytest

from tas.adapters.cluster.leader import LeaderElector
from tests.builders import ManualClock
from tests.k8s_emulator import KubeEmulator


def elector(
    api: KubeEmulator, identity: str, clock: ManualClock, events: list[str] | None = None
) -> LeaderElector:
    log = events if events is not None else []
    return LeaderElector(
        api.api_client(),
        name="tas-descheduler",
        namespace="kube-system",
        identity=identity,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        clock=clock,
        on_started_leading=lambda: log.append(f"{identity} leads"),
        on_stopped_leading=lambda: log.append(f"{identity} stops"),
    )


def lease(api: KubeEmulator) -> dict[str, object]:
    stored = api.get("leases", "tas-descheduler", namespace="kube-system")
    assert stored is not None
    spec: dict[str, object] = stored["spec"]
    return spec


def test_the_first_candidate_creates_the_lease_and_the_second_follows(
    kube_emulator: KubeEmulator,
) -> None:
    clock, events = ManualClock(), []
    a, b = elector(kube_emulator, "a", clock, events), elector(kube_emulator, "b", clock, events)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert (a.is_leader, b.is_leader) == (True, False)
    assert lease(kube_emulator)["holderIdentity"] == "a"
    assert events == ["a leads"]


def test_two_electors_are_never_both_leaders(kube_emulator: KubeEmulator) -> None:
    clock = ManualClock()
    a, b = elector(kube_emulator, "a", clock), elector(kube_emulator, "b", clock)
    for _ in range(20):
        a.try_acquire_or_renew()
        b.try_acquire_or_renew()
        assert not (a.is_leader and b.is_leader)
        clock.advance(2)
    assert a.is_leader
    assert lease(kube_emulator)["leaseTransitions"] == 0


def test_a_silent_leader_steps_down_before_the_other_takes_over(
    kube_emulator: KubeEmulator,
) -> None:
    clock, events = ManualClock(), []
    a, b = elector(kube_emulator, "a", clock, events), elector(kube_emulator, "b", clock, events)
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    clock.advance(10)  # a is stalled: no renewal for the renew deadline
    assert not a.is_leader
    assert not b.try_acquire_or_renew()  # the lease itself is not expired yet
    clock.advance(5)
    assert b.try_acquire_or_renew()
    assert b.is_leader
    assert not a.try_acquire_or_renew()
    assert lease(kube_emulator)["holderIdentity"] == "b"
    assert lease(kube_emulator)["leaseTransitions"] == 1
    assert events == ["a leads", "b leads", "a stops"]


def test_a_racing_write_leaves_the_loser_a_follower(kube_emulator: KubeEmulator) -> None:
    clock = ManualClock()
    a, b = elector(kube_emulator, "a", clock), elector(kube_emulator, "b", clock)
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    clock.advance(16)
    kube_emulator.fail_next(r"/leases/tas-descheduler$", method="PUT", status=409)
    assert not b.try_acquire_or_renew()
    assert not b.is_leader


def test_release_on_stop_lets_the_successor_take_over_at_once(
    kube_emulator: KubeEmulator,
) -> None:
    clock = ManualClock()
    a, b = elector(kube_emulator, "a", clock), elector(kube_emulator, "b", clock)
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    a.release()
    assert not a.is_leader
    assert lease(kube_emulator)["holderIdentity"] == ""
    assert b.try_acquire_or_renew()


def test_a_failed_renewal_keeps_leading_until_the_renew_deadline(
    kube_emulator: KubeEmulator,
) -> None:
    clock = ManualClock()
    a = elector(kube_emulator, "a", clock)
    assert a.try_acquire_or_renew()
    kube_emulator.fail_next(r"/leases/", status=503, times=10)
    clock.advance(2)
    assert not a.try_acquire_or_renew()
    assert a.is_leader
    clock.advance(8)
    assert not a.try_acquire_or_renew()
    assert not a.is_leader


def test_bad_timings_are_refused(kube_emulator: KubeEmulator) -> None:
    with pytest.raises(ValueError, match="lease_duration > renew_deadline"):
        LeaderElector(
            kube_emulator.api_client(),
            name="x",
            namespace="y",
            identity="z",
            lease_duration=5,
            renew_deadline=10,
        )


def test_the_run_loop_leads_in_a_thread_and_releases_on_stop(
    kube_emulator: KubeEmulator,
) -> None:
    leading = threading.Event()
    elector = LeaderElector(
        kube_emulator.api_client(),
        name="tas-descheduler",
        namespace="kube-system",
        identity="solo",
        lease_duration=3,
        renew_deadline=2,
        retry_period=0.1,
        on_started_leading=leading.set,
    )
    stop = threading.Event()
    thread = threading.Thread(target=elector.run, args=(stop,), daemon=True)
    thread.start()
    assert leading.wait(5)
    time.sleep(0.3)  # a few renewals
    assert elector.is_leader
    stop.set()
    thread.join(5)
    assert not elector.is_leader
    assert lease(kube_emulator)["holderIdentity"] == ""
