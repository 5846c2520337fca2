"""Headless Chromium from the system's packages (``/usr/bin/chromium`` and its chromedriver),
driven by Selenium at 1440 px wide; screenshots go under ``.data-ci/screenshots/``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from django.conf import settings

WIDTH, HEIGHT = 1440, 1000
CHROMIUM = os.environ.get("KRUNTIMES_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("KRUNTIMES_CHROMEDRIVER", "/usr/bin/chromedriver")


def screenshot_dir() -> Path:
    """``KRUNTIMES_SCREENSHOT_DIR``, else ``.data-ci/screenshots/`` in the checkout (what CI
    keeps as artifacts; ``.ci/run`` points KRUNTIMES_DATA_DIR at ``.data-ci``)."""
    path = Path(
        os.environ.get("KRUNTIMES_SCREENSHOT_DIR")
        or Path(settings.BASE_DIR) / ".data-ci" / "screenshots"
    )
    path.mkdir(parents=True, exist_ok=True)
    return path


def chromium():
    """A headless Chromium WebDriver (the caller quits it)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if missing:
        raise RuntimeError(
            f"{', '.join(missing)} missing: apt-get install -y chromium chromium-driver "
            "(.ci/run does this)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={WIDTH},{HEIGHT}",
        "--no-first-run",
        "--disable-extensions",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_window_size(WIDTH, HEIGHT)
    return driver


def no_sideways_scroll(driver) -> bool:
    return driver.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def list_fits(driver) -> bool:
    """A change list's table (present: the list is not empty) fits its box, no sideways scroll
    inside it, with the filters open."""
    return driver.execute_script(
        "const r = document.querySelector('#changelist .results');"
        "return !!document.querySelector('#changelist-filter') && !!r"
        " && !!r.querySelector('#result_list tbody tr') && r.scrollWidth <= r.clientWidth;"
    )


def full_page_screenshot(driver, path: Path) -> None:
    """The whole page at 1440 px (the window grown to the document's height)."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(WIDTH, min(max(height, HEIGHT), 6000))
    driver.save_screenshot(str(path))
    driver.set_window_size(WIDTH, HEIGHT)
