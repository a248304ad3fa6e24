"""The dashboard in a real headless Chromium (Debian's `chromium` and `chromium-driver`, driven
by selenium), against a real `tas run`.

Covered: the page shows every node; clicking a node's health "2" button (on a node running
demo pods) makes, without a reload, the node's `demo-policy=violating` label and an eviction
in the decision log appear; the charts are drawn. A screenshot is saved as a test artifact in
`test-artifacts/dashboard.png` (gitignored).

`make test` installs the browser (scripts/ensure-browser.sh); without it this test fails and
says so rather than skipping.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.demo_process import start_demo

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
WAIT_SECONDS = 45


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
        if Path(f"/usr/bin/{name}").exists():
            return f"/usr/bin/{name}"
    pytest.fail(
        f"{names[0]} is not installed: run scripts/ensure-browser.sh as root "
        "(or apt-get install chromium chromium-driver)"
    )


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = _binary("chromium", "chromium-browser")
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespace for the sandbox
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1600,1900",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(_binary("chromedriver")), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_page_shows_the_loop_close_live_after_a_click(
    browser: webdriver.Chrome, tmp_path: Path
) -> None:
    # The page updates in place several times a second: a list read mid-update may go stale.
    wait = WebDriverWait(browser, WAIT_SECONDS, ignored_exceptions=[StaleElementReferenceException])
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
        browser.find_element(By.CSS_SELECTOR, button).click()

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
        assert browser.find_elements(By.CSS_SELECTOR, "#chart-util canvas")
        log_text = browser.find_element(By.ID, "log").text
        assert f"set {sick} health_metric to 2" in log_text
        assert f"node {sick}: set demo-policy=violating" in log_text

        ARTIFACTS.mkdir(exist_ok=True)
        browser.execute_script("window.scrollTo(0, 0)")
        assert browser.save_screenshot(str(ARTIFACTS / "dashboard.png"))
