"""The Tests view, driven as a user would: pick a small case file, watch the progress, read the table and the
summary, filter failures. (The full test.json runs through the same code in tests/test_browser_cases.py.)"""
import copy
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser
TEST_JSON = Path(__file__).resolve().parent.parent / "test.json"
PICK = ["r1_basic", "r1_group2", "r1_output_shape_spatial", "r1_same_lower_odd_total"]


@pytest.fixture
def tests_view(page):
    page.click("nav a[data-view=tests]")
    page.wait_for_selector("#view-tests:not([hidden])")
    return page


def small_case_file(tmp_path) -> Path:
    doc = json.loads(TEST_JSON.read_text())
    by_name = {c["name"]: c for c in doc["cases"]}
    cases = [by_name[n] for n in PICK]
    cases.append(next(c for c in doc["cases"] if c.get("expected_error")))
    wrong = copy.deepcopy(by_name["r1_basic"])
    wrong["name"] = "deliberately_wrong_expected"
    wrong["expected"]["y"]["data"][0] += 1.0
    cases.insert(2, wrong)
    path = tmp_path / "small-cases.json"
    path.write_text(json.dumps({**doc, "cases": cases}))
    return path


def test_runs_a_picked_case_file_to_the_end(tests_view, tmp_path):
    page = tests_view
    # The page stays responsive while cases run: every case ends in a drawn frame, so the bar is seen at each step.
    # Frames (the first 2000, half a minute) are sampled in the page from before the pick: polled from here, a
    # fast run could end unseen.
    page.evaluate("""() => { const p = document.getElementById('tests-progress'); window.progressSeen = [];
                             const tick = () => { window.progressSeen.push([p.value, p.max]);
                                                  if (window.progressSeen.length < 2000) requestAnimationFrame(tick); };
                             requestAnimationFrame(tick); }""")
    page.set_input_files("#tests-file", str(small_case_file(tmp_path)))
    page.wait_for_function("/^(Done|Stopped)/.test(document.getElementById('tests-summary').textContent)")
    seen = {value for value, top in page.evaluate("window.progressSeen") if top == 6}
    assert set(range(1, 6)) <= seen, sorted(seen)
    summary = page.text_content("#tests-summary")
    assert summary.startswith("Done: 5 passed, 1 failed, 0 skipped of 6 cases"), summary
    rows = page.locator("#tests-table tbody tr")
    assert rows.count() == 6
    assert page.get_attribute("#tests-progress", "max") == "6" and page.evaluate(
        "document.getElementById('tests-progress').value") == 6
    failed = page.locator("#tests-table tbody tr.fail")
    assert failed.count() == 1 and "deliberately_wrong_expected" in failed.text_content()
    first = rows.nth(0).locator("td")
    assert first.nth(1).text_content() == "r1_basic" and first.nth(2).text_content() == "PASS"
    assert first.nth(3).text_content() not in ("", "-")  # the variant that ran
    assert float(first.nth(4).text_content()) < 1e-4  # max abs error

    page.check("#tests-failures-only")
    visible = [r for r in range(rows.count()) if rows.nth(r).is_visible()]
    assert len(visible) == 1 and "deliberately_wrong_expected" in rows.nth(visible[0]).text_content()
    page.uncheck("#tests-failures-only")
    assert all(rows.nth(r).is_visible() for r in range(rows.count()))


def test_a_malformed_case_file_is_reported(tests_view, tmp_path):
    page = tests_view
    path = tmp_path / "broken.json"
    path.write_text('{"cases": [{"name": "no_inputs"}]}')
    page.set_input_files("#tests-file", str(path))
    page.wait_for_function("document.getElementById('tests-summary').className === 'error'")
    assert "'inputs' must hold x, w" in page.text_content("#tests-summary")


def test_run_test_json_then_stop(tests_view):
    """The Run button fetches the whole test.json (15 MB); Stop ends the run after the case in flight."""
    page = tests_view
    page.click("#tests-run")
    page.wait_for_function("document.getElementById('tests-progress').value >= 3")
    page.click("#tests-stop")
    page.wait_for_function("/^(Done|Stopped)/.test(document.getElementById('tests-summary').textContent)")
    summary = page.text_content("#tests-summary")
    total = len(json.loads(TEST_JSON.read_text())["cases"])
    assert summary.startswith("Stopped:") and f"of {total} cases" in summary, summary
    done = page.locator("#tests-table tbody tr").count()
    assert 3 <= done < total and f"({done} run)" in summary
    assert not page.is_disabled("#tests-run") and page.is_disabled("#tests-stop")
