"""The page explains, in a real headless Chromium against a real `tas run`.

Covered: clicking a demo pod's chip opens the explanation the dashboard serves at
`/api/explain/pod/...` (the same `tas explain` prints): every candidate node with the
extender's verdict (node-b filtered out with its rule and value), the node it runs on marked,
and whether the descheduler would move it now; clicking a node card's name opens the node's
explanation (its metrics and dontschedule violated on node-b); Escape closes it. Screenshots
are saved as test artifacts: `test-artifacts/explain-pod.png`, `test-artifacts/explain-node.png`.
"""

from __future__ import annotations

from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.demo_process import start_demo
from tests.tas_dashboard.browser import LOADED, click, patient, screenshot


def test_clicking_a_pod_or_a_node_shows_why(browser: webdriver.Chrome, tmp_path: Path) -> None:
    wait = patient(browser)
    with start_demo(tmp_path) as demo:
        browser.get(f"{demo.dashboard}/")
        chip = '[data-node]:not([data-node="node-b"]) .chip.pod.demo'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, chip))
        wait.until(lambda d: click(d, chip))
        panel = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f'{LOADED}[data-kind="pod"]'))
        name = panel.get_attribute("data-name") or ""
        assert name.startswith("health-metric-demo/demo-app-")
        served = demo.get(f"/api/explain/pod/{name}")
        text = panel.text
        assert "Would the descheduler move it now?" in text
        assert f"Runs on {served['node']}" in text
        if served["placement"] is not None:  # placed since the start: in the extender's log
            row = panel.find_element(By.CSS_SELECTOR, 'tr[data-candidate="node-b"]')
            assert "filtered out" in row.text
            assert "demo-policy: health_metric Equals 1 (value 1)" in row.text
            here = panel.find_element(By.CSS_SELECTOR, f'tr[data-candidate="{served["node"]}"]')
            assert "(runs here)" in here.text
        assert panel.find_element(By.CSS_SELECTOR, "[data-move]").get_attribute("data-move") == (
            "yes" if served["move"]["wouldMove"] else "no"
        )
        screenshot(browser, "explain-pod.png")

        wait.until(lambda d: click(d, '[data-node="node-b"] .node-name'))
        panel = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f'{LOADED}[data-kind="node"]'))
        assert panel.get_attribute("data-name") == "node-b"
        row = panel.find_element(By.CSS_SELECTOR, 'tr[data-strategy="dontschedule"]')
        assert "violates: demo-policy: health_metric Equals 1 (value 1)" in row.text
        assert (
            "s old" in panel.find_element(By.CSS_SELECTOR, 'tr[data-metric="health_metric"]').text
        )
        screenshot(browser, "explain-node.png")

        browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
        wait.until(lambda d: not d.find_elements(By.ID, "explain"))
