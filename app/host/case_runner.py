"""Runs a case file on real WebGPU: in headless Chromium (default; Playwright), headless Firefox (puppeteer-core
over WebDriver BiDi) or in Node with Dawn. Pyodide loads once per run and the cases run one by one in it.

Output: one line per case (PASS, FAIL or SKIP, with the reason), then `N passed, N failed[, N skipped]`, which
always comes; exit 1 on any failure, 2 for a file refused before a host starts (not a regular file, past
CASE_FILE_BUDGET bytes, not UTF-8, or not the format: app/cases.py). A case the host fails on is its FAIL line
and the run goes on. Names and reasons come from the file: printed with control characters escaped."""
from __future__ import annotations

import sys
from contextlib import contextmanager

CASE_TIMEOUT_MS = 120_000
# test.json is 18 MB; the page holds the text and its parsed lists in a 4 GiB WebAssembly heap
CASE_FILE_BUDGET = 256 << 20

CALL_PYTHON = """async ([name, args]) => (await import("/web/runtime/index.mjs")).callPython(name, ...args)"""


def page_python(page):
    """call(name, *args): app.bridge.<name> in the page's Pyodide (web/runtime/python.mjs callPython), JSON in and out."""
    return lambda name, *args: page.evaluate(CALL_PYTHON, [name, list(args)])


class Cases:
    """The case API over any host's bridge call (the page's or the Node host's)."""

    def __init__(self, call):
        self.call = call

    def load(self, text: str) -> list[str]:
        return self.call("load_cases", text)

    def run(self, index: int, variant: str | None, params: dict | None = None):
        return self.call("run_case_at", index, variant, params)


def PageCases(page):  # noqa: N802 (reads as the class it makes)
    page.set_default_timeout(CASE_TIMEOUT_MS)
    return Cases(page_python(page))


def NodeCases(host):  # noqa: N802
    return Cases(host.py)


def run_cases(cases, text: str, variant: str | None = None, params: dict | None = None):
    """Yields one result dict per case of the case-file text; a case the host raises on (a page error, a
    Python exception the bridge does not turn into a result) is a FAIL with the error's first line."""
    for i, name in enumerate(cases.load(text)):
        try:
            result = cases.run(i, variant, params)
        except Exception as exc:  # noqa: BLE001 - Playwright's Error, the Node host's reply: the case's FAIL
            message = str(exc).strip()
            result = {"name": name, "status": "FAIL", "variant": variant or "-", "max_abs_err": None,
                      "detail": f"the host failed: {message.splitlines()[0] if message else type(exc).__name__}"}
        yield result


def run_on_page(page, text: str, variant: str | None = None):
    return run_cases(PageCases(page), text, variant)


BROWSERS = ("chromium", "firefox")


@contextmanager
def open_host(host: str, browser: str = "chromium"):
    if host == "node":
        from .node import NodeHost

        with NodeHost() as node:
            yield NodeCases(node)
        return
    if browser == "firefox":
        from .firefox import app_page
    else:
        from .browser import app_page
    from .server import start_background

    server, url = start_background()
    try:
        with app_page(url) as page:
            yield PageCases(page)
    finally:
        server.shutdown()


def format_line(result: dict) -> str:
    from ..cases import printable

    if result["status"] == "PASS" and result.get("max_abs_err") is not None:
        detail = f"max_abs_err={result['max_abs_err']:.3g}"
    else:
        detail = result.get("detail", "")
    return printable(f"{result['status']} {result['name']} [{result['variant']}] {detail}".rstrip())


def _summary(counts: dict) -> str:
    summary = f"{counts['PASS']} passed, {counts['FAIL']} failed"
    return summary + (f", {counts['SKIP']} skipped" if counts["SKIP"] else "")


def main(path: str, variant: str | None = None, host: str = "browser", browser: str = "chromium",
         params: dict | None = None) -> int:
    """variant: None (the planner's choice), a name, a comma-separated list or "all" (each forced in turn).
    browser: chromium or firefox (host "browser" only). params: tile params forced with the variant."""
    from ..cases import CaseFileError, FileRefused, parse_case_file, printable, read_regular

    if variant == "all":
        from ..variants import VARIANTS

        forced = list(VARIANTS)
    else:
        forced = variant.split(",") if variant else [None]
    total = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    try:
        try:  # a malformed file is reported here, before any browser starts
            text = read_regular(path, CASE_FILE_BUDGET).decode()
            parse_case_file(text)
        except (FileRefused, UnicodeDecodeError, CaseFileError) as exc:
            print(printable(f"{path}: {exc}"), file=sys.stderr)
            return 2
        with open_host(host, browser) as cases:
            for name in forced:
                counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
                for result in run_cases(cases, text, name, params):
                    counts[result["status"]] += 1
                    total[result["status"]] += 1
                    print(format_line(result), flush=True)
                if len(forced) > 1:
                    print(f"variant {name}: {_summary(counts)}", flush=True)
    finally:  # whatever stopped the run
        print(_summary(total), flush=True)
    return 1 if total["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
