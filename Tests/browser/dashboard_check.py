#!/usr/bin/env python3
"""Drives the coordinator's dashboard in headless Chromium, as a person would, and checks what it shows.

    dashboard_check.py --url http://127.0.0.1:PORT/ --dead-job ID [--paused-queue NAME] [--screenshot PATH]
                       [--timeout 60] [--chromium /usr/bin/chromium] [--chromedriver /usr/bin/chromedriver]

Steps, each printed as it passes: open the page; wait until it says it is live (#connection); read the rows
committed (#rows-committed) and wait until the number changes (an import runs meanwhile); find the dead job ID
in #dead-jobs, open its error history and check every attempt's message is shown; wait for the next snapshot and
check the history stayed open; click its Retry button and wait until the job has left #dead-jobs. With
--paused-queue (a queue paused and empty), find it in #queues marked paused, click its Resume button and wait until
it has left the table.

Exit 0 when every step passed; 1 naming the step that failed, with the page's text and the browser's console
(and the screenshot, if asked for, of the page as it was); 2 when the browser cannot be started. --timeout is
for the whole check. Needs `selenium` (Tests/browser/requirements.txt) and Debian's chromium and chromium-driver.
"""
import argparse
import os
import re
import sys
import time

try:
    from selenium import webdriver
    from selenium.common.exceptions import (NoSuchElementException, StaleElementReferenceException,
                                            TimeoutException, WebDriverException)
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    print("dashboard check: the selenium package is missing: python3 -m pip install -r Tests/browser/requirements.txt",
          file=sys.stderr)
    sys.exit(2)


class Failure(Exception):
    """A step that did not pass: its message names what was not seen."""


class Check:
    def __init__(self, driver, timeout):
        self.driver = driver
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout

    def wait(self, what, condition):
        """condition's first truthy result, or Failure("... not seen: what") when the check's time runs out."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise Failure(f"the check's {self.timeout:g} s ran out before: {what}")
        waiter = WebDriverWait(self.driver, remaining, poll_frequency=0.2,
                               ignored_exceptions=(NoSuchElementException, StaleElementReferenceException))
        try:
            return waiter.until(condition)
        except TimeoutException:
            raise Failure(f"not seen within the check's {self.timeout:g} s: {what}") from None

    def text(self, css):
        """The text of the first element matching css, or None."""
        found = self.driver.find_elements(By.CSS_SELECTOR, css)
        return found[0].text if found else None


def number(text):
    """'1,234,567' (any thousands separator) -> 1234567; None when text is no integer."""
    if text is None:
        return None
    digits = re.sub(r"[\s,.'\u00a0\u202f\u2009]", "", text)
    return int(digits) if digits.isdigit() else None


def error_message(check):
    """The text of an error the page shows in its message area, or None."""
    return check.text("#messages .message.error .text")


def resume_queue(check, name):
    """The paused, empty queue `name` is listed as paused; its Resume button resumes it, and it leaves #queues."""
    row_css = f'#queues tr[data-queue="{name}"]'
    check.wait(f"queue {name} in the queues table marked paused, with a Resume button ({row_css})",
               lambda d: d.find_elements(By.CSS_SELECTOR, f"{row_css} button.resume")
               and "(paused)" in d.find_element(By.CSS_SELECTOR, f"{row_css} td").text)
    click_until_gone(check, row_css, "button.resume", f"Resume on queue {name}",
                     f"queue {name} leaving the queues table (served and empty)", f"resuming queue {name}")
    print(f"queue {name} resumed: no longer listed")


def click_until_gone(check, row_css, button_css, clicked, gone, action):
    """Clicks the row's button and waits until the row has left its table; a Failure naming `action` when the page
    shows an error or asks for a token instead. Returns when it clicked (time.monotonic())."""
    driver = check.driver
    stale_error = error_message(check)
    button = driver.find_element(By.CSS_SELECTOR, f"{row_css} {button_css}")
    # Into the middle of the window, as a user scrolls to it: WebDriver's own scrolling can leave it under the
    # page's sticky header, which would take the click.
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()
    at = time.monotonic()
    print(f"clicked {clicked}")

    def gone_or_refused(d):
        if not d.find_elements(By.CSS_SELECTOR, row_css):
            return "gone"
        message = error_message(check)
        if message and message != stale_error:
            return "error: " + message
        if d.find_element(By.ID, "token-form").is_displayed():
            return "token"
        return None

    outcome = check.wait(f"{gone} after the click", gone_or_refused)
    if outcome == "token":
        raise Failure(f"{action} needs a token: the page asks for one (pass ?token=... in --url)")
    if outcome.startswith("error: "):
        raise Failure(f"{action} failed; the page says: {outcome[7:]}")
    return at


