"""The Run view, driven as a user would in headless Chromium: fill the form, run on WebGPU, read the result,
the heatmap, the download, the CPU check and the code it shows; errors appear next to their field."""
import io

import numpy as np
import pytest

from app.kernel import validate
from app.reference import conv_transpose_reference

from .browser_session import run_python

pytestmark = pytest.mark.browser


@pytest.fixture
def run_view(page):
    page.evaluate("location.hash = '#/run'")
    page.wait_for_selector("#view-run:not([hidden])")
    page.check("input[name=source][value=random]")
    page.select_option("[name=variant]", "")
    return page


def set_shapes(page, rank, x, w, bias=True, **axes):
    # Choosing a rank resets the shapes and rebuilds the per-axis attribute fields (passing through another
    # rank first clears what an earlier test typed).
    page.select_option("[name=rank]", str(rank % 3 + 1))
    page.select_option("[name=rank]", str(rank))
    page.fill("[name=x_shape]", x)
    page.fill("[name=w_shape]", w)
    page.set_checked("[name=use_bias]", bias)
    for name, values in axes.items():
        for i, v in enumerate(values):
            page.fill(f"[name=attr_{name}_{i}]", str(v))


def run(page) -> None:
    before = int(page.get_attribute("#result", "data-runs") or 0)
    page.click("#run")
    page.wait_for_function(f"Number(document.getElementById('result').dataset.runs || 0) > {before}")


def download_y(page) -> np.ndarray:
    with page.expect_download() as info:
        page.click("#download")
    return np.load(io.BytesIO(open(info.value.path(), "rb").read()), allow_pickle=False)


def canvas_colours(page) -> int:
    return page.evaluate("""() => {
        const c = document.getElementById('out-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const seen = new Set();
        for (let i = 0; i < d.length; i += 4) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
        return seen.size;
    }""")


def seeded(seed, shapes):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]


def error_for(page, field):
    return page.text_content(f"[data-error-for={field}]")


def test_2d_run_shows_result_heatmap_check_and_download(run_view):
    page = run_view
    set_shapes(page, 2, "1, 2, 6, 5", "2, 3, 3, 3", strides=[2, 2], pads=[1, 1, 1, 0])
    page.fill("[name=seed]", "7")
    assert page.text_content("#shape-preview") == "Output shape: [1, 3, 11, 10]"
    run(page)
    assert page.text_content("#out-shape") == "[1, 3, 11, 10] float32"
    assert page.text_content("#out-variant")  # the planner's choice and its reason are shown
    assert page.text_content("#out-reason") not in ("", "–")
    assert "ms" in page.text_content("#out-time") or "n/a" in page.text_content("#out-time")
    assert page.text_content("#out-adapter") not in ("", "–")
    assert canvas_colours(page) > 20  # a heatmap, not a blank or uniform canvas
    assert page.text_content("#plot-legend").startswith("y[0, 0, :, :]")

    x, w, b = seeded(7, [(1, 2, 6, 5), (2, 3, 3, 3), (3,)])
    attrs = {"strides": [2, 2], "pads": [1, 1, 1, 0]}
    want = conv_transpose_reference(validate(x, w, b, **attrs)[0], x, w, b)
    y = download_y(page)
    assert y.shape == (1, 3, 11, 10) and y.dtype == np.float32
    np.testing.assert_allclose(y, want, atol=1e-5, rtol=1e-4)

    page.click("#check")
    check = page.text_content("#out-check")
    assert check.startswith("✓ max abs error") and "max rel error" in check

    # The channel slider shows another slice.
    page.fill("[name=plot_c]", "2")
    page.dispatch_event("[name=plot_c]", "input")
    assert page.text_content("#plot-legend").startswith("y[0, 2, :, :]")


def test_python_code_shown_reproduces_the_run(run_view):
    page = run_view
    set_shapes(page, 1, "1, 3, 9", "3, 2, 4", strides=[3], pads=[1, 2])
    page.fill("[name=seed]", "11")
    run(page)
    shown = download_y(page)
    code = page.text_content("#code-py")
    assert "np.random.default_rng(11)" in code and "strides=[3]" in code and "pads=[1, 2]" in code
    out = run_python(page, code + "\ny.ravel().tolist()")
    np.testing.assert_array_equal(np.array(out, np.float32).reshape(shown.shape), shown)
    js = page.text_content("#code-js")
    assert 'getKernel("webgpu-kernels/ai.onnx.ConvTranspose"' in js and "strides: [3]" in js


