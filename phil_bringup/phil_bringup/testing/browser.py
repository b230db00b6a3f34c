"""A headless Chromium driven by Selenium (Debian's chromium and chromedriver), for the tests of
the control tower page."""

from __future__ import annotations

import io
import shutil
import time

CHROMEDRIVER = 'chromedriver'


def browser_missing() -> str:
    """Why no browser test can run here ('' when it can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return 'selenium is not installed (make setup)'
    for program in ('chromium', CHROMEDRIVER):
        if shutil.which(program) is None:
            return f'{program} is not installed (make setup installs it as root)'
    return ''


def headless_chromium(width: int = 1400, height: int = 900):
    """A headless Chromium with software WebGL; quit it when done."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which('chromium')
    for argument in (
        '--headless=new',
        '--no-sandbox',  # CI runs as root
        '--disable-dev-shm-usage',
        '--use-angle=swiftshader',
        '--enable-unsafe-swiftshader',
        f'--window-size={width},{height}',
    ):
        options.add_argument(argument)
    # The Debian driver by path: Selenium must not look for one on the network.
    return webdriver.Chrome(options=options, service=Service(shutil.which(CHROMEDRIVER)))


def wait_for(condition, timeout_s: float, what: str, poll_s: float = 0.1):
    """Poll ``condition()`` until it returns a true value (that value); AssertionError naming
    ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f'{what}: not within {timeout_s} s')
        time.sleep(poll_s)


def image_of(png: bytes):
    """A PNG screenshot as an RGB image (Pillow)."""
    from PIL import Image

    return Image.open(io.BytesIO(png)).convert('RGB')


def distinct_colours(png: bytes) -> int:
    """How many colours a screenshot has (a blank canvas has one)."""
    return len(image_of(png).getcolors(maxcolors=1 << 20) or ())


def changed_share(first: bytes, second: bytes) -> float:
    """Share of the pixels that differ between two screenshots of one size."""
    from PIL import ImageChops

    difference = ImageChops.difference(image_of(first), image_of(second)).convert('L')
    histogram = difference.histogram()
    total = sum(histogram)
    return (total - histogram[0]) / total if total else 0.0