def run(check, url, job_id, paused_queue=None):
    driver = check.driver
    driver.get(url)
    print(f"opened {url}")

    check.wait("the page saying it is connected (#connection containing \"live\")",
               lambda d: "live" in d.find_element(By.ID, "connection").text)
    print(f"connected: #connection says {check.text('#connection')!r}")

    first_text = check.wait("a number in the rows committed (#rows-committed)",
                            lambda d: (lambda t: t if number(t) is not None else None)(check.text("#rows-committed")))
    first = number(first_text)
    print(f"rows committed {first_text}, waiting for it to change")
    last_text = check.wait(f"the rows committed (#rows-committed) changing from {first_text}",
                           lambda d: (lambda t: t if number(t) not in (None, first) else None)(
                               check.text("#rows-committed")))
    print(f"rows committed {first_text} -> {last_text}")

    row_css = f'#dead-jobs tr[data-job-id="{job_id}"]'
    row = check.wait(f"dead job {job_id} in the dead jobs table ({row_css})",
                     lambda d: d.find_element(By.CSS_SELECTOR, row_css))
    print(f"dead job {job_id} listed: {' | '.join(cell.text for cell in row.find_elements(By.TAG_NAME, 'td'))}")

    history = row.find_element(By.CSS_SELECTOR, "details.history")
    if history.get_attribute("open") is None:
        history.find_element(By.TAG_NAME, "summary").click()
    attempts_css = f"{row_css} details.history li"
    attempts = check.wait(f"dead job {job_id}'s error history, every attempt with its message ({attempts_css})",
                          lambda d: (lambda items: items if items and all(
                              item.is_displayed() and item.find_element(By.CSS_SELECTOR, ".error-text").text.strip()
                              for item in items) else None)(d.find_elements(By.CSS_SELECTOR, attempts_css)))
    print(f"error history of job {job_id} shown, {len(attempts)} attempt(s):")
    for item in attempts:
        when = item.find_element(By.CSS_SELECTOR, ".when").text
        message = item.find_element(By.CSS_SELECTOR, ".error-text").text
        print(f"  {when}: {message}")

    updated = check.text("#updated")
    check.wait(f"the next snapshot (the update time #updated changing from {updated})",
               lambda d: check.text("#updated") != updated)
    check.wait(f"dead job {job_id}'s error history still open after the next snapshot",
               lambda d: d.find_element(By.CSS_SELECTOR, f"{row_css} details.history").get_attribute("open")
               is not None and d.find_element(By.CSS_SELECTOR, attempts_css).is_displayed())
    print(f"error history still open after the next snapshot (updated {updated} -> {check.text('#updated')})")

    clicked = click_until_gone(check, row_css, "button.retry", f"Retry on job {job_id}",
                               f"dead job {job_id} leaving the dead jobs table", f"retrying job {job_id}")
    where = ("queued" if driver.find_elements(By.CSS_SELECTOR, f'#queued-jobs tr[data-job-id="{job_id}"]')
             else "running" if driver.find_elements(By.CSS_SELECTOR, f'#running-jobs tr[data-job-id="{job_id}"]')
             else "neither queued nor running (done)")
    print(f"job {job_id} left the dead jobs {time.monotonic() - clicked:.1f} s after Retry; it is now {where}")

    if paused_queue:
        resume_queue(check, paused_queue)

    errors = [entry["message"] for entry in browser_log(driver) if "Uncaught" in entry.get("message", "")]
    if errors:
        raise Failure("the page's script threw: " + "; ".join(errors))


def browser_log(driver):
    try:
        return driver.get_log("browser")
    except WebDriverException:
        return []


def screenshot(driver, path):
    """The whole page, not only the window: the window is made as tall as the page first."""
    height, chrome = driver.execute_script(
        "return [Math.max(document.documentElement.scrollHeight, 600), window.outerHeight - window.innerHeight]")
    driver.set_window_size(1400, min(int(height) + int(chrome), 8000))
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(path)
    print(f"screenshot: {path}")


def dump(driver):
    print("--- the page's text ---", file=sys.stderr)
    try:
        print(driver.find_element(By.TAG_NAME, "body").text[:20000], file=sys.stderr)
    except WebDriverException as error:
        print(f"(cannot read it: {error.msg})", file=sys.stderr)
    entries = browser_log(driver)
    if entries:
        print("--- the browser's console ---", file=sys.stderr)
        for entry in entries:
            print(f"{entry.get('level')}: {entry.get('message')}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the dashboard, e.g. http://127.0.0.1:8080/")
    parser.add_argument("--dead-job", required=True, type=int, help="the id of a dead job to retry")
    parser.add_argument("--paused-queue", help="a paused queue with no jobs, to resume from the page")
    parser.add_argument("--screenshot", help="save a PNG of the page here at the end (also on failure)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds for the whole check (default 60)")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    parser.add_argument("--chromedriver", default=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    arguments = parser.parse_args()

    options = Options()
    options.binary_location = arguments.chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1400,1000", "--lang=en-US", "--no-first-run", "--disable-extensions"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not look for drivers or browsers online
    try:
        driver = webdriver.Chrome(service=Service(executable_path=arguments.chromedriver), options=options)
    except WebDriverException as error:
        print(f"dashboard check: cannot start Chromium ({arguments.chromium}) through {arguments.chromedriver}: "
              f"{error.msg}\n(apt-get install -y chromium chromium-driver)", file=sys.stderr)
        return 2
    try:
        run(Check(driver, arguments.timeout), arguments.url, arguments.dead_job, arguments.paused_queue)
        if arguments.screenshot:
            screenshot(driver, arguments.screenshot)
        print("dashboard check passed")
        return 0
    except (Failure, WebDriverException) as error:
        message = str(error) if isinstance(error, Failure) else f"the browser failed: {error.msg}"
        print(f"dashboard check FAILED: {message}", file=sys.stderr)
        dump(driver)
        if arguments.screenshot:
            try:
                screenshot(driver, arguments.screenshot)
            except WebDriverException:
                pass
        return 1
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
