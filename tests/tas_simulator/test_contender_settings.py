"""What a scenario (or a family) changes of a contender: `contenders.<name>.*`.

Covered:
- `contenders.ours.extender` sets `tas extender`'s flags for the run (camelCase names), and
  they reach the shipped extender service: in bogus-metric (every node reports unhealthy for
  five minutes), `maxViolatingNodeShare: 1` (TAS's never-fail-open) keeps the pods that arrive
  meanwhile pending, where the default (fail open) places them at once;
- `tas simulate` says under its table what a scenario changed, as the flags a user types;
- the clairvoyant reference runs with ours' settings (it is judged in ours' place);
- every problem is listed with its path: extender settings for a contender without this
  project's extender, unknown keys, values out of range;
- arbitrary values under `contenders.ours.extender` load or give problems, never a crash;
- the simulator's list of contenders that run ours' extender is the contenders' own;
- a family's `contenders` reach every drawn scenario unchanged (the draws stay the same), and a
  family refuses `deschedulerFile` (its drawn scenarios are saved elsewhere).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender.settings import ExtenderSettings
from tas.rules import ScoreMode
from tas_cli.main import main
from tas_simulator.contenders import CONTENDERS, ExtenderKind, resolve
from tas_simulator.family import FamilyError, draw_scenario, load_family, read_family
from tas_simulator.jobs import CLAIRVOYANT, Job, run_job
from tas_simulator.runner import run_contender
from tas_simulator.scenario import (
    OURS_EXTENDER_CONTENDERS,
    SCENARIOS,
    Scenario,
    ScenarioError,
    extender_flags,
    load_scenario_text,
)

BOGUS = SCENARIOS / "bogus-metric.yaml"


def bogus_metric_with(contenders: dict[str, Any]) -> Scenario:
    document = yaml.safe_load(BOGUS.read_text(encoding="utf-8"))
    document["contenders"] = contenders
    return load_scenario_text(yaml.safe_dump(document), base=SCENARIOS)


def test_ours_extender_settings_are_read_by_their_flag_names() -> None:
    scenario = bogus_metric_with(
        {
            "ours": {
                "extender": {
                    "maxViolatingNodeShare": 1,
                    "scoreMode": "rank",
                    "filterOnEstimates": ["psi-aware", "default/other"],
                }
            }
        }
    )
    assert scenario.contenders["ours"].extender == ExtenderSettings(
        max_violating_node_share=1.0,
        score_mode=ScoreMode.RANK,
        filter_estimate_policies=frozenset({"psi-aware", "default/other"}),
    )
    # Keys left out keep tas extender's defaults.
    only_share = bogus_metric_with({"ours": {"extender": {"maxViolatingNodeShare": 0.8}}})
    settings = only_share.contenders["ours"].extender
    assert settings is not None
    assert settings.score_mode is ExtenderSettings().score_mode
    assert settings.filter_estimate_policies == frozenset()


def test_never_failing_open_keeps_the_pods_pending_while_a_bogus_metric_lasts() -> None:
    default = bogus_metric_with({})
    honouring = bogus_metric_with({"ours": {"extender": {"maxViolatingNodeShare": 1}}})
    seed = default.seed
    fail_open = run_contender(default, _resolved("ours", default), seed=seed).figures
    never = run_contender(honouring, _resolved("ours", honouring), seed=seed).figures
    # Six pods arrive a minute into the five-minute bogus value: placed at once by default,
    # kept pending until the metric clears (about four minutes) when the breaker never opens.
    assert fail_open["pending_seconds"]["p95"] < 30
    assert never["pending_seconds"]["p95"] > 180
    assert never["work_lost"]["core_seconds"] > fail_open["work_lost"]["core_seconds"]


def test_the_flags_a_report_names_are_those_that_differ_from_tas_extender_s_defaults() -> None:
    assert extender_flags(ExtenderSettings()) == []
    assert extender_flags(
        ExtenderSettings(
            max_violating_node_share=1.0,
            score_mode=ScoreMode.RANK,
            filter_estimate_policies=frozenset({"b", "default/a"}),
        )
    ) == [
        "--max-violating-node-share 1",
        "--score-mode rank",
        "--filter-on-estimates b",
        "--filter-on-estimates default/a",
    ]


def test_tas_simulate_says_what_the_scenario_changed_under_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = yaml.safe_load(BOGUS.read_text(encoding="utf-8"))
    document["policies"] = [{"file": str(SCENARIOS / "policies" / "health-policy.yaml")}]
    document["contenders"] = {"ours": {"extender": {"maxViolatingNodeShare": 1}}}
    path = tmp_path / "never-fail-open.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    code = main(
        ["simulate", str(path), "--contenders", "requests,ours", "--seeds", "1",
         "--duration", "5m", "--no-charts", "--out", str(tmp_path / "out")]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    said = [line for line in out.splitlines() if "(set by the scenario)" in line]
    assert said == [
        "ours runs with tas extender --max-violating-node-share 1 (set by the scenario)"
    ]


def test_the_clairvoyant_runs_with_ours_settings() -> None:
    # The clairvoyant reads true values, so the fleet must truly violate everywhere: every
    # node's health value turns 2 at 5m, a minute before six more pods arrive.
    fail_open = run_job(Job(truly_unhealthy({}), CLAIRVOYANT, seed=9)).figures
    never = run_job(
        Job(truly_unhealthy({"extender": {"maxViolatingNodeShare": 1}}), CLAIRVOYANT, seed=9)
    ).figures
    assert fail_open is not None
    assert never is not None
    assert fail_open["violating_placements"] > 0
    assert never["violating_placements"] == 0


def truly_unhealthy(ours: dict[str, Any]) -> Scenario:
    document = yaml.safe_load(BOGUS.read_text(encoding="utf-8"))
    document["events"][0] = {
        "at": "5m",
        "set-health": {"nodes": [f"worker-{i}" for i in range(1, 5)], "value": 2},
    }
    document["contenders"] = {"ours": ours} if ours else {}
    return load_scenario_text(yaml.safe_dump(document), base=SCENARIOS)


def test_every_problem_of_the_extender_settings_is_listed_with_its_path() -> None:
    with pytest.raises(ScenarioError) as caught:
        bogus_metric_with(
            {
                "tas": {"extender": {"maxViolatingNodeShare": 1}},
                "ours": {"extender": {"maxViolatingNodeShare": 0, "scoreMode": "best"}},
                "requests": {"extender": {"breaker": True}},
            }
        )
    problems = "\n".join(caught.value.problems)
    for expected in (
        "contenders.ours.extender.maxViolatingNodeShare: 0 is less than or equal to the minimum",
        "contenders.ours.extender.scoreMode: 'best' is not one of ['proportional', 'rank']",
        "contenders.requests.extender: Additional properties are not allowed ('breaker'",
    ):
        assert expected in problems, problems
    with pytest.raises(ScenarioError) as meaning:
        bogus_metric_with({"tas": {"extender": {"maxViolatingNodeShare": 1}}})
    assert meaning.value.problems == (
        "contenders.tas.extender: only ours runs this project's extender; the others' "
        "extenders have no settings here",
    )


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    extender=st.dictionaries(
        st.sampled_from(["maxViolatingNodeShare", "scoreMode", "filterOnEstimates", "other"]),
        _values,
    )
    | _values
)
def test_arbitrary_extender_settings_load_or_list_problems(extender: object) -> None:
    problems: tuple[str, ...] = ()
    try:
        scenario = bogus_metric_with({"ours": {"extender": extender}})
    except ScenarioError as error:
        problems = error.problems or ("(a ScenarioError that names no problem)",)
    if problems:
        assert all(p.startswith("contenders.ours.extender") for p in problems), problems
    else:
        assert isinstance(scenario.contenders["ours"].extender, ExtenderSettings)


def test_the_contenders_that_run_ours_extender_are_the_ones_the_scenario_lets_configure() -> None:
    running_ours = {name for name, spec in CONTENDERS.items() if spec.extender is ExtenderKind.OURS}
    assert running_ours == OURS_EXTENDER_CONTENDERS


def test_a_family_s_contenders_reach_every_drawn_scenario_and_the_draws_stay_the_same(
    tmp_path: Path,
) -> None:
    default = load_family("default")
    document = dict(default.raw)
    document["contenders"] = {"ours": {"extender": {"maxViolatingNodeShare": 1}}}
    family = read_family(document, base=SCENARIOS / "families")
    assert family.contenders["ours"].described() == ["tas extender --max-violating-node-share 1"]
    assert load_family("default").contenders == {}
    for index in range(3):
        drawn = draw_scenario(family, index)
        assert drawn["contenders"] == document["contenders"]
        without = {k: v for k, v in drawn.items() if k != "contenders"}
        assert without == draw_scenario(default, index)
        scenario = load_scenario_text(yaml.safe_dump(drawn), base=SCENARIOS)
        settings = scenario.contenders["ours"].extender
        assert settings is not None
        assert settings.max_violating_node_share == 1.0


def test_a_family_refuses_a_descheduler_file_and_bad_extender_settings() -> None:
    document = dict(load_family("default").raw)
    document["contenders"] = {
        "requests-lnu": {"deschedulerFile": "lnu.yaml"},
        "ours": {"extender": {"maxViolatingNodeShare": 2}},
    }
    with pytest.raises(FamilyError) as caught:
        read_family(document, base=SCENARIOS / "families")
    problems = "\n".join(caught.value.problems)
    assert (
        "contenders.requests-lnu.deschedulerFile: a family gives the DeschedulerPolicy" in problems
    )
    document["contenders"] = {"ours": {"extender": {"maxViolatingNodeShare": 2}}}
    with pytest.raises(FamilyError) as drawn:
        read_family(document, base=SCENARIOS / "families")
    assert "contenders.ours.extender.maxViolatingNodeShare: 2 is greater than the maximum" in (
        "\n".join(drawn.value.problems)
    )


def _resolved(name: str, scenario: Scenario) -> Any:
    found = resolve(name, scenario.contenders.get(name))
    assert not hasattr(found, "reason"), found
    return found


def test_ours_runs_the_recommended_policy_an_administrator_can_apply() -> None:
    """The comparison's ours is a policy an administrator can deploy as it stands:
    deploy/descheduler/recommended.yaml is the `ours` row's DeschedulerPolicy, object for object,
    so what the results say of ours is what that file does."""
    from tas_simulator.contenders import OURS

    shipped = Path(__file__).parents[2] / "deploy" / "descheduler" / "recommended.yaml"
    assert yaml.safe_load(shipped.read_text(encoding="utf-8")) == yaml.safe_load(OURS)
