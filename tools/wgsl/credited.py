"""The shaders other tests back-end compile on SwiftShader because they run them, computed in CPython (no GPU):
tools/wgsl/check.py `backend_plan` lets them stand in for the shaders of their structure, so the SwiftShader
pass does not compile those again (docs/testing.md).

Each crediting test file renders what it runs from the same lists as here (test.json, VARIANTS, TUNING_CASES)
and checks, after its run, that the pipelines its host compiled include every source it is credited with
(`uncompiled`, against app/bridge.py `recorded_compiles`): a test that stops compiling a shader fails there.

The devices are the SwiftShader adapters as the hosts report them (app/bridge.py report_device): they plan
differently, Chromium's matching the shipped SwiftShader tuning table (its device name is empty) and allowing
10 storage buffers, Node's (Dawn for Node, the SwiftShader pass's own Dawn) 12 and no table.
"""
from __future__ import annotations

import functools

from app import contract, planner, tuner
from app.bench import make_inputs
from app.caps import DEFAULT_LIMITS, DeviceCaps
from app.cases import parse_case_file
from app.contract import ROOT
from app.errors import ConvTransposeError
from app.kernel import validate
from app.plan import bindings_params
from app.render import NONFINITE_CHECK, render, source_digest
from app.split import plan_pieces
from app.variants import VARIANTS
from tools.wgsl.matrix import _check_workgroup

_CHECK_WORKGROUP = functools.cache(_check_workgroup)  # read from app/gpu.py's source

TEST_JSON = ROOT / "test.json"

_LIMITS = DEFAULT_LIMITS | {"maxBufferSize": 1 << 30, "maxStorageBufferBindingSize": 1 << 30,
                            "maxComputeWorkgroupStorageSize": 32768}
CHROMIUM_SWIFTSHADER = DeviceCaps(features=frozenset({"subgroups", "timestamp-query"}),
                                  limits=_LIMITS | {"maxStorageBuffersPerShaderStage": 10}, vendor="google",
                                  architecture="swiftshader", is_fallback=True, subgroup_min_size=4,
                                  subgroup_max_size=4)
NODE_SWIFTSHADER = DeviceCaps(features=frozenset({"subgroups", "timestamp-query"}),
                              limits=_LIMITS | {"maxStorageBuffersPerShaderStage": 12}, vendor="google",
                              architecture="swiftshader", device="swiftshader-device-subzero-",
                              description="SwiftShader driver 5.0.0", is_fallback=True, subgroup_min_size=4,
                              subgroup_max_size=4)

