"""bench.check: every bench row's y is compared with the float64 reference (all of it, or a sample at large
sizes), so a fast wrong kernel cannot win a benchmark."""
import numpy as np

from app import bench
from app.kernel import validate
from app.reference import conv_transpose_reference


def _request():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (1, 8, 6, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (8, 4, 4, 4)).astype(np.float32)
    geom, arrays = validate(x, w, strides=[2, 2], pads=[1, 1, 1, 1])
    return geom, arrays, conv_transpose_reference(geom, x, w).astype(np.float32)


def test_a_right_output_passes_and_a_wrong_tap_fails():
    geom, arrays, y = _request()
    assert bench.check(geom, arrays, y)["ok"]
    wrong = y.copy()
    wrong[0, 1, 5, 6] += 0.1  # what one wrong tap or channel does to an output
    result = bench.check(geom, arrays, wrong)
    assert not result["ok"] and result["checked"] == "all" and abs(result["max_abs_err"] - 0.1) < 1e-3


def test_large_requests_are_checked_at_sampled_points(monkeypatch):
    geom, arrays, y = _request()
    monkeypatch.setattr(bench, "FULL_CHECK_LIMIT", 0)
    result = bench.check(geom, arrays, y)
    assert result["ok"] and result["checked"] == f"{bench.SAMPLES} sampled"
    wrong = y.copy()
    wrong[-1, -1, -1, -1] = 7.0  # the last element is always among the samples
    assert not bench.check(geom, arrays, wrong)["ok"]


def test_tolerances_grow_with_the_reduction_and_are_looser_for_float16():
    small, large = bench.tolerance("float32", 9), bench.tolerance("float32", 16384)
    assert small["atol"] == 2e-6 * 9 and 0.03 < large["atol"] < 0.04
    assert bench.tolerance("float16", 16384)["atol"] > large["atol"]


def test_the_tolerance_counts_the_taps_of_one_stride_phase():
    istft = validate(np.zeros((1, 8, 5), np.float32), np.zeros((8, 1, 4096), np.float32), strides=[1024])[0]
    assert bench.reduction(istft) == 8 * 4
    dilated = validate(np.zeros((1, 3, 5, 5), np.float32), np.zeros((3, 2, 3, 4), np.float32), strides=[2, 4],
                       dilations=[2, 2])[0]
    assert bench.reduction(dilated) == 3 * 3 * 2  # s2 d2: every tap reaches; s4 d2: every other one
