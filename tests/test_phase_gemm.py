"""The stride-phase GEMMs' launch geometry in CPython: tile defaults as the H200 sweep set them, the split
reduction, refusals that name the broken invariant, and the sweep helper that forces the variant."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.planner import plan
from app.shapes import infer
from app.variants import phase_gemm
from tests.test_gpu_caps import h200_caps

ROOT = Path(__file__).resolve().parents[1]


def tiles(x, w, attrs=None, caps=None):
    return plan(infer(x, w, None, attrs or {}), caps or h200_caps(), "phase_gemm").tiles


def test_narrow_out_channels_get_64_wide_tiles_wide_ones_128():
    assert tiles((1, 128, 256, 256), (128, 64, 2, 2), {"strides": [2, 2]})["tn"] == 64
    wide = tiles((1, 256, 16, 16, 16), (256, 128, 2, 2, 2), {"strides": [2, 2, 2]})
    assert (wide["tm"], wide["tn"], wide["rm"], wide["rn"]) == (128, 128, 8, 8)  # 256 workgroups
    few = tiles((1, 1024, 32, 32), (1024, 512, 2, 2), {"strides": [2, 2]})
    assert (few["tm"], few["tn"]) == (64, 128)  # 128 x 128 would make only 128 workgroups


def test_few_outputs_with_a_long_reduction_split_it_in_one_dispatch():
    launch = plan(infer((1, 1024, 4, 4), (1024, 512, 4, 4), None, {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
                  h200_caps(), "phase_gemm")
    assert launch.tiles["ks"] > 1 and len(launch.dispatches) == 1 and len(launch.weight_passes) == 1
    # a short reduction is not split, however few the outputs
    assert tiles((1, 16, 4, 4), (16, 16, 2, 2), {"strides": [2, 2]})["ks"] == 1


def test_software_adapters_get_small_blocks():
    caps = h200_caps(architecture="swiftshader", is_fallback=True)
    assert tiles((1, 64, 9, 9), (64, 32, 4, 4), {"strides": [2, 2]}, caps) == dict(
        zip(phase_gemm.PARAMS, phase_gemm._CPU_SHAPE))


@pytest.mark.parametrize("change, words", [
    ({"tn": 48, "rn": 6}, "rn must be a multiple of 4"),
    ({"tm": 100}, "register blocks must divide the tile"),
    ({"tm": 128, "tn": 128, "rm": 1, "rn": 4}, "exceed the device's limit"),
    ({"tm": 128, "tn": 128, "tk": 64}, "workgroup memory"),
])
def test_tile_refusals_name_the_broken_invariant(change, words):
    geom = infer((1, 64, 9, 9), (64, 32, 4, 4), None, {"strides": [2, 2]})
    t = phase_gemm.default_tiles(geom, h200_caps()) | change
    assert words in phase_gemm.tiles_refusal(t, geom, h200_caps())


def test_the_sweep_helper_forces_the_variant_and_replaces_its_grid():
    grid = {"tm": [16], "ks": [1, 2]}
    out = subprocess.run([sys.executable, "tools/gpu/as_dtype.py", "float16", "--variant", "phase_gemm",
                          "--grid", json.dumps(grid)], cwd=ROOT, capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert {c["dtype"] for c in doc["cases"]} == {"float16"}
    assert {c["variant"] for c in doc["cases"]} == {"phase_gemm"}
    assert doc["tuning"]["grids"]["phase_gemm"] == grid