_FILL = {"distribution": "uniform", "low": -1.0, "high": 1.0, "seed": 3}
# tests/test_tuning_candidates.py tunes these in the page: odd sizes, so tile edges and tails are hit. Each names
# the variant whose grid it explores (the planner's choice is its cost model's, not fixed per shape).
TUNING_CASES = [
    {"name": "phase_gemm", "tier": "t", "x": [2, 12, 3, 3], "w": [12, 10, 3, 3], "bias": True,
     "attributes": {"strides": [2, 2], "pads": [1, 1, 0, 0]}, "fill": _FILL, "variant": "nchw2d_phase_gemm_tiled"},
    {"name": "stride1", "tier": "t", "x": [1, 10, 5, 4], "w": [10, 12, 3, 2], "bias": True,
     "attributes": {"pads": [1, 0, 0, 1]}, "fill": _FILL, "variant": "stride1_implicit_gemm"},
    {"name": "one_by_one", "tier": "t", "x": [1, 20, 5, 5], "w": [20, 18, 1, 1], "bias": False,
     "attributes": {}, "fill": _FILL, "variant": "conv1x1_gemm_tiled_reg"},
    {"name": "phase1d", "tier": "t", "x": [2, 10, 37], "w": [10, 6, 5], "bias": True,
     "attributes": {"strides": [3], "pads": [1, 2], "output_padding": [1]}, "fill": _FILL,
     "variant": "ncl1d_phase_tiled"},
    {"name": "grouped1d", "tier": "t", "x": [2, 6, 19], "w": [6, 2, 3], "bias": True,
     "attributes": {"group": 3, "strides": [2], "pads": [1, 1], "output_padding": [1]}, "fill": _FILL,
     "variant": "ncl1d_grouped_stride_phase"},
    {"name": "depthwise2d", "tier": "t", "x": [1, 8, 5, 7], "w": [8, 1, 4, 4], "bias": False,
     "attributes": {"group": 8, "strides": [2, 2], "pads": [1, 1, 1, 1]}, "fill": _FILL,
     "variant": "nchw2d_grouped_stride_phase"},
    {"name": "grouped3d", "tier": "t", "x": [1, 4, 3, 4, 5], "w": [4, 3, 3, 3, 3], "bias": True,
     "attributes": {"group": 2, "strides": [2, 3, 2], "pads": [1, 0, 1, 1, 0, 1]}, "fill": _FILL,
     "variant": "ncdhw3d_grouped_stride_phase"},
    {"name": "phase_gemm3d", "tier": "t", "x": [1, 9, 3, 4, 3], "w": [9, 10, 3, 2, 3], "bias": True,
     "attributes": {"strides": [2, 1, 3], "pads": [1, 0, 0, 0, 1, 2]}, "fill": _FILL, "variant": "phase_gemm"},
    {"name": "cols", "tier": "t", "x": [1, 20, 6, 6], "w": [20, 6, 3, 3], "bias": True,
     "attributes": {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, "fill": _FILL,
     "variant": "col2im_gemm_vec4"},
]


def uncompiled(sources: set[str], compiled: set[str]) -> set[str]:
    """The digests of `sources` missing from `compiled`, the digests a run's app/bridge.py recorded_compiles
    returned: what a crediting test was credited with but did not compile."""
    return {source_digest(s) for s in sources} - compiled


def _sources(geom, caps: DeviceCaps, variant=None, params=None, tables=None) -> set[str]:
    """What app/kernel.py compiles for a request (app/gpu.py launch: every piece's weight passes and passes,
    and the NaN/Inf check where the plan needs it); nothing where it refuses."""
    if geom.y_size == 0 or any(not caps.has(f) for f in contract.dtype_features()[geom.dtype]):
        return set()
    try:
        pieces = plan_pieces(geom, caps, lambda piece: planner.plan(piece, caps, variant, params, tables))
    except ConvTransposeError:
        return set()
    out = set()
    for _, plan in pieces:
        out.update(render(d.template, d.render_params) for d in (*plan.weight_passes, *plan.dispatches))
        if plan.finite_only:
            out.add(render(NONFINITE_CHECK, {"dtype": geom.dtype, "workgroup_size": _CHECK_WORKGROUP()}
                           | bindings_params(("data",), ("flag",), ("words",))))
    return out


@functools.cache
def _test_json_requests() -> tuple:
    requests = []
    for case in parse_case_file(TEST_JSON.read_text()):
        if case["expected_error"]:
            continue
        try:
            requests.append(validate(**case["inputs"], **case["attributes"])[0])
        except ConvTransposeError:
            continue
    return tuple(requests)


def case_file(caps: DeviceCaps, variants=(None,)) -> set[str]:
    """test.json's cases as the case runner runs them: the planner's choice (None) or each forced variant."""
    return {s for geom in _test_json_requests() for v in variants for s in _sources(geom, caps, v)}


def tuning_candidates(caps: DeviceCaps = CHROMIUM_SWIFTSHADER, cases=TUNING_CASES) -> set[str]:
    """What app/tuner.py tune_case compiles: every candidate of each case's grid, against no tuning table."""
    grids, out = tuner.grids(), set()
    for case in cases:
        geom, _ = validate(**make_inputs(case), **case["attributes"])
        variant = case.get("variant") or planner.plan(geom, caps, tables=tuner.NO_TABLES).variant
        if variant in grids and variant in tuner.tunable_variants():
            for params in tuner.candidates(variant, grids[variant], geom, caps):
                out |= _sources(geom, caps, variant, params, tuner.NO_TABLES)
    return out


def by_test() -> dict[str, set[str]]:
    """Crediting test file -> the sources it back-end compiles on SwiftShader."""
    return {"tests/test_node_host.py": case_file(NODE_SWIFTSHADER),
            "tests/test_browser_cases.py": case_file(CHROMIUM_SWIFTSHADER),
            "tests/test_browser_variants.py": case_file(CHROMIUM_SWIFTSHADER, sorted(VARIANTS)),
            "tests/test_tuning_candidates.py": tuning_candidates()}


def sources() -> dict[str, list[str]]:
    """Source -> the test files credited with compiling it."""
    out: dict[str, list[str]] = {}
    for test, compiled in by_test().items():
        for source in compiled:
            out.setdefault(source, []).append(test)
    return out
