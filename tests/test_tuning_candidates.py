"""The tuning grids' candidates against the float64 reference in the page, on SwiftShader. A file of its own:
SwiftShader compiling the candidates is most of a worker's run of it (docs/testing.md), and as its own file
the two-worker split (tests/conftest.py) hands it out apart from the ORT comparisons."""
import json

import pytest

from app.host.server import ROOT
from app.variants import VARIANTS
from tests.browser_session import run_python


TUNE_SMALL = """
import json
from app import get_kernel, tuner
kernel = await get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
fill = {"distribution": "uniform", "low": -1.0, "high": 1.0, "seed": 3}
cases = [
    {"name": "phase_gemm", "tier": "t", "x": [2, 12, 3, 3], "w": [12, 10, 3, 3], "bias": True,
     "attributes": {"strides": [2, 2], "pads": [1, 1, 0, 0]}, "fill": fill},
    {"name": "stride1", "tier": "t", "x": [1, 10, 5, 4], "w": [10, 12, 3, 2], "bias": True,
     "attributes": {"pads": [1, 0, 0, 1]}, "fill": fill, "variant": "stride1_implicit_gemm"},
    {"name": "one_by_one", "tier": "t", "x": [1, 20, 5, 5], "w": [20, 18, 1, 1], "bias": False,
     "attributes": {}, "fill": fill},
    {"name": "phase1d", "tier": "t", "x": [2, 10, 37], "w": [10, 6, 5], "bias": True,
     "attributes": {"strides": [3], "pads": [1, 2], "output_padding": [1]}, "fill": fill},
    {"name": "grouped1d", "tier": "t", "x": [2, 6, 19], "w": [6, 2, 3], "bias": True,
     "attributes": {"group": 3, "strides": [2], "pads": [1, 1], "output_padding": [1]}, "fill": fill},
    {"name": "depthwise2d", "tier": "t", "x": [1, 8, 5, 7], "w": [8, 1, 4, 4], "bias": False,
     "attributes": {"group": 8, "strides": [2, 2], "pads": [1, 1, 1, 1]}, "fill": fill},
    {"name": "grouped3d", "tier": "t", "x": [1, 4, 3, 4, 5], "w": [4, 3, 3, 3, 3], "bias": True,
     "attributes": {"group": 2, "strides": [2, 3, 2], "pads": [1, 0, 1, 1, 0, 1]}, "fill": fill},
    {"name": "phase_gemm3d", "tier": "t", "x": [1, 9, 3, 4, 3], "w": [9, 10, 3, 2, 3], "bias": True,
     "attributes": {"strides": [2, 1, 3], "pads": [1, 0, 0, 0, 1, 2]}, "fill": fill, "variant": "phase_gemm"},
]
table = await tuner.tune(kernel, cases, runs=1)
json.dumps(table)
"""


@pytest.mark.browser
def test_every_tuning_candidate_matches_the_reference_in_the_browser(page):
    """A tuned choice must never change results beyond tolerance: the tuner checks each candidate of each
    grid against the float64 reference (odd sizes, so tile edges and tails are hit) and rejects failures;
    here none may fail, and every grid was explored."""
    table = json.loads(run_python(page, TUNE_SMALL))
    assert table["rejected"] == []
    measured = {m["variant"]: len(m["medians"]) for m in table["measured"]}
    grids = json.loads((ROOT / "bench.json").read_text())["tuning"]["grids"]
    features = set(page.evaluate("async () => (await window.getKernel('webgpu-kernels/ai.onnx.ConvTranspose')).device().features"))
    # Grids of variants this device cannot run (subgroup matrices on SwiftShader) are explored on the GPU machine.
    runnable = {name for name in grids if set(VARIANTS[name].features) <= features}
    assert set(measured) == runnable
    assert all(n >= 8 for n in measured.values()), measured
