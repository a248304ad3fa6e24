"""The kube-scheduler model scores as kube-scheduler does (tas_inmemory.scheduler).

Covered:
- balanced allocation prefers the node where CPU and memory fractions stay close;
- a PreferNoSchedule taint lowers a node's score without filtering it;
- percentageOfNodesToScore: on big clusters only the adaptive share of nodes is scored, and
  the search starts where the last one stopped;
- ties are broken at random (uniformly, reproducibly from the generator's seed).
"""

from __future__ import annotations

import functools
import random
from collections import Counter

from tas.cluster.model import Taint, TaintEffect
from tas_inmemory.scheduler import InMemoryScheduler, num_feasible_nodes_to_find
from tests import builders
from tests.builders import cluster_of

GiB = 2.0**30


make_node = builders.make_node
#: Pods asking for a core and a GiB.
make_pod = functools.partial(builders.make_pod, cpu=1.0, memory=GiB)


def test_balanced_allocation_prefers_the_node_whose_fractions_stay_close() -> None:
    # Both nodes have the same free CPU and memory in total; on "skewed" the pod would make
    # CPU 75% used and memory 6% used, on "even" both near 40%.
    skewed = make_pod("cpu-heavy", cpu=5.0, memory=GiB, node="skewed")
    even = make_pod("even", cpu=2.0, memory=12 * GiB, node="even")
    pod = make_pod("p", cpu=1.0, memory=GiB)
    cluster = cluster_of(make_node("skewed"), make_node("even"), pods=[skewed, even, pod])
    assert InMemoryScheduler(cluster, extender=None).schedule(pod).node == "even"


def test_a_prefer_no_schedule_taint_lowers_the_score_but_does_not_filter() -> None:
    soft = make_node("soft", taints=(Taint("hot", TaintEffect.PREFER_NO_SCHEDULE, "true"),))
    pod = make_pod("p")
    cluster = cluster_of(soft, make_node("plain"), pods=[pod])
    assert InMemoryScheduler(cluster, extender=None).schedule(pod).node == "plain"
    only_soft = cluster_of(soft, pods=[pod])
    assert InMemoryScheduler(only_soft, extender=None).schedule(pod).node == "soft"


def test_only_the_adaptive_share_of_a_big_cluster_is_searched() -> None:
    assert num_feasible_nodes_to_find(50) == 50
    assert num_feasible_nodes_to_find(500) == 230  # 50% - 500/125 = 46%
    assert num_feasible_nodes_to_find(5000) == 500  # 10%
    assert num_feasible_nodes_to_find(150) == 100  # never fewer than 100
    assert num_feasible_nodes_to_find(500, 100) == 500


def test_ties_are_broken_at_random_and_reproducibly() -> None:
    nodes = [make_node(f"n{i}") for i in range(4)]

    def first_choices(seed: int) -> list[str | None]:
        chosen: list[str | None] = []
        for trial in range(40):
            pod = make_pod(f"p{trial}")
            cluster = cluster_of(*nodes, pods=[pod])
            scheduler = InMemoryScheduler(cluster, extender=None, rng=random.Random(seed + trial))
            chosen.append(scheduler.schedule(pod).node)
        return chosen

    picks = first_choices(1)
    assert picks == first_choices(1)
    assert len(Counter(picks)) == 4  # every tied node gets picked sometimes
