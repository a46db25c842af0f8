"""The Benchmarks view, driven as a user would: run one bench.json case, read the table and the chart."""
import pytest

from app.variants import VARIANTS
from tests.test_uniform_phase import bench_geometry
from tools.wgsl.credited import CHROMIUM_SWIFTSHADER

pytestmark = pytest.mark.browser


def covering_variant_named(text: str, caps) -> str | None:
    """The variant a bench row names (the longest name in it: a name may start another), if it covers the row's
    case on `caps`: whichever the planner chose, never asserted here (its cost model's or a measurement's)."""
    named = max((n for n in VARIANTS if n in text), key=len, default=None)
    geom = bench_geometry("small", "dcgan_g3_k4s2p1")
    return named if named is not None and VARIANTS[named].why_not(geom, caps) is None else None


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
    assert covering_variant_named(ours.nth(2).text_content(), CHROMIUM_SWIFTSHADER), ours.nth(2).text_content()
    median, minimum = float(ours.nth(3).text_content()), float(ours.nth(4).text_content())
    assert 0 < minimum <= median

    ort_status = page.text_content("#bench-ort-status")
    if "not available" in ort_status:
        assert rows.count() == 1
    else:  # web/views/ort-bench.mjs is there: its rows sit under ours
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


def test_tunes_the_cases_run_and_shows_what_it_picked(page):
    """After test_runs_one_bench_case: tuning takes the case that was run, checks every candidate against the
    float64 reference, shows the table and offers it as JSON."""
    page.click("nav a[data-view=bench]")
    page.wait_for_selector("#view-bench:not([hidden])")
    if page.locator("#bench-table tbody tr[data-case=dcgan_g3_k4s2p1] td").nth(3).text_content() in ("", "–"):
        test_runs_one_bench_case(page)
    page.click("#bench-tune")
    page.wait_for_function("/^Tuned|^Tuning failed/.test(document.getElementById('bench-tune-status').textContent)",
                           timeout=600_000)
    status = page.text_content("#bench-tune-status")
    assert status.startswith("Tuned 1 case(s)") and "every candidate matched the reference" in status, status
    rows = page.locator("#bench-tune-table tbody tr")
    assert rows.count() >= 1
    picked = rows.nth(0).locator("td")
    # Either a tuned entry for the case's class, or the statement that the defaults stay.
    assert "dcgan_g3_k4s2p1" in picked.nth(4).text_content() or "defaults" in picked.nth(2).text_content()
    link = page.locator("#bench-tune-download")
    assert link.is_visible() and link.get_attribute("download") == "google-swiftshader.json"
    # The table applies to this page's session: the kernel's planner reads it from now on. Then it is
    # taken out again, so that the tests after this one (same page) see the shipped tables only.
    assert page.evaluate("""async () => {
        const { bootApp } = await import("/web/runtime/index.mjs");
        const { pyodide } = await bootApp();
        return pyodide.runPython("from app import tuning_tables; tuning_tables.in_use().pop(0)['measured'][0]['case']");
    }""") == "small/dcgan_g3_k4s2p1/float32"  # the tuner names a measured layer tier/case/dtype


def test_a_new_tuning_table_replans_cached_signatures_without_release_caches(page):
    """The JS launch key carries the tuning tables' revision (`planning`): after one kernel's tuneBench
    applies a table, another kernel's cached signature goes back to Python, even with the executor's
    launches left in place (release_caches made a no-op here)."""
    out = page.evaluate("""async () => {
        const { bootApp, getKernel } = await import("/web/runtime/index.mjs");
        const { pyodide } = await bootApp();
        const ID = "webgpu-kernels/ai.onnx.ConvTranspose";
        const caller = await getKernel(ID, { version: 1 }), tuner = await getKernel(ID, { version: 1 });
        const request = { x: { data: new Float32Array(1 * 4 * 5 * 5).fill(0.5), shape: [1, 4, 5, 5] },
                          w: { data: new Float32Array(4 * 2 * 3 * 3).fill(0.25), shape: [4, 2, 3, 3] }, strides: [2, 2] };
        const profile = async () => { const p = {}; await caller(request, { profile: p }); return !!p.python; };
        const first = await profile(), repeat = await profile();
        const text = await (await fetch("/bench.json")).text();
        const index = tuner.loadBench(text, "small").findIndex((c) => c.name === "dcgan_g3_k4s2p1");
        pyodide.runPython("from app import gpu; gpu.Gpu._kept = gpu.Gpu.release_caches; gpu.Gpu.release_caches = lambda self: None");
        let tuned;
        try {
            tuned = await tuner.tuneBench(text, [index], { runs: 1 });
        } finally {
            pyodide.runPython("from app import gpu, tuning_tables; gpu.Gpu.release_caches = gpu.Gpu._kept; del gpu.Gpu._kept; " +
                              "tuning_tables.in_use().pop(0)");
        }
        const afterTuning = await profile(), settled = await profile();
        return { first, repeat, afterTuning, settled, planning: typeof tuned.planning };
    }""")
    assert out == {"first": True, "repeat": False, "afterTuning": True, "settled": False, "planning": "string"}, out
