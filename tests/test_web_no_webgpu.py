"""Without WebGPU the app says so plainly on every view, still previews shapes, and never enables Run."""
import pytest

pytestmark = pytest.mark.browser


@pytest.fixture
def page_without_webgpu(page, app_url):
    context = page.context.browser.new_context()
    try:
        fresh = context.new_page()
        fresh.add_init_script("delete Navigator.prototype.gpu")
        fresh.set_default_timeout(180_000)
        fresh.goto(app_url)
        yield fresh
    finally:
        context.close()


def test_missing_webgpu_is_a_clear_message(page_without_webgpu):
    page = page_without_webgpu
    page.wait_for_selector("#device-panel.problem")
    assert page.text_content("#device") == "No WebGPU device"
    assert "has no WebGPU (navigator.gpu is missing)" in page.text_content("#device-details")
    page.wait_for_function("document.getElementById('status').textContent.startsWith('Failed:')")
    assert "navigator.gpu is missing" in page.text_content("#status")
    # Python still runs: the shape preview works, and no view can start GPU work.
    assert page.text_content("#shape-preview") == "Output shape: [1, 3, 10, 10]"
    assert page.is_disabled("#run") and page.is_disabled("#tests-run") and page.is_disabled("#bench-run-all")
    for view in ("tests", "bench"):
        page.click(f"nav a[data-view={view}]")
        assert page.is_visible("#device-panel.problem")
