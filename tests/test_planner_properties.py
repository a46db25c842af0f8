"""Property-based checks of the planner (hypothesis): for random valid requests the chosen variant is one of
the candidates and covers the request, a forced variant is refused exactly when it does not cover it, and
every launch fits the device's dispatch limits."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest

from app.caps import DeviceCaps
from app.errors import ConvTransposeError
from app.planner import candidates, plan
from app.shapes import infer
from app.variants import VARIANTS

DEVICES = [
    DeviceCaps(),  # WebGPU's default limits, no optional features
    DeviceCaps(features=frozenset({"subgroups", "timestamp-query"}),
               limits={"maxComputeWorkgroupStorageSize": 32768, "maxComputeInvocationsPerWorkgroup": 256}),
    DeviceCaps(features=frozenset({"shader-f16", "subgroups", "chromium-experimental-subgroup-matrix"}),
               limits={"maxComputeWorkgroupStorageSize": 49152, "maxComputeInvocationsPerWorkgroup": 1024,
                       "maxComputeWorkgroupSizeX": 1024}),
]


@st.composite
def requests(draw):
    rank = draw(st.integers(1, 3))
    group = draw(st.sampled_from([1, 1, 2, 3, 4]))
    cpg = draw(st.integers(0 if draw(st.booleans()) and group == 1 else 1, 4))
    mpg = draw(st.integers(1, 4))
    batch = draw(st.integers(0, 2) if draw(st.integers(0, 9)) == 0 else st.integers(1, 2))
    spatial = [draw(st.integers(1, 9)) for _ in range(rank)]
    kernel = [draw(st.integers(1, 5)) for _ in range(rank)]
    strides = [draw(st.integers(1, 4)) for _ in range(rank)]
    dilations = [draw(st.sampled_from([1, 1, 2, 3])) for _ in range(rank)]
    attrs = {"group": group, "strides": strides, "dilations": dilations}
    mode = draw(st.sampled_from(["pads", "pads", "SAME_UPPER", "SAME_LOWER", "VALID", "output_shape"]))
    if mode == "pads":
        attrs["pads"] = [draw(st.integers(0, 2)) for _ in range(2 * rank)]
        attrs["output_padding"] = [draw(st.integers(0, max(s, d) - 1)) for s, d in zip(strides, dilations)]
    elif mode == "output_shape":
        attrs["output_shape"] = [max(1, s * i - draw(st.integers(-1, 2))) for s, i in zip(strides, spatial)]
    else:
        attrs["auto_pad"] = mode
    x = [batch, cpg * group, *spatial]
    w = [cpg * group, mpg, *kernel]
    b = [mpg * group] if draw(st.booleans()) else None
    try:
        return infer(x, w, b, attrs)
    except ConvTransposeError:
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(geom=requests().filter(lambda g: g is not None), device=st.sampled_from(DEVICES))
def test_chosen_variant_covers_and_forcing_follows_coverage(geom, device):
    chosen = plan(geom, device)
    assert VARIANTS[chosen.variant].why_not(geom, device) is None
    names = {c.variant for c, _ in candidates(geom, device)}  # the choice is a candidate, or a seed name of one
    assert chosen.variant in names or VARIANTS[chosen.variant].tuned_as in names
    for dispatch in chosen.dispatches + chosen.weight_passes:
        limit = device.limit("maxComputeWorkgroupsPerDimension")
        assert all(1 <= n <= limit for n in dispatch.workgroups)
    for name, variant in VARIANTS.items():
        if variant.why_not(geom, device) is None:
            assert plan(geom, device, name).variant == name
        else:
            with pytest.raises(ConvTransposeError, match="does not cover"):
                plan(geom, device, name)
