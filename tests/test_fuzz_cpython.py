"""app/fuzz.py and hostile case files in CPython: the generator covers every attribute path, a wrong answer
comes back as a case file that parses and reproduces, and malformed case files or inputs are refused with
CaseFileError / ConvTransposeError, never another exception."""
import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import planner
from app.caps import DeviceCaps
from app.cases import CaseFileError, compare, parse_case_file
from app.errors import ConvTransposeError
from app.fuzz import case_file, random_request, run_fuzz
from app.kernel import validate
from app.reference import conv_transpose_reference

from .async_helper import run_coroutine


def test_generator_covers_every_attribute_path():
    seen = {"rank": set(), "auto_pad": set(), "group": set(), "keys": set(), "bias": set(), "full_output_shape": 0}
    for index in range(600):
        req = random_request(np.random.default_rng([1, index]))
        geom, _ = validate(req["x"], req["w"], req["b"], **req["attributes"])  # valid by construction
        seen["rank"].add(geom.rank)
        seen["auto_pad"].add(req["attributes"].get("auto_pad"))
        seen["group"].add("depthwise" if geom.group > 1 and geom.in_per_group == 1 else geom.group > 1)
        seen["keys"] |= set(req["attributes"])
        seen["bias"].add(req["b"] is not None)
        seen["full_output_shape"] += len(req["attributes"].get("output_shape", [])) == geom.rank + 2
        assert 0 < geom.y_size <= 3000
    assert seen["rank"] == {1, 2, 3}
    assert seen["auto_pad"] == {None, "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}
    assert seen["group"] == {False, True, "depthwise"} and seen["bias"] == {False, True}
    assert {"strides", "dilations", "pads", "output_padding", "output_shape", "group", "kernel_shape"} <= seen["keys"]
    assert seen["full_output_shape"] > 0


def test_generator_draws_only_output_shapes_onnxruntime_takes():
    """No spatial target past stride*I + (k-1)*dilation, and the full form's head is y's own N and M (app/shapes.py
    refuses the rest); the bound itself is drawn, as the edge it is."""
    drawn = at_bound = full = 0
    for index in range(600):
        req = random_request(np.random.default_rng([1, index]))
        output_shape = req["attributes"].get("output_shape")
        if output_shape is None:
            continue
        geom = req["geom"]
        drawn += 1
        if len(output_shape) == geom.rank + 2:
            full += 1
            assert output_shape[:2] == [geom.batch, geom.out_channels], (index, output_shape)
        bounds = [s * i + (k - 1) * d for s, i, k, d in zip(geom.strides, geom.in_spatial, geom.kernel, geom.dilations)]
        assert all(o <= b for o, b in zip(output_shape[-geom.rank:], bounds)), (index, output_shape, bounds)
        at_bound += output_shape[-geom.rank:] == bounds
    assert drawn > 50 and full > 0 and at_bound > 0, (drawn, full, at_bound)


def test_same_seed_same_requests():
    a = random_request(np.random.default_rng([5, 3]))
    b = random_request(np.random.default_rng([5, 3]))
    assert a["attributes"] == b["attributes"] and np.array_equal(a["x"], b["x"])


class ReferenceKernel:
    """A kernel answering from the float64 reference, wrong on purpose when `off` is set."""

    def __init__(self, off=0.0):
        self.off = off
        self.device = type("Gpu", (), {"caps": DeviceCaps()})()

    async def __call__(self, x, w, b=None, variant=None, **attributes):
        geom, _ = validate(x, w, b, **attributes)
        plan = planner.plan(geom, self.device.caps, variant)
        y = conv_transpose_reference(geom, x, w, b).astype(np.float32) + np.float32(self.off)
        return {"y": y, "meta": {"variant": plan.variant, "pieces": 1}}


def test_fuzz_passes_a_right_kernel_and_reports_a_wrong_one_as_reproducible_cases():
    good = run_coroutine(run_fuzz(ReferenceKernel(), seed=3, count=12))
    assert good["failures"] == [] and good["calls"] > 12
    bad = run_coroutine(run_fuzz(ReferenceKernel(off=1e-2), seed=3, count=12))
    assert len(bad["failures"]) == bad["calls"]
    doc = json.loads(json.dumps(case_file([f["case"] for f in bad["failures"]])))
    cases = parse_case_file(json.dumps(doc))
    for case in cases:
        geom, arrays = validate(**case["inputs"], **case["attributes"])
        want = np.asarray(case["expected"]["data"], np.float64).reshape(case["expected"]["shape"])
        got = conv_transpose_reference(geom, arrays["x"], arrays["w"], arrays.get("b"))
        assert compare(got, want, **case["tolerance"])[0]  # the file's expected y is the reference's


# ------------------------------------------------------------------------------------- hostile case files
VALID = {"op": "ai.onnx.ConvTranspose", "version": 1, "cases": [{
    "name": "ok", "attributes": {"strides": [2]},
    "inputs": {"x": {"dtype": "float32", "shape": [1, 1, 2], "data": [1.0, 2.0]},
               "w": {"dtype": "float32", "shape": [1, 1, 2], "data": [1.0, 1.0]}},
    "expected": {"y": {"dtype": "float32", "shape": [1, 1, 4], "data": [1.0, 1.0, 2.0, 2.0]}},
    "tolerance": {"atol": 1e-4, "rtol": 1e-4}}]}

# Paths into VALID["cases"][0] that a hostile file may replace.
FIELDS = [("name",), ("attributes",), ("attributes", "strides"), ("attributes", "group"), ("attributes", "auto_pad"),
          ("inputs",), ("inputs", "x"), ("inputs", "x", "shape"), ("inputs", "x", "data"), ("inputs", "x", "dtype"),
          ("inputs", "w", "shape"), ("inputs", "w", "data"), ("expected",), ("expected", "y", "data"),
          ("tolerance",), ("tolerance", "atol"), ("expected_error",)]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**64, 2**64) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


