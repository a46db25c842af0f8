"""A case file's own checks in CPython (app/cases.py): the nesting bound before json.loads, an `expected` that
cannot be y, the FAIL detail on values (worst entry, max error, tolerance), NaN and Inf, regular files only."""
import copy
import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from app import cases, store_entries
from app.kernel import validate
from app.reference import conv_transpose_reference
from tests.async_helper import run_coroutine

VALID = {"name": "ok", "attributes": {"strides": [2]},
         "inputs": {"x": {"dtype": "float32", "shape": [1, 1, 2], "data": [1.0, 2.0]},
                    "w": {"dtype": "float32", "shape": [1, 1, 2], "data": [1.0, 1.0]}},
         "expected": {"y": {"dtype": "float32", "shape": [1, 1, 4], "data": [1.0, 1.0, 2.0, 2.0]}},
         "tolerance": {"atol": 1e-4, "rtol": 1e-4}}


class ReferenceKernel:
    """The float64 reference as the kernel, `off` added at one entry; records whether it was called."""

    def __init__(self, off=None):
        self.off, self.called = off, False

    def pieces(self, geom, variant, params):
        return None

    async def call(self, geom, arrays, attributes, variant, pieces=None, params=None):
        self.called = True
        y = conv_transpose_reference(geom, arrays["x"], arrays["w"], arrays.get("b")).astype(np.float32)
        if self.off:
            index, value = self.off
            y[index] += value
        return {"y": y, "meta": {"variant": "reference"}}


def _run(case: dict, kernel=None) -> tuple[dict, ReferenceKernel]:
    kernel = kernel or ReferenceKernel()
    parsed = cases.parse_case_file(json.dumps({"cases": [case]}))[0]
    return run_coroutine(cases.run_case(kernel, parsed)), kernel


def test_a_file_nested_100000_deep_is_a_case_file_error_before_json_loads():
    with pytest.raises(cases.CaseFileError, match="nested 100002 brackets deep, past the limit of 64"):
        cases.parse_case_file('{"cases": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    with pytest.raises(cases.CaseFileError, match="nested 100000 brackets deep"):
        cases.parse_case_file('{"a": ' * 100_000 + "1" + "}" * 100_000)
    # brackets inside strings are text, not nesting
    deep_name = dict(VALID, name="[" * 10_000 + '\\"{')
    assert cases.parse_case_file(json.dumps({"cases": [deep_name]}))[0]["name"] == deep_name["name"]


json_texts = st.recursive(
    st.none() | st.integers() | st.text(alphabet='[]{}"\\ab,:', max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet='[]{}"\\a', max_size=4), inner,
                                                                 max_size=3),
    max_leaves=30).map(json.dumps)


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(text=json_texts)
def test_nesting_is_the_depth_of_what_json_loads_makes(text):
    """The bound app/cases.py and app/store_entries.py check before json.loads, against the parsed value's depth."""
    assert store_entries.nesting(text) == _depth(json.loads(text))


@pytest.mark.parametrize("data, shape, words", [
    ([1.0, 1.0, 2.0], [1, 1, 4], "expected y: data has 3 values, its shape [1, 1, 4] needs 4"),
    ([1.0, 1.0, 2.0, 2.0, 5.0], [1, 1, 4], "data has 5 values"),
    ([1.0, None, 2.0, 2.0], [1, 1, 4], "must be a flat list of numbers, found None"),
    ([1.0, "1", 2.0, 2.0], [1, 1, 4], "found '1'"),
    ([1.0, True, 2.0, 2.0], [1, 1, 4], "found True"),
    ([1.0, 1.0, 2.0, 10**400], [1, 1, 4], "not float64 numbers"),
    ([1.0, 1.0, 2.0, 2.0], [1, 1, -4], "shape must be a list of non-negative integers"),
    ([1.0, 1.0, 2.0, 2.0], "1x4", "shape must be a list"),
])
def test_an_expected_that_cannot_be_y_fails_with_the_reason_before_the_kernel_runs(data, shape, words):
    case = copy.deepcopy(VALID)
    case["expected"]["y"].update(data=data, shape=shape)
    result, kernel = _run(case)
    assert result["status"] == "FAIL" and words in result["detail"], result
    assert not kernel.called


