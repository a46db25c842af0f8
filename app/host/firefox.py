"""Headless Firefox on WebGPU, driven by npm `puppeteer-core` through WebDriver BiDi (app/host/firefox_driver.mjs).

Debian's `firefox-esr` 153+ has WebGPU (140 refuses it); with no GPU it runs on Mesa's lavapipe Vulkan driver
(`mesa-vulkan-drivers`). Playwright's Firefox is a patched build that cannot be installed here, so a Node
child process drives the stock browser instead, and `FirefoxPage` offers the few Playwright page methods the
case runner and the view smoke tests use (evaluate, wait_for_function, click, fill, select_option,
set_checked, set_input_files, text_content).
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager

from ..contract import ROOT
from .child import JsonLinesChild

FIREFOX = os.environ.get("FIREFOX", "/usr/bin/firefox-esr")
DRIVER = ROOT / "app" / "host" / "firefox_driver.mjs"


class FirefoxPage:
    """A booted app page in Firefox; methods named and shaped like Playwright's Page."""

    def __init__(self, url: str):
        self.timeout_ms = 120_000
        self.child = JsonLinesChild([str(DRIVER), url, FIREFOX], "Firefox driver", cwd=ROOT)
        if not self.child.hello.get("ready"):
            self.close()
            raise RuntimeError(f"the app did not start in Firefox: {self.child.hello.get('error', self.child.hello)}")
        self.version = self.child.hello.get("version", "")

    def _call(self, method: str, *params):
        return self.child.call(method, *params)

    # --- the Playwright-shaped subset ---------------------------------------------------------------------
    def set_default_timeout(self, ms: int) -> None:
        self.timeout_ms = ms

    def evaluate(self, source: str, arg=None):
        return self._call("evaluate", source, arg)

    def wait_for_function(self, source: str, timeout: int | None = None) -> None:
        self._call("waitForFunction", source, timeout if timeout is not None else self.timeout_ms)

    def wait_for_selector(self, selector: str, timeout: int | None = None) -> None:
        self.wait_for_function(f"() => document.querySelector({json.dumps(selector)}) !== null", timeout)

    def click(self, selector: str) -> None:
        self._call("click", selector)

    def set_input_files(self, selector: str, path: str) -> None:
        self._call("uploadFile", selector, str(path))

    def fill(self, selector: str, value: str) -> None:
        """Sets an input's or select's value and fires input and change, as typing or choosing would."""
        self.evaluate("""([s, v]) => {
            const e = document.querySelector(s);
            if (!e) throw new Error(`no element matches ${s}`);
            e.value = v;
            e.dispatchEvent(new Event("input", { bubbles: true }));
            e.dispatchEvent(new Event("change", { bubbles: true }));
        }""", [selector, str(value)])

    select_option = fill

    def set_checked(self, selector: str, checked: bool) -> None:
        if bool(self.evaluate("(s) => document.querySelector(s).checked", selector)) != checked:
            self.click(selector)

    def text_content(self, selector: str) -> str | None:
        return self.evaluate("(s) => document.querySelector(s)?.textContent ?? null", selector)

    def close(self) -> None:
        self.child.close(timeout=30)


@contextmanager
def app_page(url: str):
    """Opens the app page in headless Firefox and waits until Pyodide and the kernel are ready."""
    page = FirefoxPage(url)
    try:
        yield page
    finally:
        page.close()
