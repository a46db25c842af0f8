"""The tuning grids' candidates against the float64 reference in the page, on SwiftShader. A file of its own:
SwiftShader compiling the candidates is most of a worker's run of it (docs/testing.md), and as its own file
the two-worker split (tests/conftest.py) hands it out apart from the ORT comparisons."""
import json

import pytest

from app.host.case_runner import page_python
from app.host.server import ROOT
from app.variants import VARIANTS
from tests.browser_session import run_python
from tools.wgsl import credited


TUNE_SMALL = """
import json
from app import get_kernel, tuner
kernel = await get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
table = await tuner.tune(kernel, json.loads({cases!r}), runs=1)
json.dumps(table)
"""


@pytest.fixture(scope="module")
def tuned(page):
    """The table of tuning tools/wgsl/credited.py's TUNING_CASES, and the sha256 of every shader it compiled."""
    call = page_python(page)
    call("record_compiles")
    table = json.loads(run_python(page, TUNE_SMALL.format(cases=json.dumps(credited.TUNING_CASES))))
    return table, set(call("recorded_compiles"))


@pytest.mark.browser
def test_every_tuning_candidate_matches_the_reference_in_the_browser(page, tuned):
    """A tuned choice must never change results beyond tolerance: the tuner checks each candidate of each
    grid against the float64 reference (odd sizes, so tile edges and tails are hit) and rejects failures;
    here none may fail, and every grid was explored."""
    table = tuned[0]
    assert table["rejected"] == []
    # each case names the variant whose grid it explores (the planner's own choice is its cost model's)
    named = {f"{c['tier']}/{c['name']}/float32": c["variant"] for c in credited.TUNING_CASES}
    assert {m["case"]: m["variant"] for m in table["measured"]}.items() <= named.items()
    measured = {m["variant"]: len(m["medians"]) for m in table["measured"]}
    grids = json.loads((ROOT / "bench.json").read_text())["tuning"]["grids"]
    features = set(page.evaluate("async () => (await window.getKernel('webgpu-kernels/ai.onnx.ConvTranspose')).device().features"))
    # Grids of variants this device cannot run (subgroup matrices on SwiftShader) are explored on the GPU machine.
    runnable = {name for name in grids if set(VARIANTS[name].features) <= features}
    assert set(measured) == runnable
    assert all(n >= 8 for n in measured.values()), measured


@pytest.mark.browser
def test_compiles_every_shader_the_swiftshader_pass_leaves_to_it(tuned):
    """The SwiftShader back-end pass of tests/test_wgsl_compilers.py does not compile the candidates this run
    compiles (tools/wgsl/credited.py): it must compile every shader it is credited with."""
    missing = credited.uncompiled(credited.tuning_candidates(), tuned[1])
    assert not missing, f"{len(missing)} credited shader(s) not compiled, e.g. {sorted(missing)[:3]}"
