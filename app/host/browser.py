"""Headless Chromium on WebGPU (SwiftShader when there is no GPU), driven by Playwright."""
from __future__ import annotations

import os
from contextlib import contextmanager

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--enable-unsafe-webgpu",  # WebGPU on CPU adapters is blocklisted otherwise
    "--enable-features=Vulkan",
    "--no-sandbox", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
BOOT_TIMEOUT_MS = 180_000


@contextmanager
def app_page(url: str, headless: bool = True, viewport=(1280, 900)):
    """Opens the app page and waits until Pyodide and the kernel are ready; yields the Playwright page."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=headless, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)
            page.wait_for_function("window.appReady !== undefined", timeout=BOOT_TIMEOUT_MS)
            try:
                page.evaluate("window.appReady")
            except Exception as exc:
                raise RuntimeError(f"the app did not start: {exc}; page errors: {errors}") from None
            yield page
        finally:
            browser.close()