@pytest.mark.parametrize("field, action, words", [
    ("group", lambda p: p.fill("[name=attr_group]", "3"), "'group'"),
    ("strides", lambda p: p.fill("[name=attr_strides_1]", "0"), "'strides'"),
    ("pads", lambda p: p.fill("[name=attr_pads_0]", "9"), "<= 0"),
    ("output_padding", lambda p: p.fill("[name=attr_output_padding_0]", "1"), "'output_padding'"),
    ("x", lambda p: p.fill("[name=x_shape]", "1, 2"), "'x'"),
    ("w", lambda p: p.fill("[name=w_shape]", "5, 3, 3, 3"), "w.shape[0]"),
    ("kernel_shape", lambda p: p.fill("[name=attr_kernel_shape_0]", "2"), "'kernel_shape'"),
])
def test_validation_error_is_shown_next_to_its_field(run_view, field, action, words):
    page = run_view
    set_shapes(page, 2, "1, 2, 4, 4", "2, 3, 3, 3")
    assert page.text_content("#shape-preview") == "Output shape: [1, 3, 6, 6]"
    before = run_python(page, "import app; (await app.get_kernel('webgpu-kernels/ai.onnx.ConvTranspose')).device.gpu.executions")
    action(page)
    assert words in error_for(page, field)
    assert page.locator(f".field[data-field={field}]").get_attribute("class") == "field invalid"
    assert page.text_content("#shape-preview") == "Output shape: –"
    assert page.locator(".field.invalid").count() == 1  # only the field at fault is marked
    page.click("#run")
    after = run_python(page, "import app; (await app.get_kernel('webgpu-kernels/ai.onnx.ConvTranspose')).device.gpu.executions")
    assert after == before  # refused before any GPU work


def test_pasted_numbers_and_their_errors(run_view):
    page = run_view
    set_shapes(page, 1, "1, 1, 3", "1, 1, 2", bias=False)
    page.check("input[name=source][value=pasted]")
    page.fill("[name=x_data]", "1, 2, 3")
    page.fill("[name=w_data]", "[1 1]")
    run(page)
    assert page.text_content("#out-shape") == "[1, 1, 4] float32"
    assert page.text_content("#out-values") == "1.0000, 3.0000, 5.0000, 3.0000"
    assert canvas_colours(page) > 2  # the 1D line plot drew something on white

    page.fill("[name=x_data]", "1, 2")
    page.click("#run")
    assert "has 2 values but shape [1, 1, 3] needs 3" in error_for(page, "x_data")
    page.fill("[name=x_data]", "1, two, 3")
    page.click("#run")
    assert error_for(page, "x_data") == "'two' is not a number"


def test_npy_files_are_read_with_numpy(run_view, tmp_path):
    page = run_view
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 3, 4, 4))  # float64: converted to float32 in the page
    w = rng.standard_normal((2, 2, 2, 2, 2)).astype(np.float32)
    for name, arr in (("x", x), ("w", w)):
        np.save(tmp_path / f"{name}.npy", arr)
    (tmp_path / "bad.npy").write_text("not numpy")
    set_shapes(page, 2, "1, 2, 4, 4", "2, 3, 3, 3", bias=False)
    page.check("input[name=source][value=npy]")
    page.set_input_files("[name=x_file]", str(tmp_path / "bad.npy"))
    page.wait_for_function("document.querySelector('[data-error-for=x_data]').textContent !== ''")
    assert "not a .npy file" in error_for(page, "x_data")
    page.set_input_files("[name=x_file]", str(tmp_path / "x.npy"))
    page.wait_for_function("document.querySelector('[name=rank]').value === '3'")  # the rank follows the file
    page.set_input_files("[name=w_file]", str(tmp_path / "w.npy"))
    page.wait_for_function("document.querySelector('[name=w_shape]').value === '2, 2, 2, 2, 2'")
    assert "converted from float64 to float32" in page.text_content("[data-note-for=x]")
    page.fill("[name=attr_strides_0]", "2")
    page.fill("[name=attr_strides_1]", "2")
    page.fill("[name=attr_strides_2]", "2")
    run(page)
    y = download_y(page)
    x32 = x.astype(np.float32)
    want = conv_transpose_reference(validate(x32, w, strides=[2, 2, 2])[0], x32, w)
    np.testing.assert_allclose(y, want, atol=1e-5, rtol=1e-4)
    # 3D: a depth slider picks the slice of the heatmap.
    assert page.is_visible("#plot-d-label") and page.get_attribute("[name=plot_d]", "max") == "5"
    page.fill("[name=plot_d]", "4")
    page.dispatch_event("[name=plot_d]", "input")
    assert page.text_content("#plot-legend").startswith("y[0, 0, 4, :, :]")
    assert 'np.load("x.npy")' in page.text_content("#code-py")


def test_forced_variant_that_does_not_cover_is_refused_at_its_field(run_view):
    page = run_view
    set_shapes(page, 2, "1, 2, 4, 4", "2, 3, 3, 3")
    page.select_option("[name=variant]", "ncl1d_gather")
    page.click("#run")
    assert "ncl1d_gather" in error_for(page, "variant")
    page.select_option("[name=variant]", "nchw2d_gather")
    run(page)
    assert page.text_content("#out-variant") == "nchw2d_gather"
    assert 'variant="nchw2d_gather"' in page.text_content("#code-py")