def _set(doc, path, value):
    node = doc["cases"][0]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


@settings(max_examples=500, deadline=None)
@given(path=st.sampled_from(FIELDS), value=json_values)
def test_hostile_case_files_are_refused_or_run_cleanly(path, value):
    doc = copy.deepcopy(VALID)
    _set(doc, path, value)
    try:
        cases = parse_case_file(json.dumps(doc))
    except CaseFileError:
        return
    for case in cases:
        try:
            validate(**case["inputs"], **case["attributes"])
        except ConvTransposeError:
            pass


@pytest.mark.parametrize("text, words", [
    ("[1, 2", "not JSON"), ("[]", "'cases' list"), ('{"cases": {}}', "'cases' list"),
    ('{"cases": [{"name": 1}]}', "string 'name'"),
    (json.dumps({"cases": [{**VALID["cases"][0], "tolerance": {"atol": float("inf")}}]}), "finite"),
    (json.dumps({"cases": [{**VALID["cases"][0], "tolerance": {"rtol": -1}}]}), ">= 0"),
    (json.dumps({"cases": [{**VALID["cases"][0], "tolerance": {"atol": True}}]}), "tolerance"),
    (json.dumps({"cases": [{**VALID["cases"][0], "attributes": {"x": 1}}]}), "not attributes"),
    (json.dumps({"cases": [{**VALID["cases"][0], "attributes": {"variant": "ncl1d_gather"}}]}), "not attributes"),
])
def test_malformed_case_files_name_the_problem(text, words):
    with pytest.raises(CaseFileError, match=words):
        parse_case_file(text)


def test_case_runner_refuses_a_malformed_file_before_starting_a_browser(tmp_path, capsys):
    from app.host.case_runner import main

    bad = tmp_path / "bad.json"
    bad.write_text('{"cases": [{"name": "a", "inputs": {"x": 1}}]}')
    assert main(str(bad)) == 2
    assert "'inputs' must hold x, w" in capsys.readouterr().err
    assert main(str(tmp_path / "missing.json")) == 2


@pytest.mark.parametrize("data", [[10**400, 1.0], [[1.0], [2.0]], [1.0, [2.0]], [{"a": 1}, 2.0], [None, 1.0],
                                  ["1", "2"], [True, 1.0]])
def test_hostile_data_is_a_clear_refusal(data):
    with pytest.raises(ConvTransposeError, match="'x'"):
        validate(x={"data": data, "shape": [1, 1, 2]}, w={"data": [1.0], "shape": [1, 1, 1]})
