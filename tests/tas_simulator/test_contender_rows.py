"""Each contender row is one documented setting of its source, and ours runs at what deploy/
ships (tas_simulator.contenders `CONTENDERS`, `sources`, `Contender.pipeline`; tas_simulator.runner
`build_run`, `follow_placements`).

Covered:
- `sources()` groups the rows by source in `CONTENDERS`' order: the PSI profile's three
  cadences are one source, Volcano's two Prometheus setups another, every other row its own;
  among chosen names only those, and a name that is no contender is left out;
- rows of one source differ only in the cited setting (cadence, scrape) and their name;
- `choose_contenders` and `tas simulate --contenders` accept every new row;
- a row's pipeline: Volcano's installer row reads 5 s scrapes with the scenario's window and
  delay; every other row reads the scenario's pipeline unchanged, and the clairvoyant
  reference reads true values whatever the source ships;
- ours' herd window, descheduling cadence and sync period are deploy/'s, and stay the same when
  the scenario's metric window, delay, scrape, start-up, sync period or descheduling interval
  change; a Prometheus-querying baseline still follows the scenario's sync period.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from tas_herd.placements import PlacementTracker
from tas_simulator.contenders import (
    CONTENDERS,
    OURS_DESCHEDULING_INTERVAL,
    OURS_SYNC_PERIOD,
    VOLCANO_INSTALLER_SCRAPE_INTERVAL,
    Contender,
    choose_contenders,
    resolve,
    sources,
)
from tas_simulator.runner import build_run
from tas_simulator.scenario import Pipeline, Scenario
from tests.tas_simulator import worlds

REPO = Path(__file__).resolve().parents[2]


def small(
    *,
    startup: str | dict[str, Any] = "10s",
    sync: str = "10s",
    interval: str = "60s",
    scrape: str = "15s",
    window: str = "1m",
    delay: str = "0s",
) -> Scenario:
    """Two small nodes and two pods (tests/tas_simulator/worlds.py) under the cadences given."""
    settings = {
        "name": "rows",
        "duration": "2m",
        "step": "5s",
        "seed": 1,
        "warmup": "30s",
        "startupDelay": startup,
        "syncPeriod": sync,
        "deschedulingInterval": interval,
        "metrics": {"scrapeInterval": scrape, "window": window, "delay": delay},
    }
    return worlds.scenario(worlds.quiet_pair(settings))


# ---------------------------------------------------------------------------- sources


def test_sources_group_each_source_s_documented_settings_in_the_contenders_order() -> None:
    assert sources() == {
        "requests": ("requests",),
        "requests-lnu": ("requests-lnu",),
        "tas": ("tas",),
        "psi-profile": ("psi-profile", "psi-profile-60s", "psi-profile-30s"),
        "volcano": ("volcano-loadaware", "volcano-loadaware-5s-scrape"),
        "ours": ("ours",),
    }
    # Every row belongs to exactly one source.
    rows = [row for group in sources().values() for row in group]
    assert sorted(rows) == sorted(CONTENDERS)


def test_sources_of_chosen_names_keep_only_those_and_leave_out_unknown_ones() -> None:
    chosen = ["ours", "volcano-loadaware-5s-scrape", "psi-profile-30s", "psi-profile", "nobody"]
    assert sources(chosen) == {
        "psi-profile": ("psi-profile", "psi-profile-30s"),
        "volcano": ("volcano-loadaware-5s-scrape",),
        "ours": ("ours",),
    }
    assert sources([]) == {}


@pytest.mark.parametrize(
    ("row", "first", "setting"),
    [
        pytest.param("psi-profile-60s", "psi-profile", "descheduling_interval", id="psi 60 s"),
        pytest.param("psi-profile-30s", "psi-profile", "descheduling_interval", id="psi 30 s"),
        pytest.param(
            "volcano-loadaware-5s-scrape", "volcano-loadaware", "scrape_interval", id="volcano 5 s"
        ),
    ],
)
def test_rows_of_one_source_differ_only_in_their_cited_setting(
    row: str, first: str, setting: str
) -> None:
    spec, shipped = CONTENDERS[row], CONTENDERS[first]
    assert spec.source_name == shipped.source_name
    assert getattr(spec, setting) != getattr(shipped, setting)
    same = dataclasses.replace(spec, name=first, **{setting: getattr(shipped, setting)})
    assert same == shipped


def test_every_row_can_be_chosen_and_run_by_name() -> None:
    assert choose_contenders("") == list(CONTENDERS)
    assert choose_contenders("psi-profile-30s, volcano-loadaware-5s-scrape") == [
        "psi-profile-30s",
        "volcano-loadaware-5s-scrape",
    ]
    with pytest.raises(ValueError, match="volcano-loadaware-5s-scrape"):
        choose_contenders("volcano-5s")
    for name in CONTENDERS:
        assert isinstance(resolve(name), Contender), name


# ---------------------------------------------------------------------------- the pipeline


def test_volcano_s_installer_row_reads_5s_scrapes_with_the_scenario_s_window_and_delay() -> None:
    scenario = small(scrape="30s", window="2m", delay="15s")
    own = worlds.contender("volcano-loadaware-5s-scrape", scenario).pipeline(scenario)
    assert own == Pipeline(scrape_interval=VOLCANO_INSTALLER_SCRAPE_INTERVAL, window=120, delay=15)
    run = build_run(scenario, worlds.contender("volcano-loadaware-5s-scrape", scenario), seed=1)
    assert run.source.store.spec == own
    for name in CONTENDERS:
        if name != "volcano-loadaware-5s-scrape":
            assert worlds.contender(name, scenario).pipeline(scenario) == scenario.pipeline, name


def test_the_clairvoyant_reads_true_values_whatever_its_source_ships() -> None:
    scenario = small(scrape="30s")
    run = build_run(
        scenario,
        worlds.contender("volcano-loadaware-5s-scrape", scenario),
        seed=1,
        clairvoyant=True,
    )
    assert run.source.store.spec == Pipeline(scrape_interval=5.0, window=5.0, delay=0.0)


# --------------------------------------------------------------------- ours as deployed


def _ours_settings(scenario: Scenario) -> tuple[float, float, float]:
    run = build_run(scenario, worlds.contender("ours", scenario), seed=1)
    assert run.loop.placements is not None
    return run.loop.placements.window, run.loop.descheduling_interval, run.loop.sync_period


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param({"window": "5m"}, id="a longer metric window"),
        pytest.param({"delay": "30s", "scrape": "30s"}, id="a slower pipeline"),
        pytest.param({"startup": {"uniform": ["10s", "2m"]}}, id="longer start-ups"),
        pytest.param({"interval": "30s"}, id="the family's 30 s draw"),
        pytest.param({"sync": "30s"}, id="a slower sync period"),
    ],
)
def test_ours_runs_with_deploy_s_settings_whatever_the_scenario_hides(
    changed: dict[str, Any],
) -> None:
    shipped = (PlacementTracker().window, OURS_DESCHEDULING_INTERVAL, OURS_SYNC_PERIOD)
    assert _ours_settings(small()) == shipped
    assert _ours_settings(small(**changed)) == shipped


def test_ours_settings_are_those_deploy_cluster_ships() -> None:
    def args_of(manifest: str) -> list[str]:
        text = (REPO / "deploy" / "cluster" / manifest).read_text(encoding="utf-8")
        (args,) = [
            doc["spec"]["template"]["spec"]["containers"][0]["args"]
            for doc in yaml.safe_load_all(text)
            if doc and doc.get("kind") == "Deployment"
        ]
        return [str(a) for a in args]

    extender = args_of("extender.yaml")
    # No --estimate-window: herd control's window is the flag's default.
    assert "--estimate-window" not in extender
    assert extender[extender.index("--sync-period") + 1] == f"{OURS_SYNC_PERIOD:g}s"
    controller = args_of("policy-controller.yaml")
    assert controller[controller.index("--sync-period") + 1] == f"{OURS_SYNC_PERIOD:g}s"
    descheduler = args_of("descheduler.yaml")
    interval = descheduler[descheduler.index("--descheduling-interval") + 1]
    assert interval == f"{OURS_DESCHEDULING_INTERVAL:g}s"


def test_a_prometheus_querying_baseline_still_follows_the_scenario_s_sync_period() -> None:
    scenario = small(sync="30s")
    run = build_run(scenario, worlds.contender("psi-profile", scenario), seed=1)
    assert run.loop.sync_period == 30.0