def test_device_panel_names_the_adapter_and_features(run_view):
    page = run_view
    info = run_python(page, """
import app
from app.bridge import device_info
device_info(await app.get_kernel('webgpu-kernels/ai.onnx.ConvTranspose'))
""")
    summary = page.text_content("#device")
    assert info["vendor"] in summary and info["architecture"] in summary
    details = page.text_content("#device-details")
    for feature in ("timestamp-query", "shader-f16", "subgroups"):
        assert feature in details
    assert ("✓ yes" if "timestamp-query" in info["features"] else "✗ no") in details
    assert "maxComputeWorkgroupStorageSize" in details
    if info["is_fallback"]:
        assert "software fallback adapter" in details


def test_phone_width_has_no_horizontal_scroll(run_view):
    page = run_view
    try:
        page.set_viewport_size({"width": 390, "height": 844})
        page.evaluate("document.getElementById('device-panel').open = true")  # its tables too
        for view in ("run", "tests", "bench"):
            page.evaluate(f"location.hash = '#/{view}'")
            page.wait_for_selector(f"#view-{view}:not([hidden])")
            assert page.evaluate("document.documentElement.scrollWidth") <= 390, view
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})
        page.evaluate("location.hash = '#/run'; document.getElementById('device-panel').open = false")


def test_device_panel_shows_keys_it_does_not_know(run_view):
    """Keys added to bridge.device_info later (live GPU memory, say) appear without a page change."""
    page = run_view
    run_python(page, """
import app.bridge as bridge
bridge._plain_device_info = bridge.device_info
bridge.device_info = lambda kernel: bridge._plain_device_info(kernel) | {"gpu_bytes_in_use": 12345, "note": "x"}
""")
    try:
        page.evaluate("window.dispatchEvent(new Event('gpu-work'))")
        details = page.text_content("#device-details")
        assert "gpu_bytes_in_use12345 (12.1 KiB)" in details and "notex" in details
    finally:
        run_python(page, "import app.bridge as bridge; bridge.device_info = bridge._plain_device_info")
        page.evaluate("window.dispatchEvent(new Event('gpu-work'))")
    assert "gpu_bytes_in_use" not in page.text_content("#device-details")


def test_float16_npy_runs_or_is_refused_at_the_data(run_view, tmp_path):
    page = run_view
    x = np.linspace(-1, 1, 18, dtype=np.float16).reshape(1, 2, 9)
    w = np.linspace(-1, 1, 12, dtype=np.float16).reshape(2, 2, 3)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    set_shapes(page, 1, "1, 2, 9", "2, 2, 3", bias=False)
    page.check("input[name=source][value=npy]")
    page.set_input_files("[name=x_file]", str(tmp_path / "x.npy"))
    page.set_input_files("[name=w_file]", str(tmp_path / "w.npy"))
    page.wait_for_function("document.querySelector('[data-note-for=w]').textContent.includes('float16')")
    has_f16 = run_python(page, "import app; (await app.get_kernel('webgpu-kernels/ai.onnx.ConvTranspose')).device.caps.has('shader-f16')")
    if has_f16:
        run(page)
        assert page.text_content("#out-shape") == "[1, 2, 11] float16"
        y = download_y(page)
        want = conv_transpose_reference(validate(x.astype(np.float32), w.astype(np.float32))[0], x, w)
        np.testing.assert_allclose(y.astype(np.float64), want, atol=2e-3, rtol=2e-3)
    else:
        page.click("#run")
        assert "shader-f16" in error_for(page, "x_data")


def test_javascript_code_shown_reproduces_the_run(run_view):
    page = run_view
    set_shapes(page, 2, "1, 1, 2, 3", "1, 2, 2, 2", bias=True, strides=[2, 1], dilations=[1, 2])
    page.check("input[name=source][value=pasted]")
    page.fill("[name=x_data]", "1 2 3 4 5 6")
    page.fill("[name=w_data]", "1 0 -1 2 0.5 0.25 -2 3")
    page.fill("[name=b_data]", "0.5 -0.5")
    run(page)
    shown = download_y(page)
    js = page.text_content("#code-js")
    assert js.startswith('import { getKernel } from "webgpu-convtranspose";')  # the npm package's name
    # The snippet as a module would run it, with the import resolved to the same module.
    out = page.evaluate("""async (code) => {
        const { getKernel } = await import("/web/runtime/index.mjs");
        const body = code.split("\\n").slice(1).join("\\n");
        const run = new Function("getKernel", `return (async () => { ${body}\n return { data: Array.from(y.data), shape: y.shape }; })();`);
        return run(getKernel);
    }""", js)
    assert out["shape"] == list(shown.shape)
    np.testing.assert_array_equal(np.array(out["data"], np.float32).reshape(shown.shape), shown)
