"""Firefox (Debian's firefox-esr 153+, WebGPU on Mesa's lavapipe here), driven by puppeteer-core over WebDriver
BiDi (app/host/firefox.py): all of test.json through the case runner's machinery, float16 included where the
adapter offers shader-f16, then a smoke test of each view (Run, Tests, Benchmarks) in the same page."""
import json
from pathlib import Path

import pytest

from app.host.case_runner import run_on_page
from app.host.firefox import app_page
from tests.test_subgroup_sizes import FIREFOX_LAVAPIPE
from tests.test_web_bench import covering_variant_named
from tests.test_web_tests_view import small_case_file

pytestmark = pytest.mark.firefox
TEST_JSON = Path(__file__).resolve().parent.parent / "test.json"
KERNEL_ID = "webgpu-kernels/ai.onnx.ConvTranspose"


@pytest.fixture(scope="module")
def firefox(app_url):
    with app_page(app_url) as page:
        page.set_default_timeout(120_000)
        yield page


@pytest.fixture(scope="module")
def device(firefox):
    return firefox.evaluate(f"async () => (await window.getKernel({KERNEL_ID!r}, {{version: 1}})).device()")


def test_the_adapter_is_firefox_s(firefox, device):
    assert firefox.version.startswith("firefox/")
    assert int(firefox.version.split("/")[1].split(".")[0]) >= 153
    assert device["limits"]["maxComputeWorkgroupsPerDimension"] >= 65535


def test_all_of_test_json_passes(firefox, device):
    results = list(run_on_page(firefox, TEST_JSON.read_text()))
    assert len(results) == len(json.loads(TEST_JSON.read_text())["cases"])
    failed = [f"{r['name']} [{r['variant']}]: {r.get('detail', '')}" for r in results if r["status"] == "FAIL"]
    assert not failed, f"{len(failed)} failed in Firefox:\n" + "\n".join(failed[:20])
    skipped = [r for r in results if r["status"] == "SKIP"]
    if "shader-f16" in device["features"]:  # lavapipe offers it: float16 runs, nothing is skipped
        assert not skipped, skipped[:3]
    else:
        assert all("shader-f16" in r["detail"] for r in skipped)


def test_device_panel_names_the_adapter(firefox, device):
    label = firefox.text_content("#device")
    if not (device["vendor"] or device["architecture"] or device["device"] or device["description"]):
        assert label.startswith("Device: Firefox's WebGPU adapter (no vendor or name reported)"), label
    assert "unknown" not in label


def test_run_view(firefox):
    page = firefox
    page.evaluate("location.hash = '#/run'")
    page.wait_for_function("!document.getElementById('view-run').hidden")
    page.click("input[name=source][value=random]")
    page.select_option("[name=rank]", "1")
    page.select_option("[name=rank]", "2")
    page.fill("[name=x_shape]", "1, 2, 6, 5")
    page.fill("[name=w_shape]", "2, 3, 3, 3")
    page.set_checked("[name=use_bias]", True)
    for name, values in {"strides": [2, 2], "pads": [1, 1, 1, 0]}.items():
        for i, v in enumerate(values):
            page.fill(f"[name=attr_{name}_{i}]", str(v))
    page.fill("[name=seed]", "7")
    page.wait_for_function("document.getElementById('shape-preview').textContent === 'Output shape: [1, 3, 11, 10]'")
    before = int(page.evaluate("Number(document.getElementById('result').dataset.runs || 0)"))
    page.click("#run")
    page.wait_for_function(f"Number(document.getElementById('result').dataset.runs || 0) > {before}")
    assert page.text_content("#out-shape") == "[1, 3, 11, 10] float32"
    assert page.text_content("#out-variant") not in ("", "–")
    assert "(software fallback)" in page.text_content("#out-adapter") or page.text_content("#out-adapter") != "–"
    page.click("#check")
    page.wait_for_function("document.getElementById('out-check').textContent.startsWith('✓')")
    assert "max rel error" in page.text_content("#out-check")


def test_tests_view(firefox, tmp_path):
    page = firefox
    page.click("nav a[data-view=tests]")
    page.wait_for_function("!document.getElementById('view-tests').hidden")
    page.set_input_files("#tests-file", str(small_case_file(tmp_path)))
    page.wait_for_function("/^(Done|Stopped)/.test(document.getElementById('tests-summary').textContent)")
    summary = page.text_content("#tests-summary")
    assert summary.startswith("Done: 5 passed, 1 failed, 0 skipped of 6 cases"), summary
    assert page.evaluate("document.querySelectorAll('#tests-table tbody tr').length") == 6


def test_bench_view(firefox):
    page = firefox
    page.click("nav a[data-view=bench]")
    page.wait_for_function("!document.getElementById('view-bench').hidden")
    page.select_option("#bench-tier", "small")
    page.fill("#bench-runs", "2")
    page.click("#bench-table tbody tr[data-case=dcgan_g3_k4s2p1] button.bench-one")
    page.wait_for_function("/^Done/.test(document.getElementById('bench-status').textContent)", timeout=300_000)
    cells = page.evaluate("""() => [...document.querySelector('#bench-table tbody tr[data-case=dcgan_g3_k4s2p1]')
                                    .querySelectorAll('td')].map((td) => td.textContent)""")
    assert cells[1] == "ours (WebGPU, Pyodide)"
    assert covering_variant_named(cells[2], FIREFOX_LAVAPIPE), cells[2]  # whichever covering variant the planner chose
    median, minimum = float(cells[3]), float(cells[4])
    assert 0 < minimum <= median
