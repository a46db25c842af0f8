"""The Benchmarks view, driven as a user would: run one bench.json case, read the table and the chart."""
import pytest

pytestmark = pytest.mark.browser


def test_runs_one_bench_case(page):
    page.click("nav a[data-view=bench]")
    page.wait_for_selector("#view-bench:not([hidden])")
    if page.input_value("#bench-tier") != "small":  # a real GPU defaults to the full tier
        page.select_option("#bench-tier", "small")
    page.fill("#bench-runs", "2")
    row = page.locator("#bench-table tbody tr[data-case=dcgan_g3_k4s2p1]").first
    row.locator("button.bench-one").click()
    page.wait_for_function("/^Done/.test(document.getElementById('bench-status').textContent)", timeout=300_000)

    rows = page.locator("#bench-table tbody tr[data-case=dcgan_g3_k4s2p1]")
    ours = rows.nth(0).locator("td")
    assert ours.nth(0).text_content().startswith("dcgan_g3_k4s2p1x[1,32,8,8] w[32,16,4,4] strides=2,2")
    assert ours.nth(1).text_content() == "ours (WebGPU, Pyodide)"
    assert "nchw2d_phase_gemm_tiled" in ours.nth(2).text_content()  # the planner's choice for this case
    median, minimum = float(ours.nth(3).text_content()), float(ours.nth(4).text_content())
    assert 0 < minimum <= median

    ort_status = page.text_content("#bench-ort-status")
    if "not available" in ort_status:
        assert rows.count() == 1
    else:  # web/ort-bench.mjs is there: its rows sit under ours
        assert rows.count() >= 2 and "onnxruntime" in rows.nth(1).locator("td").nth(1).text_content()

    colours = page.evaluate("""() => {
        const c = document.getElementById('bench-chart');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const seen = new Set();
        for (let i = 0; i < d.length; i += 4) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
        return seen.size;
    }""")
    assert page.is_visible("#bench-chart") and colours > 3
    # Cases not run yet say so.
    assert "not run yet" in page.locator("#bench-table tbody tr[data-case=proj_1x1]").text_content()
