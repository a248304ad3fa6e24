"""Every contender's descheduler runs as often as its source ships it, unless the scenario says
otherwise (tas_simulator.contenders, tas_simulator.scenario
`contenders.<name>.deschedulingInterval`).

Covered:
- a scenario may name every contender (the schema's list is the contenders'), and
  psi-profile-60s and psi-profile-30s are psi-profile at another cadence, nothing else;
- the defaults are the cited constants: the OpenShift operator's KubeDescheduler (psi-profile,
  requests-lnu) every hour, OpenShift Virtualization's documentation every 60 s and 30 s,
  Volcano's installer every 10 minutes, upstream's Helm chart (tas) every 2 minutes; requests
  has no descheduler; ours runs at deploy/cluster's `--descheduling-interval` (60 s) whatever
  the scenario's top-level `deschedulingInterval`, and at another cadence only where the
  scenario sets `contenders.ours.deschedulingInterval`;
- a scenario that sets one contender's cadence changes that contender's cycle count and no
  other's;
- every problem of a cadence setting is listed with its path: an unknown contender (with the
  name it was probably meant to be), a contender without a descheduler, a cadence shorter than
  a step, one that is no duration (by the schema);
- a report says when a scenario or a family changed a contender's cadence, and a family's
  setting reaches every drawn scenario.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from descheduler.cycle import Descheduler
from tas_simulator.contenders import (
    CONTENDERS,
    OPENSHIFT_DESCHEDULING_INTERVAL,
    OURS_DESCHEDULING_INTERVAL,
    PSI_PROFILE_EXAMPLE_INTERVAL,
    PSI_VIRTUALIZATION_INTERVAL,
    UPSTREAM_DESCHEDULING_INTERVAL,
    VOLCANO_DESCHEDULING_INTERVAL,
)
from tas_simulator.family import draw_scenario, load_family, read_family
from tas_simulator.runner import build_run, first_cycle, run_contender
from tas_simulator.scenario import (
    NO_DESCHEDULER_CONTENDERS,
    SCENARIOS,
    Scenario,
    ScenarioError,
    load_scenario_text,
)
from tests.tas_simulator import worlds

REPO = Path(__file__).resolve().parents[2]


def quiet_document(ours: str = "60s") -> dict[str, Any]:
    """Two small nodes, two pods, two hours (tests/tas_simulator/worlds.py): cheap enough to count
    every contender's cycles; `ours`: the scenario's deschedulingInterval."""
    settings = {
        "name": "cadence",
        "duration": "2h",
        "step": "10s",
        "seed": 1,
        "warmup": "1m",
        "syncPeriod": "10s",
        "deschedulingInterval": ours,
        "metrics": {"scrapeInterval": "30s", "window": "1m"},
    }
    return worlds.quiet_pair(settings)


WITH_DESCHEDULER = [name for name, spec in CONTENDERS.items() if spec.descheduler is not None]


def quiet(contenders: dict[str, Any] | None = None, *, ours: str = "60s") -> Scenario:
    document = quiet_document(ours)
    if contenders is not None:
        document["contenders"] = contenders
    return worlds.scenario(document)


def problems_of(contenders: dict[str, Any]) -> str:
    document = quiet_document()
    document["contenders"] = contenders
    with pytest.raises(ScenarioError) as caught:
        worlds.scenario(document)
    return "\n".join(caught.value.problems)


def cycles(scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many descheduling cycles each contender with a descheduler runs."""
    counted: list[int] = []
    original = Descheduler.run_cycle

    def spy(self: Descheduler) -> Any:
        counted.append(1)
        return original(self)

    monkeypatch.setattr(Descheduler, "run_cycle", spy)
    found: dict[str, int] = {}
    for name in WITH_DESCHEDULER:
        counted.clear()
        run_contender(scenario, worlds.contender(name, scenario), seed=1)
        found[name] = len(counted)
    return found


