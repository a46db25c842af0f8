"""Serves the app and screenshots its views in headless Chromium (SwiftShader here), after real work in each:
`python tools/screenshot.py [OUT_DIR]` writes OUT_DIR/run-page.png (a 2D run checked against the CPU
reference), run-page-phone.png (the same at phone width), tests-page.png (the first cases of test.json
run in the Tests view) and bench-page.png (three small bench.json cases in the Benchmarks view)."""
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.host.browser import app_page  # noqa: E402
from app.host.server import start_background  # noqa: E402

TEST_CASES = 24
BENCH_CASES = ("dcgan_g3_k4s2p1", "grouped_up_k4s2p1", "hifigan_k4s2p1_long")


def run_view(page, out: Path) -> None:
    page.evaluate("location.hash = '#/run'")
    page.fill("[name=x_shape]", "1, 4, 12, 12")
    page.fill("[name=w_shape]", "4, 3, 4, 4")
    for i, v in enumerate([2, 2]):
        page.fill(f"[name=attr_strides_{i}]", str(v))
    for i, v in enumerate([1, 1, 1, 1]):
        page.fill(f"[name=attr_pads_{i}]", str(v))
    page.click("#run")
    page.wait_for_function("Number(document.getElementById('result').dataset.runs || 0) > 0")
    page.click("#check")
    page.wait_for_function("document.getElementById('out-check').textContent !== '–'")
    print("run:", page.text_content("#out-shape"), page.text_content("#out-variant"), page.text_content("#out-check"))
    page.screenshot(path=str(out / "run-page.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(out / "run-page-phone.png"), full_page=False)
    page.set_viewport_size({"width": 1100, "height": 1000})


def tests_view(page, out: Path, tmp: Path) -> None:
    doc = json.loads((ROOT / "test.json").read_text())
    cases = tmp / "first-cases.json"
    cases.write_text(json.dumps({**doc, "cases": doc["cases"][:TEST_CASES]}))
    page.evaluate("location.hash = '#/tests'")
    page.set_input_files("#tests-file", str(cases))
    page.wait_for_function("/^(Done|Stopped)/.test(document.getElementById('tests-summary').textContent)",
                           timeout=600_000)
    print("tests:", page.text_content("#tests-summary"))
    page.screenshot(path=str(out / "tests-page.png"), full_page=True)


def bench_view(page, out: Path) -> None:
    page.evaluate("location.hash = '#/bench'")
    page.select_option("#bench-tier", "small")
    page.fill("#bench-runs", "3")
    for name in BENCH_CASES:
        page.locator(f"#bench-table tbody tr[data-case={name}] button.bench-one").click()
        page.wait_for_function("/^Done/.test(document.getElementById('bench-status').textContent)", timeout=600_000)
    print("bench:", page.text_content("#bench-ort-status"))
    page.screenshot(path=str(out / "bench-page.png"), full_page=True)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs")
    out.mkdir(parents=True, exist_ok=True)
    server, url = start_background()
    try:
        with app_page(url, viewport=(1100, 1000)) as page, tempfile.TemporaryDirectory() as tmp:
            page.set_default_timeout(120_000)
            run_view(page, out)
            tests_view(page, out, Path(tmp))
            bench_view(page, out)
    finally:
        server.shutdown()
    print(f"saved run-page.png, run-page-phone.png, tests-page.png, bench-page.png in {out}")


if __name__ == "__main__":
    main()
