"""Headless Firefox on WebGPU, driven by npm `puppeteer-core` through WebDriver BiDi (app/host/firefox_driver.mjs).

Debian's `firefox-esr` 153+ has WebGPU (140 refuses it); with no GPU it runs on Mesa's lavapipe Vulkan driver
(`mesa-vulkan-drivers`). Playwright's Firefox is a patched build that cannot be installed here, so a Node
child process drives the stock browser instead, and `FirefoxPage` offers the few Playwright page methods the
case runner and the view smoke tests use (evaluate, wait_for_function, click, fill, select_option,
set_checked, set_input_files, text_content).
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager

from ..contract import ROOT

FIREFOX = os.environ.get("FIREFOX", "/usr/bin/firefox-esr")
NODE = os.environ.get("NODE", "node")
DRIVER = ROOT / "app" / "host" / "firefox_driver.mjs"


class FirefoxPage:
    """A booted app page in Firefox; methods named and shaped like Playwright's Page."""

    def __init__(self, url: str):
        self._ids = itertools.count(1)
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.timeout_ms = 120_000
        self.proc = subprocess.Popen([NODE, str(DRIVER), url, FIREFOX], cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        hello = self._read()
        if not hello.get("ready"):
            self.close()
            raise RuntimeError(f"the app did not start in Firefox: {hello.get('error', hello)}")
        self.version = hello.get("version", "")

    def _read(self) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self._stderr.seek(0)
                tail = self._stderr.read()[-2000:]
                raise RuntimeError(f"the Firefox driver exited (status {self.proc.wait()}): {tail}")
            if line.startswith("{"):
                return json.loads(line)
            print(f"[firefox] {line.rstrip()}", file=sys.stderr, flush=True)

    def _call(self, method: str, *params):
        request_id = next(self._ids)
        self.proc.stdin.write(json.dumps({"id": request_id, "method": method, "params": list(params)}) + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        if reply.get("id") != request_id:
            raise RuntimeError(f"the Firefox driver answered out of order: {reply}")
        if "error" in reply:
            raise RuntimeError(f"Firefox: {reply['error']}")
        return reply["result"]

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
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextmanager
def app_page(url: str):
    """Opens the app page in headless Firefox and waits until Pyodide and the kernel are ready."""
    page = FirefoxPage(url)
    try:
        yield page
    finally:
        page.close()
