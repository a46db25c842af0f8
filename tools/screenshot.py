"""Serves the app, runs the default request in headless Chromium, checks it against the CPU reference
and saves a screenshot: `python tools/screenshot.py [docs/run-page.png]`."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.host.browser import app_page  # noqa: E402
from app.host.server import start_background  # noqa: E402

out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/run-page.png")
server, url = start_background()
with app_page(url, viewport=(1100, 1000)) as page:
    page.click("#run")
    page.wait_for_function("document.getElementById('out-values').textContent !== '–'")
    page.click("#check")
    page.wait_for_function("document.getElementById('out-check').textContent !== '–'")
    print(page.text_content("#out-shape"), page.text_content("#out-variant"), page.text_content("#out-check"))
    page.screenshot(path=str(out), full_page=True)
server.shutdown()
print(f"saved {out}")
