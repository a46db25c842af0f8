"""The planner in CPython: which variant covers what, forced variants, launch geometry."""
import pytest

from app.caps import DeviceCaps
from app.errors import ConvTransposeError
from app.launch import grid
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
    geom = infer((1, 1, 300, 300), (1, 1, 2, 2), attributes={"strides": [2, 2]})
    small = DeviceCaps(limits={"maxComputeWorkgroupsPerDimension": 1000})
    d = plan(geom, small).dispatches[0]
    assert d.workgroups[0] <= 1000 and d.workgroups[0] * d.workgroups[1] * 64 >= geom.y_size
