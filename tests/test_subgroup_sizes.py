"""Which reported subgroup sizes the planner builds on (app/caps.py usable_subgroup_sizes), in CPython.

Firefox on lavapipe reports subgroup sizes 4 and 128 (WebGPU's bounds, not the driver's 8) and offers no
`subgroups` feature: the planner must not build on that report. It uses a report only with the feature
and only when it is a valid pair; otherwise the subgroup-matrix variants plan for any size (a workgroup
width that is a multiple of 128)."""
import dataclasses

import pytest

from app.caps import DeviceCaps, usable_subgroup_sizes
from app.planner import plan
from app.shapes import infer
from app.variants import VARIANTS
from tests.test_gpu_caps import h200_caps

FIREFOX_LAVAPIPE = DeviceCaps(features=frozenset({"shader-f16", "timestamp-query"}), is_fallback=True,
                              limits={"maxComputeWorkgroupStorageSize": 32768}, subgroup_min_size=4,
                              subgroup_max_size=128)


@pytest.mark.parametrize("features, sizes, usable", [
    ({"shader-f16", "timestamp-query"}, (4, 128), None),  # Firefox on lavapipe: no subgroups feature
    ({"subgroups"}, (4, 4), (4, 4)),                       # SwiftShader in Chromium
    ({"subgroups"}, (32, 32), (32, 32)),                   # the H200 in Dawn
    ({"subgroups"}, (8, 64), (8, 64)),
    ({"subgroups"}, (0, 0), None),                         # not reported
    ({"subgroups"}, (4, 256), None),                       # past WebGPU's bound
    ({"subgroups"}, (2, 32), None),
    ({"subgroups"}, (12, 32), None),                       # not a power of two
    ({"subgroups"}, (64, 32), None),                       # min > max
])
def test_a_report_is_used_only_with_the_feature_and_when_valid(features, sizes, usable):
    caps = DeviceCaps(features=frozenset(features), subgroup_min_size=sizes[0], subgroup_max_size=sizes[1])
    assert usable_subgroup_sizes(caps) == usable


@pytest.mark.parametrize("x, w, attrs", [
    ([1, 16, 8, 8], [16, 16, 4, 4], {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ([1, 16, 6, 6], [16, 16, 3, 3], {"pads": [1, 1, 1, 1]}),
    ([1, 32, 64], [32, 16, 16], {"strides": [8], "pads": [4, 4]}),
    ([1, 16, 4, 4, 4], [16, 16, 1, 1, 1], {}),
])
def test_firefox_plans_do_not_depend_on_its_reported_sizes(x, w, attrs):
    """Whatever sizes lavapipe's adapter reports, every variant plans the same on it."""
    geom = infer(x, w, None, attrs)
    real = dataclasses.replace(FIREFOX_LAVAPIPE, subgroup_min_size=8, subgroup_max_size=8)
    assert plan(geom, FIREFOX_LAVAPIPE) == plan(geom, real)
    for name, variant in VARIANTS.items():
        assert variant.configured(geom, FIREFOX_LAVAPIPE) == variant.configured(geom, real), name


def test_subgroup_matrices_plan_for_any_size_when_the_report_is_unusable():
    geom = infer([1, 16, 4, 4, 4], [16, 16, 1, 1, 1], None, {}, {"x": "float16", "w": "float16"})
    reported = plan(geom, h200_caps(), "phase_gemm_sgmat").dispatches[0]
    assert reported.render_params["subgroup_size"] == 32
    for sizes in ((0, 0), (4, 256)):
        caps = h200_caps(subgroup_min_size=sizes[0], subgroup_max_size=sizes[1])
        dispatch = plan(geom, caps, "phase_gemm_sgmat").dispatches[0]
        assert dispatch.render_params["subgroup_size"] == 128
        width = dispatch.render_params["sg_m"] * dispatch.render_params["sg_n"] * dispatch.render_params["subgroup_size"]
        assert width % 128 == 0 and width <= caps.limit("maxComputeInvocationsPerWorkgroup")
