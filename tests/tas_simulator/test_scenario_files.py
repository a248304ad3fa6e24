"""Scenario files are validated at the boundary: every problem listed with its path.

Covered:
- every named scenario in scenarios/ loads, and names the spec's seven;
- a scenario that gives no start-up draws each start's over 10 s to 2 min, as every named
  scenario does but herd (about where a burst lands before the next scrapes), and one that
  names no pressure model meets the bursty world, as every named scenario does (issue 54);
- a file with several mistakes lists each one with its path (schema and meaning alike);
- `tas simulate` on a bad file prints every problem and exits 1;
- arbitrary YAML (hypothesis) never crashes the loader: it loads or raises ScenarioError.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas_cli.main import main
from tas_simulator.scenario import (
    PressureModelKind,
    ScenarioError,
    load_scenario,
    load_scenario_text,
    named_scenarios,
)
from tas_simulator.world import startup_of

SPEC_SCENARIOS = {
    "health-demo",
    "psi-skewed",
    "psi-taint-release",
    "herd",
    "metric-outage",
    "bogus-metric",
    "scale-500",
}

BAD = """
name: Bad_Name
duration: 10m
step: 0s
bogus: true
nodes:
  - name: node-{i}
    cpu: 0
    memory: 8Gi
workloads:
  - name: app
    replicas: 2
    requests: {cpu: 100m}
    usage:
      cpu: {profile: bursty, mean: 1, peak: 0.5, period: 1m}
  - name: app
    replicas: -1
    requests: {cpu: lots}
    usage:
      cpu: {profile: steady}
events:
  - at: 1m
    set-health: {nodes: [ghost], value: 2}
  - at: 2m
    scale: {workload: nobody, replicas: 3}
"""


def test_every_named_scenario_loads_and_the_spec_ones_are_there() -> None:
    names = set(named_scenarios())
    assert names >= SPEC_SCENARIOS
    for name in sorted(names):
        scenario = load_scenario(name)
        assert scenario.name == name
        assert scenario.nodes
        assert scenario.duration > 0


MINIMAL = """
name: minimal
duration: 20m
nodes:
  - {name: a, cpu: 4, memory: 8Gi}
workloads:
  - name: app
    replicas: 2
    requests: {cpu: 100m}
    usage:
      cpu: {profile: steady, value: 1}
"""


def test_a_scenario_that_gives_no_start_up_draws_each_start_over_10_s_to_2_min() -> None:
    scenario = load_scenario_text(MINIMAL)
    assert (scenario.startup_delay, scenario.startup_delay_most) == (10.0, 120.0)
    drawn = [startup_of(scenario, 1, slot, start) for slot in range(40) for start in (1, 2)]
    assert all(10.0 <= d <= 120.0 for d in drawn)
    assert min(drawn) < 30.0
    assert max(drawn) > 90.0
    fixed = load_scenario_text(MINIMAL + "startupDelay: 15s\n")
    assert {startup_of(fixed, 1, slot, 1) for slot in range(10)} == {15.0}


def test_named_scenarios_draw_start_ups_and_meet_the_bursty_world() -> None:
    """Moves cost what they do in a cluster, and the world's PSI is not ours' predictor,
    in every named scenario; herd alone keeps one start-up (its comment says why)."""
    for name in sorted(named_scenarios()):
        scenario = load_scenario(name)
        assert scenario.pressure_model.kind is PressureModelKind.BURSTY, name
        if name == "herd":
            assert scenario.startup_delay_most is None
            continue
        assert scenario.startup_delay == 10.0, name
        assert scenario.startup_delay_most == 120.0, name


def test_a_bad_file_lists_every_schema_problem_with_its_path() -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario_text(BAD, source="bad.yaml")
    problems = "\n".join(caught.value.problems)
    for expected in (
        "bad.yaml: name:",
        "(document): Additional properties are not allowed ('bogus' was unexpected)",
        "workloads[1].replicas: -1 is less than the minimum of 0",
        "workloads[1].requests.cpu:",
        "workloads[1].usage.cpu: 'value' is a required property",
    ):
        assert expected in problems, problems
    assert len(caught.value.problems) >= 5


def test_a_file_of_the_right_shape_lists_every_problem_of_meaning() -> None:
    text = BAD.replace("name: Bad_Name", "name: bad").replace("bogus: true\n", "")
    text = text.replace("replicas: -1", "replicas: 1").replace("cpu: lots", "cpu: 1")
    text = text.replace("cpu: {profile: steady}", "cpu: {profile: steady, value: 1}")
    with pytest.raises(ScenarioError) as caught:
        load_scenario_text(text)
    problems = caught.value.problems
    expected = [
        "step: must be more than 0",
        "nodes[0].cpu: must be more than 0",
        "nodes[0].name: a name pattern with {i} needs a count",
        "workloads[0].usage.cpu.peak: must be at least the mean (1)",
        "workloads: workload name 'app' is used twice",
        "events[0].set-health.nodes: unknown node 'ghost'",
        "events[1].scale.workload: unknown workload 'nobody'",
    ]
    for item in expected:
        assert item in problems, problems


def test_tas_simulate_on_a_bad_file_prints_every_problem_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD, encoding="utf-8")
    code = main(["simulate", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    assert "workloads[1].replicas" in err
    assert "(document): Additional properties" in err


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=300))
def test_arbitrary_text_never_crashes_the_loader(text: str) -> None:
    try:
        load_scenario_text(text)
    except ScenarioError as error:
        problems = error.problems
    else:
        problems = ("loaded",)
    assert problems


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=yaml_values, base=st.sampled_from(sorted(SPEC_SCENARIOS - {"scale-500"})))
def test_arbitrary_yaml_data_in_any_field_never_crashes_the_loader(data: object, base: str) -> None:
    document = yaml.safe_load((Path("scenarios") / f"{base}.yaml").read_text(encoding="utf-8"))
    for key in ("metrics", "events", "workloads", "duration", "nodes", "contenders"):
        mutated = dict(document)
        mutated[key] = data
        try:
            load_scenario_text(yaml.safe_dump(mutated), base=Path("scenarios"))
        except ScenarioError as error:
            problems = error.problems
        else:
            problems = ("loaded",)
        assert problems
