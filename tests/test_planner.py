"""The planner in CPython: which variant covers what, forced variants, launch geometry."""
import pytest

from app.caps import DeviceCaps
from app.errors import ConvTransposeError
from app.plan import grid
from app.planner import RULES, plan
from app.shapes import infer
from app.variants import VARIANTS


@pytest.mark.parametrize("x, w, name", [
    ((1, 2, 5), (2, 3, 3), "ncl1d_gather"),
    ((1, 2, 5, 5), (2, 3, 3, 3), "nchw2d_gather"),
    ((1, 2, 3, 3, 3), (2, 3, 2, 2, 2), "ncdhw3d_gather"),
])
def test_general_kernel_per_rank(x, w, name):
    assert plan(infer(x, w), DeviceCaps()).variant == name


def test_every_rule_names_a_variant():
    assert {name for name, _, _ in RULES} <= set(VARIANTS)


def test_forced_variant_must_cover_the_request():
    geom = infer((1, 2, 5, 5), (2, 3, 3, 3))
    assert plan(geom, DeviceCaps(), "nchw2d_gather").reason == "forced by the caller"
    with pytest.raises(ConvTransposeError, match="spatial axes is one of \\[1\\]"):
        plan(geom, DeviceCaps(), "ncl1d_gather")
    with pytest.raises(ConvTransposeError, match="unknown variant"):
        plan(geom, DeviceCaps(), "no_such_variant")


@pytest.mark.parametrize("count, limit", [(1, 65535), (65535, 65535), (65536, 65535), (10**6, 1000), (4, 2), (3, 2)])
def test_grid_covers_every_workgroup_within_limits(count, limit):
    gx, gy, gz = grid(count, limit)
    assert gx <= limit and gy <= limit and gz == 1
    assert gx * gy >= count and gx * (gy - 1) < count


def test_grid_refuses_what_cannot_fit():
    with pytest.raises(ConvTransposeError, match="dispatch grid"):
        grid(5, 2)


def test_dispatch_uses_the_device_limit():
    geom = infer((1, 1, 300, 300), (1, 1, 3, 3), attributes={"strides": [2, 2]})  # k3 s2: phases of unequal taps
    small = DeviceCaps(limits={"maxComputeWorkgroupsPerDimension": 1000})
    d = plan(geom, small).dispatches[0]
    assert d.workgroups[0] <= 1000 and d.workgroups[0] * d.workgroups[1] * 64 >= geom.y_size


@pytest.mark.parametrize("x, w, attributes, name", [
    # 3D and 1D depthwise upsamplers: the gather kernels ran them before the rank-generic grouped variant
    ((1, 64, 32, 32, 32), (64, 1, 3, 3, 3),
     {"group": 64, "strides": [2, 2, 2], "pads": [1] * 6, "output_padding": [1, 1, 1]}, "ncdhw3d_grouped_stride_phase"),
    ((1, 1024, 128), (1024, 1, 3), {"group": 1024, "strides": [2], "pads": [1, 1], "output_padding": [1]},
     "ncl1d_grouped_stride_phase"),
    ((1, 256, 128, 128), (256, 1, 4, 4), {"group": 256, "strides": [2, 2], "pads": [1] * 4},
     "nchw2d_grouped_stride_phase"),
    # 16 channels per group: blocks of 4 per invocation, under the seed's name for them (app/variants/seed.py)
    ((1, 512, 64, 64), (512, 16, 3, 3), {"group": 32, "strides": [2, 2], "pads": [1] * 4, "output_padding": [1, 1]},
     "nchw2d_grouped_stride_phase_blocked"),
    # 1D grouped with enough channels per group keeps the tiled 1D kernel; dilated, it cannot
    ((1, 64, 128), (64, 8, 4), {"group": 4, "strides": [2], "pads": [1, 1]}, "ncl1d_phase_tiled"),
    ((1, 64, 128), (64, 8, 4), {"group": 4, "strides": [2], "dilations": [2]}, "ncl1d_grouped_stride_phase"),
    # 3D grouped with many in-channels per group: no columns to write for a few out-channels per group
    ((1, 64, 8, 8, 8), (64, 4, 2, 2, 2), {"group": 2, "strides": [2, 2, 2]}, "ncdhw3d_grouped_stride_phase"),
])
def test_grouped_strided_requests_take_the_grouped_variant(x, w, attributes, name):
    assert plan(infer(x, w, attributes=attributes), DeviceCaps()).variant == name


def test_grouped_variant_needs_finite_data_and_a_stride():
    from dataclasses import replace

    geom = infer((1, 8, 16), (8, 1, 3), attributes={"group": 8, "strides": [2]})
    assert plan(replace(geom, finite_data=False), DeviceCaps()).variant == "ncl1d_gather"
    stride1 = infer((1, 8, 4, 4, 4), (8, 1, 3, 3, 3), attributes={"group": 8})
    assert plan(stride1, DeviceCaps()).variant != "ncdhw3d_grouped_stride_phase"


def test_grouped_launch_stores_wide_only_where_rows_stay_aligned():
    aligned = infer((1, 4, 16, 16), (4, 1, 4, 4), attributes={"group": 4, "strides": [2, 2], "pads": [1] * 4})
    odd = infer((1, 4, 9, 7), (4, 1, 4, 4), attributes={"group": 4, "strides": [2, 2], "pads": [1] * 4})
    wide, narrow = plan(aligned, DeviceCaps()), plan(odd, DeviceCaps())
    assert wide.tiles["vec"] == 4 and ["y", "read_write", "array<vec4<T>>"] in wide.dispatches[0].params["bindings"]
    assert narrow.tiles["vec"] == 2 and narrow.tiles["outs"] % 2 == 0  # 14 outputs per row: pairs, not quads
    stride3 = infer((1, 4, 5, 5), (4, 1, 3, 3), attributes={"group": 4, "strides": [3, 3]})
    assert plan(stride3, DeviceCaps()).tiles["outs"] % 3 == 0  # every invocation starts at the same phase


def test_grouped_variant_refuses_bodies_too_long_to_unroll():
    huge = infer((1, 4, 8, 8, 8), (4, 1, 15, 15, 15), attributes={"group": 4, "strides": [2, 2, 2]})
    assert "unrolled body" in VARIANTS["ncdhw3d_grouped_stride_phase"].why_not(huge, DeviceCaps())
    assert plan(huge, DeviceCaps()).variant == "ncdhw3d_gather"


def test_a_plan_carries_its_variants_finite_data_policy():
    # app/gpu.py reads the policy from the plan alone: which variants need finite data, and what to scan.
    grouped = infer((1, 4, 9, 9), (4, 1, 3, 3), attributes={"group": 4, "strides": [2, 2]})
    dense = infer((1, 8, 4, 4), (8, 8, 3, 3), attributes={"strides": [2, 2]})
    for geom, name, finite_only, scanned in [(grouped, "nchw2d_grouped_stride_phase", True, ("w",)),
                                             (dense, "nchw2d_phase_gemm_tiled", True, ("x", "w")),
                                             (dense, "nchw2d_gather", False, ())]:
        got = plan(geom, DeviceCaps(), name)
        assert (got.finite_only, got.scanned) == (finite_only, scanned), name
        assert got.finite_only == bool(VARIANTS[name].conditions.get("finite_data"))
