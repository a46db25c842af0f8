"""app/split.py in CPython: pieces that tile the output, each within the (lowered) limits, and assembled
piece by piece through the float64 reference they equal the whole request's reference."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import planner
from app.caps import DeviceCaps
from app.device import capped, check_limits
from app.errors import ConvTransposeError
from app.reference import conv_transpose_reference
from app.shapes import infer
from app.split import buffer_bytes, plan_pieces, run_pieces

from .async_helper import run_coroutine
from .test_planner_properties import requests

BYTES, BUFFER, GRID = "maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupsPerDimension"


class ReferenceGpu:
    """Runs each piece through the float64 reference instead of WebGPU: checks the slicing and pads alone."""

    def __init__(self, caps):
        self.caps, self.geoms, self.calls = caps, {}, 0

    def plan(self, geom, variant=None):
        plan = planner.plan(geom, self.caps, variant)
        self.geoms[id(plan)] = geom
        return plan

    async def execute(self, plan, geom, inputs):
        self.calls += 1
        assert geom == self.geoms[id(plan)]
        return conv_transpose_reference(geom, inputs["x"], inputs["w"], inputs.get("b")).astype(geom.dtype), 1.0


def run_split(geom, caps, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {"x": rng.standard_normal(geom.x_shape).astype(np.float32),
              "w": rng.standard_normal(geom.w_shape).astype(np.float32)}
    if geom.has_bias:
        arrays["b"] = rng.standard_normal(geom.out_channels).astype(np.float32)
    gpu = ReferenceGpu(caps)
    pieces = plan_pieces(geom, caps, gpu.plan)
    y, _ = run_coroutine(run_pieces(gpu, geom, arrays, pieces))
    want = conv_transpose_reference(geom, arrays["x"], arrays["w"], arrays.get("b"))
    return pieces, y, want


def assert_pieces_fit(pieces, caps):
    limit = min(caps.limit(BYTES), caps.limit(BUFFER))
    for piece, plan in pieces:
        for name, nbytes in buffer_bytes(piece.geom).items():
            assert nbytes <= limit, (name, nbytes, limit)
        for nbytes in {**plan.scratch, **plan.prepared}.values():
            assert nbytes <= limit
        for dispatch in plan.dispatches + plan.weight_passes:
            assert all(1 <= n <= caps.limit(GRID) for n in dispatch.workgroups)


def assert_tiles(pieces, geom):
    """Every output element belongs to exactly one piece."""
    covered = np.zeros(geom.y_shape, dtype=np.int32)
    for piece, _ in pieces:
        covered[piece.y_index(geom)] += 1
    assert (covered == 1).all()


def small_caps(nbytes=None, grid=None):
    limits = {}
    if nbytes:
        limits |= {BYTES: nbytes, BUFFER: nbytes}
    if grid:
        limits[GRID] = grid
    return capped(DeviceCaps(), check_limits(limits))


def test_a_request_that_fits_is_one_piece():
    geom = infer([1, 2, 4, 4], [2, 3, 3, 3], None, {"strides": [2, 2]})
    pieces, y, want = run_split(geom, DeviceCaps())
    assert len(pieces) == 1 and pieces[0][0].geom == geom
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x, w, b, attrs, nbytes, grid, axis", [
    # batch: each image's x and y fit, two do not
    ([4, 2, 5], [2, 3, 3], [3], {"strides": [2]}, 200, None, "images"),
    # groups: one group's weights fit, all do not
    ([1, 8, 3, 3], [8, 2, 2, 2], None, {"group": 4, "strides": [2, 2]}, 130, None, "groups"),
    # output channels of a dense weight: w [2, 16, 3] is 384 bytes
    ([1, 2, 4], [2, 16, 3], [16], {}, 100, None, "channels"),
    # output rows: one image's one channel of y does not fit
    ([1, 1, 6, 5], [1, 1, 3, 3], None, {"strides": [2, 2], "pads": [1, 0, 0, 1], "output_padding": [1, 0]},
     120, None, "rows"),
    # rows with dilation, negative pads (SAME with kernel < stride) and a 3D request
    ([1, 2, 5, 2, 2], [2, 1, 1, 2, 1], None, {"strides": [3, 1, 2], "auto_pad": "SAME_LOWER"}, 64, None, "rows"),
    ([1, 1, 7], [1, 1, 3], None, {"strides": [2], "dilations": [3], "output_shape": [20]}, 32, None, "rows"),
    # the dispatch grid: 8 workgroups per dimension fold to 64, past that the output splits
    ([1, 1, 300, 300], [1, 1, 2, 2], None, {"strides": [2, 2]}, None, 8, "rows"),
])
def test_split_pieces_fit_tile_and_match_the_whole(x, w, b, attrs, nbytes, grid, axis):
    geom = infer(x, w, b, attrs)
    caps = small_caps(nbytes, grid)
    pieces, y, want = run_split(geom, caps)
    assert len(pieces) > 1
    assert_pieces_fit(pieces, caps)
    assert_tiles(pieces, geom)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    whole = {"images": (0, geom.batch), "groups": (0, geom.group), "rows": (0, geom.out_spatial[0])}
    cut = [p for p, _ in pieces if (getattr(p, axis) != whole[axis] if axis in whole
                                    else p.channels != (0, geom.out_per_group))]
    assert cut, f"expected a cut along {axis}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(geom=requests().filter(lambda g: g is not None and g.y_size > 0),
       nbytes=st.sampled_from([64, 256, 1024]), grid=st.sampled_from([None, 3, 6]))
def test_random_requests_split_under_tiny_limits(geom, nbytes, grid):
    caps = small_caps(nbytes, grid)
    try:
        pieces, y, want = run_split(geom, caps)
    except ConvTransposeError as exc:
        assert "does not fit this device" in str(exc) or "pieces" in str(exc)
        return
    assert_pieces_fit(pieces, caps)
    assert_tiles(pieces, geom)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_what_no_split_can_fit_is_refused_before_any_gpu_work():
    # One input channel's weights for one output channel: 1 x 1 x 5 x 5 floats = 100 bytes > 64.
    geom = infer([1, 1, 2, 2], [1, 1, 5, 5], None, {})
    gpu = ReferenceGpu(small_caps(64))
    with pytest.raises(ConvTransposeError, match=r"does not fit this device even split.*'w' needs 100 bytes"):
        plan_pieces(geom, gpu.caps, gpu.plan)
    assert gpu.calls == 0


def test_piece_count_is_bounded():
    geom = infer([1, 1, 40000], [1, 1, 1], None, {})
    with pytest.raises(ConvTransposeError, match="more than 4096 pieces"):
        plan_pieces(geom, small_caps(16), lambda g: planner.plan(g, small_caps(16)))


@pytest.mark.parametrize("limits, words", [
    ({"maxComputeWorkgroupStorageSize": 100}, "cannot be capped"),
    ({BYTES: 8}, ">= 16"), ({GRID: 0}, ">= 1"), ({BYTES: "big"}, "integer"), ([1, 2], "object"),
])
def test_limit_caps_are_checked(limits, words):
    with pytest.raises(ConvTransposeError, match=words) as refused:
        check_limits(limits)
    assert refused.value.field == "limits"


def test_caps_only_lower():
    caps = capped(DeviceCaps(), {BYTES: 1 << 40, GRID: 7})
    assert caps.limit(BYTES) == 134217728 and caps.limit(GRID) == 7
