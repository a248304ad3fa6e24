"""A node card's pressure curve as a reader sees it, in a real headless Chromium against a real
`tas run` (`make run`'s default world: the health demo, LoadAware learning curves by default).

Covered:
- before a node has enough usable samples, its card says the shared model predicts for it, how
  many samples it has and how many it needs ("pressure curve: shared model (5 samples, needs
  8)"); once it has them, "pressure curve: learned, acts like N of 4 cores (M samples)" and
  how that compares with the shared model, with the same N `tas explain node` prints;
- under it, the PSI the node's curve predicts at the node's utilization now, beside the shared
  model's and the measured pressure, in percent as every share on the page;
- every line shown says what the state it was rendered from says (read in one render);
- the node's explain panel (a click on its name) shows the same curve, and what moving one core
  off the node predicts on it and on the shared model, in percent.
Screenshot: `test-artifacts/dashboard-curve.png`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.demo_process import start_demo
from tests.tas_dashboard.browser import LOADED, click, patient, screenshot

#: Each card's curve lines and the state's `curve` they were rendered from, in one render.
# Before the page's first state arrives there is nothing to read yet, and a node's card is
# drawn at the render after its state: both mean "not yet", and the wait goes on.
CARDS = """
if (!view.state) return [];
return view.state.nodes.flatMap((node) => {
  const card = document.querySelector(`#nodes [data-node="${node.name}"]`);
  if (!card) return [];
  const line = card.querySelector("[data-curve]");
  const predicts = card.querySelector("[data-curve-predicts]");
  return [{ name: node.name, curve: node.curve, shown: !line.hidden, text: line.textContent,
            predicts: predicts.hidden ? null : predicts.textContent }];
});
"""

PERCENT = r"(\d+(?:\.\d)?)%"
LEARNED = re.compile(
    rf"at {PERCENT} busy it predicts pressure {PERCENT} \(shared model {PERCENT}\); "
    rf"measured {PERCENT}"
)
SHARED = re.compile(rf"at {PERCENT} busy the shared model predicts pressure {PERCENT}; measured "
                    rf"{PERCENT}")  # fmt: skip


def words(curve: dict[str, Any]) -> str:
    """The first line a card shows for `curve` (docs/dashboard.md, "Pressure curves")."""
    samples = curve["samples"]
    counted = f"{samples} sample{'' if samples == 1 else 's'}"
    if not curve["learned"]:
        have = counted if samples else "no usable samples yet"
        return f"pressure curve: shared model ({have}, needs {curve['minSamples']})"
    servers, shared = curve["servers"], curve["sharedServers"]
    shape = (
        "stalls sooner than the shared model" if servers < shared
        else "stalls later than the shared model" if servers > shared
        else "as the shared model"
    )  # fmt: skip
    return (
        f"pressure curve: learned, acts like {servers} of {curve['cores']:g} cores ({counted}): "
        f"{shape}"
    )


def check_card(card: dict[str, Any]) -> None:
    """A card's lines say what its state says; the predictions in percent, as the state's."""
    curve = card["curve"]
    assert curve is not None, card  # LoadAware learns curves in the default world
    assert card["text"] == words(curve), card
    pattern = LEARNED if curve["learned"] else SHARED
    found = pattern.fullmatch(card["predicts"] or "")
    assert found, card
    said = [float(v) / 100 for v in found.groups()]
    meant = [curve["utilization"], curve["predicted"], curve["shared"], curve["measured"]]
    if not curve["learned"]:
        meant = [curve["utilization"], curve["shared"], curve["measured"]]
    assert all(abs(s - m) <= 0.0005 + 1e-9 for s, m in zip(said, meant, strict=True)), card


def test_a_card_says_its_nodes_pressure_curve_and_what_it_predicts(
    browser: webdriver.Chrome,
    tmp_path: Path,
) -> None:
    wait = patient(browser)
    with start_demo(tmp_path) as demo:
        browser.get(f"{demo.dashboard}/")
        seen: dict[str, list[str]] = {"shared": [], "learned": []}

        def both_wordings(driver: webdriver.Chrome) -> bool:
            for card in driver.execute_script(CARDS):
                if not card["shown"]:
                    assert card["curve"] is None, card  # before LoadAware's first cycle
                    continue
                check_card(card)
                seen["learned" if card["curve"]["learned"] else "shared"].append(card["text"])
            return bool(seen["shared"] and seen["learned"])

        wait.until(both_wordings)
        # The shipped LoadAware needs 8 usable samples; an idle node gathers them slowly.
        fallback = r"pressure curve: shared model \((\d samples?|no usable samples yet), needs 8\)"
        assert all(re.fullmatch(fallback, t) for t in seen["shared"]), seen["shared"]
        learned = re.fullmatch(
            r"pressure curve: learned, acts like (\d+) of 4 cores \((\d+) samples\): .*",
            seen["learned"][-1],
        )
        assert learned, seen["learned"]
        assert 8 <= int(learned.group(2)) <= 32
        # The node `tas explain` explains has the curve its card shows.
        node = next(c["name"] for c in browser.execute_script(CARDS) if c["curve"]["learned"])
        explained = demo.get(f"/api/explain/node/{node}")["curve"]
        line = browser.find_element(By.CSS_SELECTOR, f'#nodes [data-node="{node}"] [data-curve]')
        assert line.is_displayed()
        assert line.text.startswith(
            f"pressure curve: learned, acts like {explained['servers']} of 4 cores"
        ), (line.text, explained)
        below = browser.find_element(
            By.CSS_SELECTOR, f'#nodes [data-node="{node}"] [data-curve-predicts]'
        )
        assert below.is_displayed()
        assert LEARNED.fullmatch(below.text), below.text

        # Its explain panel: the same curve, and what a move of one core off it predicts.
        wait.until(lambda d: click(d, f'#nodes [data-node="{node}"] .node-name'))
        panel = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f'{LOADED}[data-kind="node"]'))
        head = panel.find_element(By.CSS_SELECTOR, "[data-curve-head]").text
        assert re.fullmatch(r"learned, acts like \d+ of 4 cores \(\d+ samples\)", head), head
        move = panel.find_element(By.CSS_SELECTOR, "[data-curve-move]").text
        assert re.fullmatch(
            rf"moving 1 core off: pressure {PERCENT} -> {PERCENT}, relief [0-9.]+ stalled cores "
            rf"\(shared model: -> {PERCENT}, relief [0-9.]+\)",
            move,
        ), move

        screenshot(browser, "dashboard-curve.png")
