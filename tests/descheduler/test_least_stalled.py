"""LoadAware's destination: the fitting node that stalls least with the pod, found without a
stall evaluation per node (`StallModel.least_stalled`).

Covered (hypothesis, against the plain `min` over every destination it replaces):
- the same node, on fleets of mixed sizes, loads from idle to saturated (where many nodes
  stall alike and the first name must win), and any subset of destinations;
- still the same after moves change destinations' peak loads (`moved` keeps the order).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from descheduler.plugins.load_aware.args import LoadAwareArgs
from descheduler.plugins.load_aware.stall import StallModel
from tas.pressure import NodeLoad, Prediction
from tas.types import NodeName

LOADS = st.one_of(
    st.floats(min_value=0.0, max_value=20.0, allow_nan=False),
    st.sampled_from([0.0, 4.0, 8.0, 16.0]),  # idle, and exactly full: ties
)
NODES = st.lists(st.tuples(st.sampled_from([2.0, 4.0, 8.0, 16.0]), LOADS), min_size=1, max_size=40)


def model(nodes: list[tuple[float, float]]) -> StallModel:
    loads = {NodeName(f"n{i:02d}"): NodeLoad(cores, load) for i, (cores, load) in enumerate(nodes)}
    return StallModel(LoadAwareArgs(), dict(loads), dict(loads))


def plain_min(m: StallModel, destinations: list[NodeName], usage: float) -> NodeName:
    return min(destinations, key=lambda d: (m.peak_loads[d].plus(usage).pressure, d))


@settings(max_examples=300, deadline=None)
@given(NODES, st.floats(min_value=0.01, max_value=6.0), st.data())
def test_it_picks_what_the_plain_min_picks(
    nodes: list[tuple[float, float]], usage: float, data: st.DataObject
) -> None:
    m = model(nodes)
    names = sorted(m.peak_loads)
    destinations = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    assert m.least_stalled(destinations, usage) == plain_min(m, destinations, usage)


@settings(max_examples=200, deadline=None)
@given(NODES, st.lists(st.floats(min_value=0.01, max_value=3.0), min_size=1, max_size=6))
def test_it_stays_the_plain_min_as_moves_change_the_loads(
    nodes: list[tuple[float, float]], usages: list[float]
) -> None:
    m = model(nodes)
    names = sorted(m.peak_loads)
    for usage in usages:
        chosen = m.least_stalled(names, usage)
        assert chosen == plain_min(m, names, usage)
        source = names[0]
        prediction = Prediction(
            usage, m.loads[source], m.peak_loads[chosen], relief=0.0, burden=0.0, cost=0.0
        )
        m.apply(source, chosen, prediction)
