"""What the README and docs/replay.md say about staleness is what the code does.

Covered:
- the components' default limit: 5 sync periods, at least 30 s (30 s at the default 2 s);
- stretched for a slower source to its arrival age plus three update intervals: the README's
  example (30 s old from a 30 s scrape: stale after 2 minutes) and docs/replay.md's (a 60 s
  scrape answered 15 s late: 195 s); an interval above 60 s is not followed;
- an explicit `--metric-max-age` is kept as given, not stretched;
- `tas replay` judges with a fixed limit: 30 s by default, whatever the scrape interval.
"""

from __future__ import annotations

import re
from pathlib import Path

from tas.adapters.metrics.textfile import TextfileSource
from tas.metrics.refreshing import MAX_CADENCE, Cadence, RefreshingMetricView, default_max_age
from tas_replay.history import Window, fresh_steps

ROOT = Path(__file__).resolve().parents[2]


def flat(path: Path) -> str:
    return re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))


def test_the_default_limit_is_five_sync_periods_at_least_30_s() -> None:
    assert default_max_age(2.0) == 30.0
    assert default_max_age(10.0) == 50.0
    assert "by default 5 sync periods (at least 30 s)" in flat(ROOT / "README.md")


def test_a_slower_source_is_stale_after_its_arrival_age_and_three_intervals() -> None:
    readme, replay = flat(ROOT / "README.md"), flat(ROOT / "docs" / "replay.md")
    assert Cadence(interval=30.0, arrival_age=30.0).allowance == 120.0
    assert "a value arriving 30 s old from a 30 s scrape is stale after 2 minutes" in readme
    assert Cadence(interval=60.0, arrival_age=15.0).allowance == 195.0
    assert "scraping every 60 s and answering 15 s late a live value counts until it is 195 s" in (
        replay
    )
    assert MAX_CADENCE == 60.0


def test_an_explicit_max_age_is_kept_as_given(tmp_path: Path) -> None:
    source = TextfileSource(tmp_path)
    given = RefreshingMetricView(source, max_age=30.0)
    default = RefreshingMetricView(source)
    assert not given.follows_cadence
    assert given.max_age == 30.0
    assert default.follows_cadence
    assert "An explicit `--metric-max-age` is kept as given" in flat(ROOT / "docs" / "reference.md")


def test_replay_judges_history_with_a_fixed_limit() -> None:
    """A 60 s scrape: each value is fresh for 30 s of each minute, missing the rest."""
    window = Window(start=0.0, end=120.0, step=10.0)
    values = [(at, 1.0) for at in range(0, 130, 10)]
    sampled = {float(at): float(at - at % 60) for at in range(0, 130, 10)}
    steps = fresh_steps(window, values, sampled, max_age=30.0)
    assert steps == [1.0, 1.0, 1.0, 1.0, None, None] * 2 + [1.0]
    assert "The replay's limit is fixed: 30 s by default" in flat(ROOT / "docs" / "replay.md")