def expected_cycles(scenario: Scenario, interval: float, *, seed: int = 1) -> int:
    """Cycles at the seed's first cycle (`first_cycle`: a point within the first interval), then
    every interval, up to the last step (duration - step)."""
    first = first_cycle(seed, interval, scenario.step)
    return int((scenario.duration - scenario.step - first) // interval) + 1


# ---------------------------------------------------------------------------- defaults


@pytest.mark.parametrize(
    ("name", "interval"),
    [
        pytest.param("psi-profile", 3600.0, id="OpenShift KubeDescheduler: an hour"),
        pytest.param("requests-lnu", 3600.0, id="OpenShift LowNodeUtilization: an hour"),
        pytest.param("volcano-loadaware", 600.0, id="Volcano's installer: 10 minutes"),
        pytest.param("tas", 120.0, id="upstream's Helm chart CronJob: 2 minutes"),
        pytest.param("psi-profile-60s", 60.0, id="OpenShift Virtualization's docs: 60 s"),
        pytest.param("psi-profile-30s", 30.0, id="the docs' KubeVirtRelieveAndMigrate example"),
        pytest.param("volcano-loadaware-5s-scrape", 600.0, id="Volcano with its own Prometheus"),
        pytest.param("ours", 60.0, id="ours: deploy/cluster's 60 s"),
    ],
)
def test_each_baseline_runs_at_its_source_s_cadence_by_default(name: str, interval: float) -> None:
    assert CONTENDERS[name].descheduling_interval == interval
    assert worlds.contender(name, quiet(ours="30s")).interval(quiet(ours="30s")) == interval


def test_the_defaults_are_the_cited_constants() -> None:
    assert OPENSHIFT_DESCHEDULING_INTERVAL == 3600.0
    assert VOLCANO_DESCHEDULING_INTERVAL == 600.0
    assert UPSTREAM_DESCHEDULING_INTERVAL == 120.0
    assert PSI_VIRTUALIZATION_INTERVAL == 60.0
    assert PSI_PROFILE_EXAMPLE_INTERVAL == 30.0
    assert OURS_DESCHEDULING_INTERVAL == 60.0
    by_name = {name: spec.descheduling_interval for name, spec in CONTENDERS.items()}
    assert by_name == {
        "requests": None,
        "requests-lnu": OPENSHIFT_DESCHEDULING_INTERVAL,
        "tas": UPSTREAM_DESCHEDULING_INTERVAL,
        "psi-profile": OPENSHIFT_DESCHEDULING_INTERVAL,
        "psi-profile-60s": PSI_VIRTUALIZATION_INTERVAL,
        "psi-profile-30s": PSI_PROFILE_EXAMPLE_INTERVAL,
        "volcano-loadaware": VOLCANO_DESCHEDULING_INTERVAL,
        "volcano-loadaware-5s-scrape": VOLCANO_DESCHEDULING_INTERVAL,
        "ours": OURS_DESCHEDULING_INTERVAL,
    }


def test_ours_runs_at_what_deploy_ships_whatever_the_scenario_s_interval() -> None:
    # A family draws 30 s for half its scenarios; ours is deployed at 60 s in every one.
    for drawn in ("30s", "60s", "2m"):
        assert worlds.contender("ours", quiet(ours=drawn)).interval(quiet(ours=drawn)) == 60.0
    # Only a scenario that sets ours' own cadence runs it at another, and says so.
    explicit = quiet({"ours": {"deschedulingInterval": "2m"}}, ours="30s")
    assert worlds.contender("ours", explicit).interval(explicit) == 120.0
    assert explicit.contenders["ours"].runs_with("ours", set_by="the scenario") == (
        "ours runs with a descheduling cycle every 120s (set by the scenario)"
    )
    manifest = (REPO / "deploy" / "cluster" / "descheduler.yaml").read_text(encoding="utf-8")
    args = [
        doc["spec"]["template"]["spec"]["containers"][0]["args"]
        for doc in yaml.safe_load_all(manifest)
        if doc and doc.get("kind") == "Deployment"
    ]
    (shipped,) = [a[a.index("--descheduling-interval") + 1] for a in args]
    assert shipped == f"{OURS_DESCHEDULING_INTERVAL:g}s"
    assert Scenario.descheduling_interval == OURS_DESCHEDULING_INTERVAL
    document = quiet_document()
    del document["deschedulingInterval"]
    assert worlds.scenario(document).descheduling_interval == 60.0


def test_a_scenario_may_name_every_contender_and_no_other() -> None:
    schema = json.loads((SCENARIOS / "schema.json").read_text(encoding="utf-8"))
    names = schema["properties"]["contenders"]["propertyNames"]["enum"]
    assert names == list(CONTENDERS)


@pytest.mark.parametrize("name", ["psi-profile-60s", "psi-profile-30s"])
def test_each_short_psi_profile_is_psi_profile_at_another_cadence(name: str) -> None:
    short, shipped = CONTENDERS[name], CONTENDERS["psi-profile"]
    assert dataclasses.replace(short, name="psi-profile", descheduling_interval=3600.0) == shipped


def test_only_requests_has_no_descheduler() -> None:
    without = {name for name, spec in CONTENDERS.items() if spec.descheduler is None}
    assert without == NO_DESCHEDULER_CONTENDERS


# --------------------------------------------------------------------------- overrides


def test_setting_one_contender_s_cadence_changes_only_its_cycle_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = quiet()
    before = cycles(plain, monkeypatch)
    assert before == {
        name: expected_cycles(plain, worlds.contender(name, plain).interval(plain))
        for name in WITH_DESCHEDULER
    }
    assert before["psi-profile"] == 2  # seed 1's phase: 27% into the hour, then an hour later
    changed = quiet({"psi-profile": {"deschedulingInterval": "5m"}})
    after = cycles(changed, monkeypatch)
    assert after["psi-profile"] == expected_cycles(changed, 300.0) == 24
    assert {k: v for k, v in after.items() if k != "psi-profile"} == {
        k: v for k, v in before.items() if k != "psi-profile"
    }


def test_every_problem_of_a_cadence_setting_is_listed_with_its_path() -> None:
    problems = problems_of(
        {
            "requests": {"deschedulingInterval": "1m"},
            "ours": {"deschedulingInterval": "1m"},
            "volcano-loadaware": {"deschedulingInterval": "1s"},
        }
    )
    for expected in (
        "contenders.requests.deschedulingInterval: requests runs no descheduler",
        "contenders.volcano-loadaware.deschedulingInterval: must be at least one step (10s), "
        "got 1s",
    ):
        assert expected in problems, problems
    assert "contenders.ours" not in problems, problems
    # The shape is checked first, by the schema.
    shape = problems_of({"tas": {"deschedulingInterval": "soon"}})
    assert "contenders.tas.deschedulingInterval: 'soon' is not valid" in shape


def test_an_unknown_contender_is_rejected_with_the_name_it_was_probably_meant_to_be() -> None:
    problems = problems_of({"psi-profle": {"deschedulingInterval": "60s"}})
    assert "'psi-profle' is not one of" in problems
    assert "(did you mean psi-profile?)" in problems


def test_a_report_says_which_cadence_the_scenario_set() -> None:
    scenario = quiet({"psi-profile": {"deschedulingInterval": "5m"}})
    settings = scenario.contenders["psi-profile"]
    assert settings.runs_with("psi-profile", set_by="the scenario") == (
        "psi-profile runs with a descheduling cycle every 300s (set by the scenario)"
    )


def test_a_family_s_cadence_reaches_every_drawn_scenario() -> None:
    document = dict(load_family("default").raw)
    document["contenders"] = {"psi-profile": {"deschedulingInterval": "60s"}}
    family = read_family(document, base=SCENARIOS / "families")
    for index in range(2):
        drawn = load_scenario_text(yaml.safe_dump(draw_scenario(family, index)), base=SCENARIOS)
        contender = worlds.contender("psi-profile", drawn)
        assert contender.interval(drawn) == 60.0
        assert worlds.contender("ours", drawn).interval(drawn) == OURS_DESCHEDULING_INTERVAL


# ---------------------------------------------------------------------------- the phase


def first_cycle_times(
    scenario: Scenario, name: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> list[float]:
    """The scenario times of a contender's descheduling cycles."""
    times: list[float] = []
    original = Descheduler.run_cycle

    def spy(self: Descheduler) -> Any:
        times.append(self.clock.now().timestamp())
        return original(self)

    monkeypatch.setattr(Descheduler, "run_cycle", spy)
    run = build_run(scenario, worlds.contender(name, scenario), seed=seed)
    for index in range(run.steps):
        run.step(index)
    return [t - run.clock.epoch(0.0) for t in times]


def test_every_descheduler_first_cycles_at_the_seeds_share_of_its_own_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A descheduler started long before the scenario cycles at an arbitrary point of its
    interval: each seed draws one share, the same for every contender, so an hourly one cycles
    once in an hour, at a time that differs by seed, instead of never."""
    scenario = quiet().with_duration(3600)
    shares = []
    for seed in (1, 2, 3):
        hourly = first_cycle_times(scenario, "psi-profile", seed, monkeypatch)
        ours = first_cycle_times(scenario, "ours", seed, monkeypatch)
        assert len(hourly) == 1, hourly
        share = hourly[0] / 3600
        # The same share of ours' 60 s, to the step.
        assert ours[0] == pytest.approx(share * 60, abs=scenario.step)
        assert ours[1] - ours[0] == pytest.approx(60.0, abs=scenario.step)
        shares.append(round(share, 2))
    assert len(set(shares)) == 3
    # A scenario may pin it: one interval in, as a descheduler started with the scenario.
    pinned = worlds.scenario({**quiet_document(), "deschedulingPhase": 1}).with_duration(3600)
    assert first_cycle_times(pinned, "ours", 1, monkeypatch)[0] == 60.0
    assert first_cycle_times(pinned, "psi-profile", 1, monkeypatch) == []
