"""The dashboard in a real headless Chromium (Debian's `chromium` and `chromium-driver`, driven
by selenium), against a real `tas run`.

Covered: the page shows every node; clicking a node's health "2" button (on a node running
demo pods) makes, without a reload, the node's `demo-policy=violating` label and an eviction
in the decision log appear, the button stays in its place in the card as the pods leave, and
no card moves or changes size, then or as stress pods pile onto another card;
the charts are drawn. A screenshot is saved as a test artifact in
`test-artifacts/dashboard.png` (gitignored).

`make test` installs the browser (scripts/ensure-browser.sh); without it this test fails and
says so rather than skipping. The browser and its helpers: tests/tas_dashboard/browser.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By

from tests.demo_process import start_demo
from tests.tas_dashboard.browser import click, js, patient, screenshot

#: How often, and how long each time, a click waits for the page's log to show it.
CLICK_ATTEMPTS = 5
CLICK_SECONDS = 5.0
#: Stress pods pinned to one card: 8 cores more, enough to turn it overutilized (a note appears)
#: and add a line of chips.
STRESS_PODS = 4


def place_in_card(browser: webdriver.Chrome, card: str, selector: str) -> list[float]:
    """Where an element sits inside its node card (left, top, in CSS pixels)."""
    place: list[float] = js(
        browser,
        "const c = document.querySelector(arguments[0]).getBoundingClientRect();"
        "const e = document.querySelector(arguments[1]).getBoundingClientRect();"
        "return [e.left - c.left, e.top - c.top]",
        card,
        selector,
    )
    return place


def card_boxes(browser: webdriver.Chrome) -> list[list[float | bool]]:
    """Every node card's top inside the nodes grid and its height (CSS pixels), and whether its
    content runs over it (scrolls). Not its left and width: the window's scrollbar, which comes
    and goes with the decision log's length, narrows every column alike."""
    boxes: list[list[float | bool]] = js(
        browser,
        "const grid = document.querySelector('.nodes').getBoundingClientRect();"
        "return [...document.querySelectorAll('.nodes > [data-node]')].map(n => {"
        "  const b = n.getBoundingClientRect();"
        "  return [b.top - grid.top, b.height, n.scrollHeight > n.clientHeight + 1];"
        "})",
    )
    return boxes


def stress_chips(card: str, count: int) -> Callable[[webdriver.Chrome], bool]:
    """A wait's condition: the card shows at least `count` stress pods (a function, not a lambda
    in the loop: the loop's count is bound when the condition is made)."""

    def shown(driver: webdriver.Chrome) -> bool:
        return len(driver.find_elements(By.CSS_SELECTOR, f"{card} .chip.stress")) >= count

    return shown


def test_the_page_shows_the_loop_close_live_after_a_click(
    browser: webdriver.Chrome, tmp_path: Path
) -> None:
    # The page updates in place several times a second: a list read mid-update may go stale.
    wait = patient(browser)
    with start_demo(tmp_path) as demo:
        browser.get(f"{demo.dashboard}/")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "[data-node]")) == 5)
        names = browser.execute_script(
            "return [...document.querySelectorAll('[data-node]')].map(e => e.dataset.node)"
        )
        assert names == [f"node-{c}" for c in "abcde"]

        def node_with_demo_pods(driver: webdriver.Chrome) -> str | None:
            for name in ("node-c", "node-a", "node-d", "node-e"):
                if driver.find_elements(By.CSS_SELECTOR, f'[data-node="{name}"] .chip.pod.demo'):
                    return name
            return None

        sick = wait.until(node_with_demo_pods)
        load_id = browser.execute_script("return window.dashboardLoadId")
        card = f'[data-node="{sick}"]'
        button = f'{card} button[data-action="health"][data-value="2"]'
        # A click can land while the page re-renders (it updates several times a second). Click
        # until the page's log shows the action, as a user would click again (health 2 twice is
        # the same as once).
        set_health = f"set {sick} health_metric to 2"
        button_place = place_in_card(browser, card, button)
        boxes = card_boxes(browser)
        for _ in range(CLICK_ATTEMPTS):
            click(browser, button)
            try:
                patient(browser, CLICK_SECONDS).until(
                    lambda d: set_health in d.find_element(By.ID, "log").text
                )
                break
            except TimeoutException:
                continue

        label = f'{card} [data-label="demo-policy=violating"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, label))
        wait.until(
            lambda d: [
                row
                for row in d.find_elements(By.CSS_SELECTOR, 'tr[data-kind="eviction"]')
                if sick in row.text and "TASViolations" in row.text
            ]
        )
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, f"{card} .chip.pod.demo"))
        assert browser.execute_script("return window.dashboardLoadId") == load_id, "reloaded"
        # The pods left the card; the controls sit above all that changes.
        assert place_in_card(browser, card, button) == button_place, "the button moved in its card"
        # Another card grows: stress pods land on it, one click each, and it turns overutilized
        # (a note says why). The sick one grew a label and lost its pods to the others. No
        # card moved or changed size, and none runs over (what grows scrolls in the pod list).
        busy = f'[data-node="{next(n for n in names if n != sick)}"]'
        for landed in range(1, STRESS_PODS + 1):
            click(browser, f'{busy} button[data-action="load"]')
            wait.until(stress_chips(busy, landed))
        assert card_boxes(browser) == boxes, "a node card moved or changed size"
        assert not any(box[2] for box in boxes), "a node card's content runs over it"
        assert browser.find_elements(By.CSS_SELECTOR, "#chart-util canvas")
        log_text = browser.find_element(By.ID, "log").text
        assert f"set {sick} health_metric to 2" in log_text
        assert f"node {sick}: set demo-policy=violating" in log_text

        browser.execute_script("window.scrollTo(0, 0)")
        screenshot(browser, "dashboard.png")
