"""The dashboard's page in a real headless Chromium (Debian's `chromium` and `chromium-driver`,
driven by selenium): what every browser test shares, in one place.

`chromium()` starts the browser (tests/tas_dashboard/conftest.py's `browser` fixture);
`patient(driver)`
waits up to `WAIT_SECONDS`, retrying an element the page re-rendered meanwhile (it updates in
place several times a second, so a list read mid-update may go stale); `read(wait, selector)` is
an element's text read so; `click(driver, selector)` clicks unless the page is re-rendering it
(for `wait.until`); `js(driver, script, ...)` a script's value; `screenshot(driver, name)`
saves a test artifact in `test-artifacts/` (gitignored).

`make test` installs the browser (scripts/ensure-browser.sh); without it a browser test fails
and says so rather than skipping.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
WAIT_SECONDS = 45
#: The explanation panel once it shows what it fetched.
LOADED = '#explain[data-state="loaded"]'


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


@contextlib.contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    """A headless Chromium with a 1600 x 1900 window, quit at the end, leaving nothing in /tmp."""
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
    # Chromium keeps its singleton socket in a fresh directory under TMPDIR and leaves it behind
    # when chromedriver ends it: each browser gets a TMPDIR of its own, removed after it quits.
    with tempfile.TemporaryDirectory(prefix="tas-chromium-", ignore_cleanup_errors=True) as tmp:
        service = Service(_binary("chromedriver"), env={**os.environ, "TMPDIR": tmp})
        driver = webdriver.Chrome(service=service, options=options)
        try:
            yield driver
        finally:
            driver.quit()


def patient(
    driver: webdriver.Chrome, seconds: float = WAIT_SECONDS
) -> WebDriverWait[webdriver.Chrome]:
    return WebDriverWait(driver, seconds, ignored_exceptions=[StaleElementReferenceException])


def click(driver: webdriver.Chrome, selector: str) -> bool:
    """Click the first element matching `selector`; False while the page re-renders it."""
    try:
        found = driver.find_elements(By.CSS_SELECTOR, selector)
        if not found:
            return False
        found[0].click()
    except StaleElementReferenceException:
        return False
    return True


def read(wait: WebDriverWait[webdriver.Chrome], selector: str) -> str:
    """An element's text, read through `wait` (which retries a stale element reference)."""
    text: str = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, selector).text)
    return text


def js(driver: webdriver.Chrome, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


def screenshot(driver: webdriver.Chrome, name: str) -> None:
    """The page as it stands, saved as test-artifacts/`name`."""
    ARTIFACTS.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / name))
