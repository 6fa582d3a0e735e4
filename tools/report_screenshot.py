"""Write the HTML report of a capture and take a screenshot of it in headless Chromium.

    python tools/report_screenshot.py [--out docs/report.png] [--select ROW] [--field KEY] [CAPTURE ...]

Uses Debian's ``chromium`` and ``chromium-driver`` (apt-get install chromium chromium-driver) through
selenium; nothing is downloaded. The README's screenshot is made with the defaults.
"""

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars"]
DEFAULT_CAPTURES = [os.path.join("captures", "netquake-session.pcap")]  # relative to ROOT: the page shows it


def missing_browser():
    """Why the browser cannot be started here, or None when it can."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return f"{path} is not installed (apt-get install chromium chromium-driver)"
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install selenium)"
    return None


def start_browser(profile, width=1400, height=1000):
    """Headless Chromium driven by the system chromedriver, with a fresh profile in ``profile``."""
    os.environ["SE_OFFLINE"] = "true"  # selenium-manager must never download a driver or a browser
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS + [f"--user-data-dir={profile}", f"--window-size={width},{height}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's console, for the tests
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


def open_report(driver, path, timeout=30):
    """Load a report and wait until its packet list is built."""
    from selenium.webdriver.support.ui import WebDriverWait
    driver.get("file://" + os.path.abspath(path))
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def screenshot(report, out, select=None, field=None, width=1400):
    """A full-page PNG of ``report``, with row ``select`` (0-based) picked in the panes and the field
    ``field`` (a key) in its tree."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    profile = tempfile.mkdtemp(prefix="dissect-chromium-")
    driver = start_browser(profile, width)
    try:
        open_report(driver, report)
        if select is not None:
            driver.find_element(By.CSS_SELECTOR, f'#list-rows .row[data-seq="{select}"]').click()
            WebDriverWait(driver, 10).until(
                lambda d: d.find_element(By.ID, "tree").get_attribute("data-seq") == str(select))
            if field:
                driver.find_element(By.CSS_SELECTOR, f'#tree .line[data-key="{field}"]').click()
        for _ in range(3):  # the panes take a share of the window's height: settle the page's
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(width, min(height + 20, 6000))
        driver.execute_script("window.scrollTo(0, 0)")
        time.sleep(0.3)
        driver.save_screenshot(out)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("captures", nargs="*", default=DEFAULT_CAPTURES)
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "report.png"))
    parser.add_argument("--html", help="keep the report here (default: a temporary file)")
    parser.add_argument("--select", type=int, default=1, help="row to pick in the panes (0-based)")
    parser.add_argument("--field", default="netquake.control.host_name", help="field to pick in its tree (a key)")
    args = parser.parse_args()
    why = missing_browser()
    if why:
        raise SystemExit(f"report_screenshot: {why}")
    sys.path.insert(0, ROOT)
    from dissect.render.html import write_report
    folder = tempfile.mkdtemp(prefix="dissect-report-")
    try:
        report = os.path.abspath(args.html) if args.html else os.path.join(folder, "report.html")
        out = os.path.abspath(args.out)
        captures = [os.path.abspath(path) for path in args.captures] if args.captures != DEFAULT_CAPTURES else \
            DEFAULT_CAPTURES
        os.chdir(ROOT)
        write_report(report, captures)
        screenshot(report, out, args.select, args.field)
        print(f"{out}: screenshot of {report}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