def test_a_fail_on_values_says_where_the_max_error_and_the_tolerance():
    result, _ = _run(VALID, ReferenceKernel(off=((0, 0, 2), 0.5)))
    assert result["status"] == "FAIL" and result["max_abs_err"] == 0.5
    assert result["detail"] == ("y[0, 0, 2] = 2.5, expected 2: error 0.5 > atol 0.0001 + rtol 0.0001 * |2| = "
                                "0.0003; max_abs_err 0.5, 1 of 4 values off")
    assert _run(VALID)[0] | {"ms": 0} == {"name": "ok", "status": "PASS", "variant": "reference", "max_abs_err": 0.0,
                                          "detail": "", "ms": 0}


def test_a_fail_names_the_worst_entry_not_the_first():
    got = np.array([[1.0, 2.0], [3.0, 4.0]])
    want = got.copy()
    want[0, 1] += 0.01
    want[1, 0] += 0.2
    ok, err, why = cases.check(got, want, 1e-3, 0)
    assert not ok and err == pytest.approx(0.2)
    assert why.startswith("y[1, 0] = 3, expected 3.2: error 0.2 > atol 0.001") and "2 of 4 values off" in why


SPECIAL = "NaNs must be in the same places, infinities equal"


@pytest.mark.parametrize("got, want, why", [
    ([np.nan, 1.0, np.inf, -np.inf], [np.nan, 1.0, np.inf, -np.inf], ""),
    ([1.0, 1.0, np.inf, -np.inf], [np.nan, 1.0, np.inf, -np.inf], f"y[0] = 1, expected nan ({SPECIAL})"),
    ([np.nan, np.nan, np.inf, -np.inf], [np.nan, 1.0, np.inf, -np.inf], f"y[1] = nan, expected 1 ({SPECIAL})"),
    ([np.nan, 1.0, -np.inf, -np.inf], [np.nan, 1.0, np.inf, -np.inf], f"y[2] = -inf, expected inf ({SPECIAL})"),
    ([np.nan, 1.0, 1e30, -np.inf], [np.nan, 1.0, np.inf, -np.inf], f"y[2] = 1e+30, expected inf ({SPECIAL})"),
    ([np.nan, 1.0, np.inf, np.inf], [np.nan, 1.0, np.inf, 5.0], "y[3] = inf, expected 5: error inf > atol"),
])
def test_nan_in_the_same_places_and_infinities_equal(got, want, why):
    got, want = np.array(got, np.float32), np.array(want)
    assert cases.check(got, want, 1e-4, 1e-4)[0] is (not why) and cases.compare(got, want, 1e-4, 1e-4)[0] is (not why)
    assert cases.check(got, want, 1e-4, 1e-4)[2].startswith(why)


def test_a_case_with_nan_and_inf_passes_where_the_kernel_gives_the_references_nans():
    case = copy.deepcopy(VALID)
    case["inputs"]["w"]["data"] = [math.nan, math.inf]
    geom, arrays = validate(**case["inputs"], **case["attributes"])
    want = conv_transpose_reference(geom, arrays["x"], arrays["w"])
    case["expected"]["y"]["data"] = want.ravel().tolist()  # NaN, Infinity: Python's json writes and reads them
    assert np.isnan(want).any() and np.isinf(want).any()
    assert _run(case)[0]["status"] == "PASS"


def test_a_shape_mismatch_says_both_shapes():
    case = copy.deepcopy(VALID)
    case["expected"]["y"].update(shape=[1, 2, 2])
    result, _ = _run(case)
    assert result["status"] == "FAIL" and result["detail"] == "y has shape [1, 1, 4], expected [1, 2, 2]"


def test_printable_escapes_what_a_terminal_would_obey():
    assert cases.printable("up0 décodeur 上") == "up0 décodeur 上"
    assert cases.printable("a\x1b[2Jb\r\n\t\x00\u202e\u2028\x7f") == r"a\x1b[2Jb\r\n\t\x00\u202e\u2028\x7f"


def test_only_regular_files_are_read_within_the_budget(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b"0123456789")
    assert cases.read_regular(path, 10) == b"0123456789"
    with pytest.raises(cases.FileRefused, match="the file is 10 bytes, past the budget of 9"):
        cases.read_regular(path, 9)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target, kind in ((fifo, "a FIFO"), ("/dev/zero", "a character device"), (tmp_path, "a directory")):
        with pytest.raises(cases.FileRefused, match=f"not a regular file \\({kind}\\)"):
            cases.read_regular(target, 10)
    with pytest.raises(cases.FileRefused, match="cannot read the file"):
        cases.read_regular(tmp_path / "missing", 10)
    (tmp_path / "link").symlink_to(path)  # a link to a regular file is read as the file
    assert cases.read_regular(tmp_path / "link", 10) == b"0123456789"
